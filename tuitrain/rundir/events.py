"""Reading events.jsonl and summarising a run's progress (what `runs`, `status`, the follower
and the app show): `fold_progress` is the one rule that turns events into progress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, TypedDict

from tuitrain.rundir.json_shape import Within, problem
from tuitrain.rundir.record import Time

Step = Annotated[int, Within(0, 2**62, "a step")]


class _EventKind(TypedDict):
    event: str


class Event(_EventKind, total=False):
    """What every reader of an event relies on (engine.events writes it): its kind, when, at which step. The rest of a
    line is the run's own words and figures (a metric, a script's reported value, "nan" for a non-finite one), which
    readers take as they come."""

    time: Time
    step: Step | None
    max_steps: Step | None


def parse_event(line: bytes | str) -> dict[str, Any] | None:
    """One line of events.jsonl as an event, checked against `Event`; None for a line that is not one (torn, damaged,
    of a kind no reader can take), as if it had not been written."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if problem(event, Event) is None else None


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            if line.endswith("\n"):
                event = parse_event(line)
                if event is not None:
                    yield event


def empty_progress() -> dict[str, Any]:
    return {"step": 0, "max_steps": None, "epoch": None, "loss": None, "learning_rate": None,
            "eval": {}, "errors": [], "checkpoints": [], "last_event_time": None}


def fold_progress(summary: dict[str, Any], event: dict[str, Any]) -> None:
    """Step, total, last loss, last eval metrics, checkpoints, errors: one event folded in."""
    kind = event.get("event")
    summary["last_event_time"] = event.get("time")
    if kind == "restart":  # a restarted run goes on from its checkpoint's step (tuitrain.runs.keeper.attempts)
        summary["step"] = event.get("step") or 0
        return
    if event.get("step") is not None:
        summary["step"] = max(summary["step"], event["step"])
    if kind == "train_begin":
        summary["max_steps"] = event.get("max_steps")
    elif kind == "log":
        for key in ("loss", "learning_rate", "epoch", "grad_norm"):
            if key in event:
                summary[key] = event[key]
    elif kind == "evaluate":
        summary["eval"] = {k: v for k, v in event.items() if k.startswith("eval_")}  # figures as written (maybe "nan")
    elif kind == "save":
        summary["checkpoints"].append(event.get("checkpoint"))
    elif kind == "error":
        summary["errors"].append({"rank": event.get("rank"), "message": event.get("message")})


def progress(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The progress summary of a whole event stream."""
    summary = empty_progress()
    for event in events:
        fold_progress(summary, event)
    return summary
