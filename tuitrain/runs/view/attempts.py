"""A restarted run's attempts as every viewer says them (`status`, `runs`, Home, the monitor's header, [notify] word of a
restart): which attempt of how many, when and why it restarted, and each earlier attempt's end. Pure: a record in,
words out (its restarts are run.json's `restarts`, written by tuitrain.runs.keeper.supervisor). A record read here is
checked (rundir.record); another workstation's rows are not, so nothing here trusts a value's kind or size."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping


def _clock(when: Any) -> str:
    try:
        return time.strftime("%H:%M:%S", time.localtime(float(when)))
    except (TypeError, ValueError, OverflowError, OSError):  # not a time, or one local time cannot show
        return "?"


def _whole(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**20 else default


def _from(checkpoint: Any) -> str:
    return f"from {Path(str(checkpoint)).name}" if checkpoint else "from the beginning"


def _restarts(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    restarts = record.get("restarts")
    return [r for r in restarts if isinstance(r, Mapping)] if isinstance(restarts, list) else []


def attempts_of(record: Mapping[str, Any]) -> tuple[int, int] | None:
    """(this attempt, at most) of a run that has restarted or waits to ("attempt 2/3"); None for one that has not.
    At most: the first, `[run] restarts`, and each restart a split batch began (which takes none of them)."""
    restarts = _restarts(record)
    if not restarts:
        return None
    now = _whole(restarts[-1].get("attempt"), len(restarts) + 1)
    extra = sum(1 for r in restarts if not r.get("counted", True))
    most = 1 + _whole(record.get("restarts_allowed"), len(restarts)) + extra
    return now, max(most, now)


def attempt_label(record: Mapping[str, Any]) -> str | None:
    """"attempt 2/3" (lists of runs), or None for a run that never restarted."""
    found = attempts_of(record)
    return f"attempt {found[0]}/{found[1]}" if found is not None else None


def attempt_line(record: Mapping[str, Any], now: float | None = None) -> str | None:
    """"attempt 2/3, restarted 14:02:07 from checkpoint-20 after rank 1 (pid 4711) exited with code 1: RuntimeError: …"
    — or, while the keeper waits, "attempt 2/3 restarts at 14:02:07 from checkpoint-20 after …"; None for a run that
    never restarted."""
    found = attempts_of(record)
    if found is None:
        return None
    last = _restarts(record)[-1]
    now = time.time() if now is None else now
    at = last.get("at")
    waiting = _whole(record.get("attempt"), 1) < found[0] and isinstance(at, (int, float)) and at > now
    when = f"restarts at {_clock(last.get('at'))}" if waiting else f"restarted {_clock(last.get('at'))}"
    batch = last.get("batch")
    split = ""
    if isinstance(batch, Mapping):
        size, steps = batch.get("per_device_train_batch_size") or [], batch.get("gradient_accumulation_steps") or []
        if len(size) == 2 and len(steps) == 2:
            split = f" with per_device_train_batch_size {size[0]} → {size[1]}, gradient_accumulation_steps {steps[0]} → {steps[1]}"
    return f"attempt {found[0]}/{found[1]}{'' if waiting else ','} {when} {_from(last.get('resume_from'))}{split} after {_cause(last)}"


def _cause(entry: Mapping[str, Any]) -> str:
    """An attempt's end as its restart says it: its error, with its failed rank where the error does not name it."""
    error = str(entry.get("error") or entry.get("status") or "?")
    rank = entry.get("failed_rank")
    return f"rank {rank}: {error}" if rank is not None and not error.startswith(f"rank {rank}") else error


def earlier_lines(record: Mapping[str, Any]) -> list[str]:
    """Each earlier attempt's end, oldest first: "attempt 1 (14:00:02–14:01:55) failed: rank 1 … · checkpoint-30
    passed over as damaged (…)"."""
    lines = []
    started: Any = record.get("started")
    for entry in _restarts(record):
        number = _whole(entry.get("attempt"), 2) - 1
        line = f"attempt {number} ({_clock(started)}–{_clock(entry.get('ended'))}) {entry.get('status') or '?'}: {_cause(entry)}"
        skipped = entry.get("skipped") or []
        if skipped:
            line += f" · passed over as damaged: {', '.join(map(str, skipped))}"
        lines.append(line)
        started = entry.get("at")
    return lines
