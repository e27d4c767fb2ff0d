"""A rank never outlives its run's supervisor: a daemon thread checks, once a second, that the
supervisor (known by pid and start time) still runs, and ends the rank when it does not.

Without it, a supervisor killed with SIGKILL leaves ranks training for days that no `stop` can
reach. The check reads one /proc entry a second: nothing a training step would notice.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from tuitrain.engine.rank_io import write_rank_record
from tuitrain.rundir.exits import EXIT_SUPERVISOR_GONE
from tuitrain.rundir.layout import SUPERVISOR_ENV, RunPaths
from tuitrain.rundir.process_tree import find, running

CHECK_SECONDS = 1.0


def parse_supervisor(value: str | None) -> tuple[int, float | None] | None:
    """"pid:start time" as the supervisor puts it in the ranks' environment."""
    if not value:
        return None
    pid, _, started = value.partition(":")
    try:
        return int(pid), (float(started) if started not in ("", "None") else None)
    except ValueError:
        return None


def _end_rank(run_dir: Path, rank: int, pid: int) -> None:
    print(f"[tuitrain] rank {rank}: the run's supervisor (pid {pid}) is gone; ending this rank "
          "(`tuitrain resume` continues from the latest checkpoint)", file=sys.stderr, flush=True)
    try:
        write_rank_record(RunPaths(run_dir), rank, EXIT_SUPERVISOR_GONE)
    except OSError:
        pass
    os._exit(EXIT_SUPERVISOR_GONE)


def watch_supervisor(run_dir: Path, rank: int, interval: float = CHECK_SECONDS) -> threading.Thread | None:
    """Start the watch (no-op when the rank was not started by a supervisor)."""
    parsed = parse_supervisor(os.environ.get(SUPERVISOR_ENV))
    if parsed is None:
        return None
    pid, started = parsed
    proc = find(pid, started)
    if proc is None:
        _end_rank(run_dir, rank, pid)

    def loop() -> None:
        while True:
            time.sleep(interval)
            if not running(proc):
                _end_rank(run_dir, rank, pid)

    thread = threading.Thread(target=loop, name="tuitrain-supervisor-watch", daemon=True)
    thread.start()
    return thread
