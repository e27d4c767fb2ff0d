"""Dropping a queued run (`tuitrain cancel`): who may, and how. Only the user who queued it; the run's waiting
supervisor records the end (`cancelled`) when it sees `control/cancel`; a supervisor already gone gets it
recorded here."""

from __future__ import annotations

import time

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord, has_ended, read_record, record_end
from tuitrain.rundir.run import Run
from tuitrain.runs.control import ControlError
from tuitrain.runs.liveness import supervisor_gone
from tuitrain.runs.queue.entries import drop, folder_of
from tuitrain.runs.run_owner import others_run_refusal

CANCEL_WAIT_SECONDS = 15.0


def cancel_refusal(paths: RunPaths, record: RunRecord, verb: str = "cancel") -> str | None:
    """Why this user may not cancel this run (or `verb` it: move it in the queue), in one line; None when they
    may."""
    run = Run(paths, record)
    status = run.status
    if run.final:
        return f"run {paths.id} already ended ({status}); there is nothing to {verb}"
    if status != "queued":
        return f"run {paths.id} has started ({status}); `tuitrain stop {paths.id}` stops it"
    return others_run_refusal(paths, verb)


def cancel(paths: RunPaths, timeout: float = CANCEL_WAIT_SECONDS) -> RunRecord:
    """Ask the run's supervisor to leave the queue and wait for the recorded end; the final record."""
    record = read_record(paths)
    refusal = cancel_refusal(paths, record)
    if refusal:
        raise ControlError(refusal)
    paths.control.mkdir(exist_ok=True)
    paths.control_request("cancel").touch()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = read_record(paths)
        if has_ended(record):
            return record
        if supervisor_gone(record):
            break
        time.sleep(0.05)
    run = Run(paths, record)
    if run.status == "running":
        raise ControlError(f"run {paths.id} started before the cancel was seen; `tuitrain stop {paths.id}` stops it")
    drop(folder_of(run), paths.root)
    return record_end(paths, status="cancelled", ended=time.time(),
                      error="cancelled while queued (`tuitrain cancel`; its supervisor was gone); it never started")
