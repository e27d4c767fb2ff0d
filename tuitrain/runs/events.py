"""Reading events.jsonl and summarising a run's progress (what `runs` and `status` show)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            if line.endswith("\n"):
                try:
                    yield json.loads(line)
                except ValueError:
                    continue


def progress(events: Iterator[dict[str, Any]]) -> dict[str, Any]:
    """Step, total, last loss, last eval metrics, errors — from the event stream."""
    summary: dict[str, Any] = {"step": 0, "max_steps": None, "epoch": None, "loss": None, "learning_rate": None,
                               "eval": {}, "errors": [], "checkpoints": [], "last_event_time": None}
    for event in events:
        kind = event.get("event")
        summary["last_event_time"] = event.get("time")
        if event.get("step") is not None:
            summary["step"] = max(summary["step"], int(event["step"]))
        if kind == "train_begin":
            summary["max_steps"] = event.get("max_steps")
        elif kind == "log":
            for key in ("loss", "learning_rate", "epoch", "grad_norm"):
                if key in event:
                    summary[key] = event[key]
        elif kind == "evaluate":
            summary["eval"] = {k: v for k, v in event.items() if k.startswith("eval_")}
        elif kind == "save":
            summary["checkpoints"].append(event.get("checkpoint"))
        elif kind == "error":
            summary["errors"].append({"rank": event.get("rank"), "message": event.get("message")})
    return summary
