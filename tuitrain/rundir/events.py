"""Reading events.jsonl and summarising a run's progress (what `runs`, `status`, the follower
and the app show): `fold_progress` is the one rule that turns events into progress."""

from __future__ import annotations

import json
import math
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


Figure = float | str | None  # a figure as a run wrote it: a number, the word for one JSON cannot hold ("nan",
# "inf": engine.events), or None where it wrote nothing usable


class ProgressError(TypedDict):
    rank: object
    message: object


class Progress(TypedDict):
    """What a run's events say of its progress (`fold_progress`): what `runs`, `status`, the follower and the app show.
    Its figures are the run's words kept only where they are a figure; its checkpoints, the folders events named."""

    step: int
    max_steps: int | None
    epoch: Figure
    loss: Figure
    learning_rate: Figure
    grad_norm: Figure
    eval: dict[str, Figure]
    errors: list[ProgressError]
    checkpoints: list[str]
    last_event_time: float | None


def figure(value: object) -> Figure:
    """`value` as a figure to show: a number, or the word for one JSON cannot hold ("nan", "inf", as engine.events
    writes it: a NaN read from a hand-written file becomes "nan"); None for anything else."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None


def figure_key(value: Figure) -> tuple[int, float]:
    """How a list sorts figures, smallest first: numbers, then words ("nan"), then none."""
    return (0, value) if isinstance(value, (int, float)) else (1 if isinstance(value, str) else 2, 0.0)


def empty_progress() -> Progress:
    return {"step": 0, "max_steps": None, "epoch": None, "loss": None, "learning_rate": None, "grad_norm": None,
            "eval": {}, "errors": [], "checkpoints": [], "last_event_time": None}


def fold_progress(summary: Progress, event: dict[str, Any]) -> None:
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
                summary[key] = figure(event[key])
    elif kind == "evaluate":
        summary["eval"] = {k: figure(v) for k, v in event.items() if k.startswith("eval_")}
    elif kind == "save" and isinstance(event.get("checkpoint"), str):
        summary["checkpoints"].append(event["checkpoint"])
    elif kind == "error":
        summary["errors"].append({"rank": event.get("rank"), "message": event.get("message")})


def progress(events: Iterable[dict[str, Any]]) -> Progress:
    """The progress summary of a whole event stream."""
    summary = empty_progress()
    for event in events:
        fold_progress(summary, event)
    return summary
