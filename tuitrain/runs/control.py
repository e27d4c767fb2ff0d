"""Requests a viewer sends to a live run: save now, evaluate now, stop (graceful or now)."""

from __future__ import annotations

import time

from tuitrain.errors import TuitrainError
from tuitrain.rundir.layout import CONTROL_EVALUATE, CONTROL_SAVE, CONTROL_STOP, CONTROL_TERMINATE, KILL_REQUEST, RunPaths
from tuitrain.rundir.process_tree import KILL_GRACE_SECONDS, end_processes
from tuitrain.rundir.record import RunRecord, has_ended, read_record, record_end
from tuitrain.rundir.run import Fields
from tuitrain.runs.liveness import live_processes, settle_lost, supervisor_gone
from tuitrain.runs.run_owner import others_run_refusal

REQUESTS = {"save": CONTROL_SAVE, "evaluate": CONTROL_EVALUATE, "stop": CONTROL_STOP, "terminate": CONTROL_TERMINATE}


class ControlError(TuitrainError):
    pass


def request(paths: RunPaths, what: str) -> str:
    """Drop a request file; the engine (save/evaluate/stop) or the supervisor (terminate) acts on it.
    A run whose supervisor is gone has nobody to act: `terminate` then ends its recorded
    processes here, anything else is refused with what to do instead. Returns what was done."""
    refusal = others_run_refusal(paths, "stop" if what == "terminate" else what)
    if refusal:
        raise ControlError(refusal)
    record = settle_lost(paths, read_record(paths))
    if has_ended(record):
        raise ControlError(f"run {paths.id} has already ended ({Fields(record).status}); nothing to {what}")
    if supervisor_gone(record):
        return _without_supervisor(paths, record, what)
    paths.control.mkdir(exist_ok=True)
    paths.control_request(REQUESTS[what]).touch()
    return "asked"


def _without_supervisor(paths: RunPaths, record: RunRecord, what: str) -> str:
    processes = live_processes(record)
    if what != "terminate":
        raise ControlError(f"run {paths.id} lost its supervisor; nobody can {what} it. Its processes "
                           f"({', '.join(f'{r} pid {p.pid}' for r, p in processes.items())}) end within seconds; "
                           f"`tuitrain stop --now {paths.id}` ends them now")
    killed = end_processes(processes.values(), grace=KILL_GRACE_SECONDS)
    record_end(paths, status="killed", ended=time.time(),
               error=f"ended by {KILL_REQUEST} after its supervisor was lost ({len(processes)} process(es) ended"
                     + (f", {len(killed)} killed" if killed else "") + ")")
    return "ended"
