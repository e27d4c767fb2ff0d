"""run.json: the record of one run. Written atomically; its status only moves forward."""

from __future__ import annotations

import time
from typing import Any

from tuitrain.atomic import read_json, write_json_atomic
from tuitrain.runs.layout import RunPaths

STATUS_ORDER = ("planned", "starting", "running", "stopping", "finished", "stopped", "failed")
FINAL_STATUSES = frozenset({"finished", "stopped", "failed"})


class RunRecordError(Exception):
    """A run.json that cannot be read or a status change that would move backwards."""


def now() -> float:
    return time.time()


def new_record(run_id: str, profile_name: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": run_id,
        "profile": profile_name,
        "status": "starting",
        "created": now(),
        "started": None,
        "ended": None,
        "argv": [],
        "env": {},
        "num_processes": 1,
        "num_machines": 1,
        "pids": {},
        "exit_codes": {},
        "failed_rank": None,
        "error": None,
        "parent": None,
        "resume_from": None,
        "output_dir": None,
        "main_process_port": None,
    }
    record.update(fields)
    return record


def read_record(paths: RunPaths) -> dict[str, Any]:
    try:
        return read_json(paths.record)
    except FileNotFoundError as exc:
        raise RunRecordError(f"{paths.root}: not a run directory (no run.json)") from exc
    except ValueError as exc:
        raise RunRecordError(f"{paths.record}: unreadable ({exc})") from exc


def can_move(current: str, new: str) -> bool:
    if current == new:
        return True
    if current in FINAL_STATUSES:
        return False
    return STATUS_ORDER.index(new) > STATUS_ORDER.index(current)


def update_record(paths: RunPaths, **fields: Any) -> dict[str, Any]:
    """Merge fields into run.json; a status that would move backwards is ignored, not written."""
    record = read_record(paths)
    status = fields.get("status")
    if status is not None and not can_move(record["status"], status):
        fields = {k: v for k, v in fields.items() if k != "status"}
    record.update(fields)
    write_json_atomic(paths.record, record)
    return record


def write_record(paths: RunPaths, record: dict[str, Any]) -> None:
    write_json_atomic(paths.record, record)
