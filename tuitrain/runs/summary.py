"""One run in full: the record, progress from events, checkpoints, and a failed rank's traceback."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tuitrain.runs.checkpoints import list_checkpoints
from tuitrain.runs.events import progress, read_events
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.process_tree import alive
from tuitrain.runs.record import FINAL_STATUSES

TAIL_BYTES = 64 * 1024


def last_traceback(log: Path, max_lines: int = 25) -> list[str]:
    """The last traceback in a rank log (read from the end, never the whole file)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            handle.seek(max(0, end - TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines = text.replace("\r", "\n").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if starts:
        block = lines[starts[-1]:]
        return block if len(block) <= max_lines else block[:3] + ["  ..."] + block[-(max_lines - 4):]
    return [line for line in lines if line.strip()][-min(max_lines, 10):]


def supervisor_lost(record: dict[str, Any]) -> bool:
    """A run whose supervisor is gone but whose record never reached an end (killed -9, reboot)."""
    pid = (record.get("pids") or {}).get("supervisor")
    return record["status"] not in FINAL_STATUSES and pid is not None and not alive(pid)


def run_summary(paths: RunPaths, record: dict[str, Any], with_checkpoints: bool = True) -> dict[str, Any]:
    summary = dict(record)
    summary["run_dir"] = str(paths.root)
    summary["progress"] = progress(read_events(paths.events))
    if record.get("max_steps") and not summary["progress"].get("max_steps"):
        summary["progress"]["max_steps"] = record["max_steps"]
    end = record.get("ended") or time.time()
    summary["duration"] = end - record["started"] if record.get("started") else None
    summary["supervisor_lost"] = supervisor_lost(record)
    if with_checkpoints and record.get("output_dir"):
        summary["checkpoints"] = [c.to_dict() for c in list_checkpoints(Path(record["output_dir"]))]
    if record.get("status") == "failed":
        rank = record.get("failed_rank")
        log = paths.rank_log(rank) if rank is not None else paths.launcher_log
        summary["traceback"] = last_traceback(log)
        summary["traceback_file"] = str(log)
    return summary
