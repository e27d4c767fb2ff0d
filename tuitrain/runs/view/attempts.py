"""A restarted run's attempts as every viewer says them (`status`, `runs`, Home, the monitor's header, [notify] word of a
restart): which attempt of how many, when and why it restarted, and each earlier attempt's end. Pure: a run's typed
fields in (its restarts are run.json's `restarts`, written by tuitrain.runs.keeper.supervisor, checked when read),
words out."""

from __future__ import annotations

import time
from pathlib import Path

from tuitrain.rundir.record import RestartRecord
from tuitrain.rundir.run import RecordFields


def _clock(when: float | None) -> str:
    try:
        return time.strftime("%H:%M:%S", time.localtime(when)) if when is not None else "?"
    except (OverflowError, OSError, ValueError):  # a time this machine's local time cannot show
        return "?"


def _from(checkpoint: str | None) -> str:
    return f"from {Path(checkpoint).name}" if checkpoint else "from the beginning"


def attempts_of(run: RecordFields) -> tuple[int, int] | None:
    """(this attempt, at most) of a run that has restarted or waits to ("attempt 2/3"); None for one that has not.
    At most: the first, `[run] restarts`, and each restart a split batch began (which takes none of them)."""
    restarts = run.restarts
    if not restarts:
        return None
    now = restarts[-1].get("attempt", len(restarts) + 1)
    extra = sum(1 for r in restarts if not r.get("counted", True))
    allowed = run.restarts_allowed
    most = 1 + (len(restarts) if allowed is None else allowed) + extra
    return now, max(most, now)


def attempt_label(run: RecordFields) -> str | None:
    """"attempt 2/3" (lists of runs), or None for a run that never restarted."""
    found = attempts_of(run)
    return f"attempt {found[0]}/{found[1]}" if found is not None else None


def attempt_line(run: RecordFields, now: float | None = None) -> str | None:
    """"attempt 2/3, restarted 14:02:07 from checkpoint-20 after rank 1 (pid 4711) exited with code 1: RuntimeError: …"
    — or, while the keeper waits, "attempt 2/3 restarts at 14:02:07 from checkpoint-20 after …"; None for a run that
    never restarted."""
    found = attempts_of(run)
    if found is None:
        return None
    last = run.restarts[-1]
    now = time.time() if now is None else now
    at = last.get("at")
    waiting = run.attempt < found[0] and at is not None and at > now
    when = f"restarts at {_clock(at)}" if waiting else f"restarted {_clock(at)}"
    split = ""
    if "batch" in last:
        size, steps = last["batch"]["per_device_train_batch_size"], last["batch"]["gradient_accumulation_steps"]
        split = f" with per_device_train_batch_size {size[0]} → {size[1]}, gradient_accumulation_steps {steps[0]} → {steps[1]}"
    return f"attempt {found[0]}/{found[1]}{'' if waiting else ','} {when} {_from(last.get('resume_from'))}{split} after {_cause(last)}"


def _cause(entry: RestartRecord) -> str:
    """An attempt's end as its restart says it: its error, with its failed rank where the error does not name it."""
    error = entry.get("error") or entry.get("status") or "?"
    rank = entry.get("failed_rank")
    return f"rank {rank}: {error}" if rank is not None and not error.startswith(f"rank {rank}") else error


def earlier_lines(run: RecordFields) -> list[str]:
    """Each earlier attempt's end, oldest first: "attempt 1 (14:00:02–14:01:55) failed: rank 1 … · checkpoint-30
    passed over as damaged (…)"."""
    lines = []
    started = run.started
    for entry in run.restarts:
        number = entry.get("attempt", 2) - 1
        line = f"attempt {number} ({_clock(started)}–{_clock(entry.get('ended'))}) {entry.get('status') or '?'}: {_cause(entry)}"
        if entry.get("skipped"):
            line += f" · passed over as damaged: {', '.join(entry['skipped'])}"
        lines.append(line)
        started = entry.get("at")
    return lines
