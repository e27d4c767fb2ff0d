"""run.json: the record of one run. Written atomically; its status only moves forward."""

from __future__ import annotations

import errno
import time
from typing import Any

from tuitrain.atomic import read_json, write_json_atomic
from tuitrain.runs.layout import RunPaths

STATUS_ORDER = ("planned", "queued", "starting", "running", "stopping", "finished", "stopped", "killed", "failed", "lost",
                "cancelled")
# queued: its supervisor waits for its turn (tuitrain.runs.queue_wait); cancelled: dropped while queued, it never
# started; stopped: ended by a stop that saved a checkpoint; killed: ended by `stop --now` (nothing saved);
# lost: its supervisor died without recording an end (found by a viewer once no process is left).
FINAL_STATUSES = frozenset({"finished", "stopped", "killed", "failed", "lost", "cancelled"})


class RunRecordError(Exception):
    """A run.json that cannot be read or a status change that would move backwards."""


def now() -> float:
    return time.time()


# What the record of one machine's part of a run (an SSH machine's, a Slurm node's) takes from the run's own.
INHERITED_KEYS = ("num_processes", "num_machines", "main_process_port", "output_dir", "parent", "resume_from", "max_steps",
                  "accelerator")


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
        "error": None,  # why the run ended, in one line, when it did not finish
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


def record_end(paths: RunPaths, **fields: Any) -> dict[str, Any]:
    """`update_record` for the run's last words: on a full disk it gives up the space reserve
    (made at the run's start) so that how the run ended is still written."""
    try:
        record = update_record(paths, **fields)
    except OSError as exc:
        if exc.errno != errno.ENOSPC or not paths.space_reserve.exists():
            raise
        paths.space_reserve.unlink()
        return update_record(paths, **fields)
    if record.get("status") in FINAL_STATUSES:
        try:
            paths.space_reserve.unlink()
        except OSError:
            pass
    return record


SPACE_RESERVE_BYTES = 256 * 1024


def reserve_space(paths: RunPaths) -> None:
    """Set aside a little disk for the run's last words (see `record_end`)."""
    try:
        with open(paths.space_reserve, "wb") as handle:
            handle.write(b"\0" * SPACE_RESERVE_BYTES)
    except OSError:
        pass  # no room even for this: the record is written as usual, or fails loudly



def write_record(paths: RunPaths, record: dict[str, Any]) -> None:
    write_json_atomic(paths.record, record)
