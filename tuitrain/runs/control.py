"""Requests a viewer sends to a live run: save now, evaluate now, stop (graceful or now)."""

from __future__ import annotations

from tuitrain.runs.layout import CONTROL_EVALUATE, CONTROL_SAVE, CONTROL_STOP, CONTROL_TERMINATE, RunPaths
from tuitrain.runs.record import FINAL_STATUSES, read_record

REQUESTS = {"save": CONTROL_SAVE, "evaluate": CONTROL_EVALUATE, "stop": CONTROL_STOP, "terminate": CONTROL_TERMINATE}


class ControlError(Exception):
    pass


def request(paths: RunPaths, what: str) -> None:
    """Drop a request file; the engine (save/evaluate/stop) or the supervisor (terminate) acts on it."""
    record = read_record(paths)
    if record["status"] in FINAL_STATUSES:
        raise ControlError(f"run {paths.id} has already ended ({record['status']}); nothing to {what}")
    paths.control.mkdir(exist_ok=True)
    paths.control_request(REQUESTS[what]).touch()
