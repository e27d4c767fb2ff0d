"""A queued run's supervisor waiting for its turn (`wait_turn`), before it launches the run as any supervisor does.

It writes itself into run.json and its queue entry (so a viewer sees a live queued run, and `lost` once it is
killed), then asks `runs.queue_rule.verdict` under the queue's lock. Cheap while nothing moves: a full look is
taken when the queue folder or a dependency's run.json changed, when GPUs are to be read (every
GPU_POLL_SECONDS), and every FULL_LOOK_SECONDS in any case (a supervisor of another entry may have died)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

from tuitrain.runs.layout import RunPaths
from tuitrain.runs.process_tree import identity
from tuitrain.runs.queue import Entry, entry_of, live_entries, locked, queue_dir, read_entries, remove_entry, update_entry
from tuitrain.runs.queue_rule import Verdict, verdict
from tuitrain.runs.record import update_record

POLL_SECONDS = 0.25
GPU_POLL_SECONDS = 2.0
FULL_LOOK_SECONDS = 5.0
CANCEL_REQUESTS = ("cancel", "stop", "terminate")  # `tuitrain cancel`, and `stop` (with or without --now)


def log(message: str) -> None:
    print(f"[tuitrain queue {time.strftime('%H:%M:%S')}] {message}", file=sys.stdout, flush=True)


def folder_of(record: dict[str, Any]) -> Path:
    return Path((record.get("queue") or {}).get("dir") or queue_dir())


def cancel_request(paths: RunPaths) -> str | None:
    """Which control file asks a queued run to leave the queue, if any."""
    return next((name for name in CANCEL_REQUESTS if paths.control_request(name).exists()), None)


def _stamp(paths: list[Path]) -> tuple[Any, ...]:
    stamps: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
            stamps.append((st.st_mtime_ns, st.st_ino))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def gpu_reader() -> Callable[[], Any]:
    """Reads every GPU (honouring $TUITRAIN_NVML_TABLE, as the planner does)."""
    from tuitrain.hardware.devices import discover
    from tuitrain.hardware.recorded import library_from_env

    return lambda: discover(library_from_env(os.environ)).gpus


def announce(paths: RunPaths) -> dict[str, Any]:
    """Record the waiting supervisor, as the running one records itself (viewers tell live from lost by it)."""
    me = identity(os.getpid())
    return update_record(paths, processes={"supervisor": me}, pids={"supervisor": os.getpid(), "ranks": {}})


class _Signalled:
    def __init__(self) -> None:
        self.name: str | None = None
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on)

    def _on(self, signum: int, _frame: Any) -> None:
        self.name = signal.Signals(signum).name

    def restore(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)


def wait_turn(paths: RunPaths, record: dict[str, Any], poll: float = POLL_SECONDS) -> tuple[str, str] | None:
    """Block until the run may start (None: its entry now holds its GPUs) or never will ((status, why))."""
    folder = folder_of(record)
    me = identity(os.getpid())
    signalled = _Signalled()
    read_gpus = gpu_reader()
    gpus_at, gpus_seen = 0.0, None
    looked_at, last_stamp = 0.0, None
    said: tuple[str, ...] | None = None
    try:
        while True:
            asked = cancel_request(paths)
            if asked or signalled.name:
                with locked(folder):
                    mine = entry_of(paths.root, read_entries(folder))
                    if mine is not None:
                        remove_entry(folder, mine)
                how = f"`tuitrain {asked}`" if asked else signalled.name
                return "cancelled", f"cancelled while queued ({how}); it never started"
            if not paths.record.exists():
                return "cancelled", "its run directory was removed while it was queued"
            now = time.monotonic()
            deps = [Path(d.get("run_dir", "")) / "run.json" for d in (record.get("queue") or {}).get("after") or ()]
            stamp = _stamp([folder, *deps])
            gpus_due = bool((record.get("queue") or {}).get("gpus")) and now - gpus_at >= GPU_POLL_SECONDS
            if stamp == last_stamp and not gpus_due and now - looked_at < FULL_LOOK_SECONDS:
                time.sleep(poll)
                continue
            with locked(folder):
                entries = live_entries(folder)
                mine = entry_of(paths.root, entries)
                if mine is None:
                    return "cancelled", f"its entry in the queue folder {folder} was removed; it never started"
                if mine.supervisor != me:
                    mine = update_entry(folder, mine, supervisor=me)
                if gpus_due:
                    gpus_at, gpus_seen = now, None

                def gpus() -> Any:
                    nonlocal gpus_seen
                    if gpus_seen is None:
                        gpus_seen = read_gpus()
                    return gpus_seen

                decided = verdict(mine, entries, gpus)
                if decided.start:
                    update_entry(folder, mine, state="started", started=time.time())
                    log("its turn: starting")
                    return None
                if decided.end is not None:
                    remove_entry(folder, mine)
                    return decided.end
                last_stamp, looked_at = _stamp([folder, *deps]), now
            if decided.waits != said:
                log("waits for: " + "; ".join(decided.waits))
                said = decided.waits
            time.sleep(poll)
    finally:
        signalled.restore()


def leave_queue(record: dict[str, Any], paths: RunPaths) -> None:
    """At the run's end: its entry goes, and its GPUs with it."""
    if not record.get("queue"):
        return
    folder = folder_of(record)
    with locked(folder):
        mine: Entry | None = entry_of(paths.root, read_entries(folder))
        if mine is not None:
            remove_entry(folder, mine)


__all__ = ["Verdict", "announce", "leave_queue", "wait_turn"]
