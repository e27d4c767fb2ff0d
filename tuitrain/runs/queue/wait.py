"""A queued run's supervisor waiting for its turn (`wait_turn`), before it launches the run as any supervisor does.

It writes itself into run.json and its queue entry (so a viewer sees a live queued run, and `lost` once it is
killed), then asks `runs.queue.rule.verdict` under the queue's lock. Between looks it sleeps until the queue
folder, a dependency's run directory or its control/ changes, or a signal comes (`runs.queue.wakeup.Wakeup`), and
at most GPU_POLL_SECONDS (a run whose turn waits on its GPUs' state) or FULL_LOOK_SECONDS (any run)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from tuitrain.rundir.layout import CONTROL_DROP_SWEEP, CONTROL_HOLD, RunPaths
from tuitrain.rundir.process_tree import identity
from tuitrain.rundir.record import QueueRecord, RunRecord, Status, read_record, update_record
from tuitrain.rundir.run import Run
from tuitrain.runs.queue.entries import (
    DAMAGED_SUFFIX,
    Entry,
    damaged_entry_of,
    ensure_queue_dir,
    entry_of,
    folder_of,
    live_entries,
    locked,
    read_entries,
    remove_entry,
    update_entry,
)
from tuitrain.runs.queue.rule import Verdict, verdict
from tuitrain.runs.queue.wakeup import Wakeup

GPU_POLL_SECONDS = 2.0  # NVML has no events: a run waiting for GPUs reads them this often
FULL_LOOK_SECONDS = 10.0  # and any run looks again this often (a supervisor of another entry may have died)
CANCEL_REQUESTS = {"cancel": "`tuitrain cancel`", "stop": "`tuitrain stop`", "terminate": "`tuitrain stop --now`",
                   CONTROL_DROP_SWEEP: "its sweep was interrupted while being queued"}  # each leaves the queue


def log(message: str) -> None:
    print(f"[tuitrain queue {time.strftime('%H:%M:%S')}] {message}", file=sys.stdout, flush=True)


def cancel_request(paths: RunPaths) -> str | None:
    """Which control file asks a queued run to leave the queue, if any."""
    return next((name for name in CANCEL_REQUESTS if paths.control_request(name).exists()), None)


def gpu_reader(run_dirs: Callable[[], Iterable[str | Path]]) -> Callable[[], Any]:
    """Reads every GPU (honouring $TUITRAIN_NVML_TABLE, as the planner does), each process named by the run and
    rank it belongs to where it is one of a run beside `run_dirs()` (the queue's entries: `runs.view.owners.with_owners`)."""
    from tuitrain.hardware.devices import discover
    from tuitrain.hardware.recorded import library_from_env
    from tuitrain.runs.view.owners import with_owners

    return lambda: with_owners(discover(library_from_env(os.environ)).gpus, run_dirs())


def announce(paths: RunPaths) -> RunRecord:
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


def take_chosen(paths: RunPaths, decided: Verdict, gpus: Any) -> None:
    """`gpus = N`: the GPUs the queue chose become the run's (CUDA_VISIBLE_DEVICES in the record's env, which the
    supervisor launches with) and are recorded with why (`queue.chosen`, which `tuitrain status` shows)."""
    from tuitrain.hardware.mapping import map_devices

    run = Run(paths, read_record(paths))
    env = dict(run.env)
    mapping = map_devices(gpus, [str(g) for g in decided.chosen], env.get("CUDA_DEVICE_ORDER") or "PCI_BUS_ID")
    env.update(mapping.env)
    queue: QueueRecord = {**run.queue, "gpus": list(decided.chosen),
             "chosen": {"gpus": list(decided.chosen), "why": decided.why, "at": time.time()}}
    update_record(paths, env=env, queue=queue)


def wait_turn(paths: RunPaths, record: RunRecord) -> tuple[Status, str] | None:
    """Block until the run may start (None: its entry now holds its GPUs) or never will ((status, why))."""
    run = Run(paths, record)
    folder, queue = folder_of(run), run.queue
    me = identity(os.getpid())
    signalled = _Signalled()
    ensure_queue_dir(folder)
    watch = Wakeup([folder, paths.control, *(Path(d.get("run_dir", "")) for d in queue.get("after") or ())])
    seen: list[str] = [str(paths.root)]  # this run's and the queue's run directories, for who holds a GPU
    read_gpus = gpu_reader(lambda: seen)
    said: tuple[str, ...] | None = None
    try:
        while True:
            asked = cancel_request(paths)
            if asked or signalled.name:
                with locked(folder):
                    mine = entry_of(paths.root, read_entries(folder))
                    if mine is not None:
                        remove_entry(folder, mine)
                how = CANCEL_REQUESTS[asked] if asked else signalled.name
                return "cancelled", f"cancelled while queued ({how}); it never started"
            if paths.control_request(CONTROL_HOLD).exists():  # its sweep is still being queued
                watch.wait(FULL_LOOK_SECONDS)
                continue
            if not paths.record.exists():
                return "cancelled", "its run directory was removed while it was queued"
            with locked(folder):
                entries = live_entries(folder)
                mine = entry_of(paths.root, entries)
                if mine is None:
                    return gone_entry(folder, paths)
                if mine.supervisor != me:
                    mine = update_entry(folder, mine, supervisor=me)
                seen[1:] = [e.run_dir for e in entries]
                decided = verdict(mine, entries, read_gpus)
                if decided.start:
                    if decided.chosen:
                        take_chosen(paths, decided, read_gpus())
                    update_entry(folder, mine, state="started", started=time.time(),
                                 gpus=decided.chosen or mine.gpus)
                    log("its turn: starting" + (f" on {decided.why}" if decided.chosen else ""))
                    return None
                if decided.end is not None:
                    remove_entry(folder, mine)
                    return decided.end
            if decided.waits != said:
                log("waits for: " + "; ".join(decided.waits))
                said = decided.waits
            watch.wait(GPU_POLL_SECONDS if decided.read_gpus else FULL_LOOK_SECONDS)
    finally:
        watch.close()
        signalled.restore()


def gone_entry(folder: Path, paths: RunPaths) -> tuple[Status, str]:
    """How a queued run ends whose entry is no longer in the line (call under `locked`): damaged (set aside, then
    removed once its cause is in the record), or removed."""
    damaged = damaged_entry_of(folder, paths.id)
    if damaged is None:
        return "cancelled", f"its entry in the queue folder {folder} was removed; it never started"
    try:
        (folder / damaged.name).unlink()  # its cause is now the run's: the record keeps it
    except OSError:
        pass
    return "failed", (f"its queue entry {folder / damaged.name.removesuffix(DAMAGED_SUFFIX)} was damaged "
                      f"({damaged.reason}); it never started: queue it again (`tuitrain run PROFILE --queue`)")


def leave_queue(record: RunRecord, paths: RunPaths) -> None:
    """At the run's end: its entry goes, and its GPUs with it."""
    run = Run(paths, record)
    if not run.queue:
        return
    folder = folder_of(run)
    with locked(folder):
        mine: Entry | None = entry_of(paths.root, read_entries(folder))
        if mine is not None:
            remove_entry(folder, mine)


__all__ = ["Verdict", "announce", "leave_queue", "wait_turn"]
