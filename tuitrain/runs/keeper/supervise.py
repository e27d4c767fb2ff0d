"""`python -m tuitrain.runs.keeper.supervise RUN_DIR [WORKERS]`: the detached process that watches one run (started by
tuitrain.runs.start.new_run.spawn_supervisor). A queued run's supervisor first waits for its turn
(tuitrain.runs.queue.wait). Then the run's keeper (tuitrain.runs.keeper.supervisor.Supervisor) keeps the workers its
backend named: this machine's ranks under one `accelerate launch` (`ranks`, the default), or the node agents of a run on
several machines (`machines`: tuitrain.runs.keeper.machine_links.MachineLinks). Choosing here, above both, keeps either
from importing the other. Once the end is recorded, it sends word of it ([notify],
tuitrain.notify)."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import read_record, record_end
from tuitrain.rundir.run import Run
from tuitrain.runs.keeper.local_launch import LocalLaunch
from tuitrain.runs.keeper.machine_links import MachineLinks
from tuitrain.runs.keeper.supervisor import Supervisor, run_supervisor

WORKERS = {"ranks": LocalLaunch, "machines": MachineLinks}  # what a keeper keeps, as the backend that starts it names it


def _ended_in_queue(paths: RunPaths) -> str | None:
    """For a queued run: wait for its turn. The status it ended with when it never started, else None."""
    from tuitrain.runs.queue.wait import announce, wait_turn

    record = announce(paths)
    ended = wait_turn(paths, record)
    if ended is None:
        return None
    status, why = ended
    record_end(paths, status=status, ended=time.time(), error=why)
    print(f"[tuitrain queue] {status}: {why}", flush=True)
    return status


def _supervise(paths: RunPaths, workers: str) -> str:
    try:
        record = read_record(paths)
        if Run(paths, record).status == "queued":
            ended = _ended_in_queue(paths)
            if ended is not None:
                return ended
        supervisor = Supervisor(paths, WORKERS[workers])
    except BaseException as exc:  # noqa: BLE001 — an unreadable record: say so where the run's viewers look
        traceback.print_exc()
        try:
            record_end(paths, status="failed", ended=time.time(), error=f"the supervisor could not start: {exc}")
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        return "failed"
    return run_supervisor(supervisor)


def _after_the_end(paths: RunPaths) -> None:
    """The run's queue entry goes (its GPUs are free), then word of the end goes out: never raises."""
    try:
        record = read_record(paths)
    except Exception:  # noqa: BLE001 — the run directory was removed: nothing to tell
        return
    try:
        from tuitrain.runs.queue.wait import leave_queue

        leave_queue(record, paths)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    try:
        from tuitrain.notify import RunWord, notify_end
        from tuitrain.rundir.events import progress, read_events

        notify_end(RunWord.of(Run(paths, record)), lambda: progress(read_events(paths.events)), str(paths.root))
    except Exception:  # noqa: BLE001
        traceback.print_exc()


def supervise(run_dir: Path, workers: str = "ranks") -> int:
    paths = RunPaths(run_dir)
    status = _supervise(paths, workers)
    _after_the_end(paths)
    return 0 if status in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1]), *sys.argv[2:3]))
