"""Reading the ranks' heartbeats (heartbeats/rank-K.json, written by tuitrain.engine.rank_io.Heartbeat)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.atomic import read_json
from tuitrain.rundir.layout import RunPaths


@dataclass(frozen=True)
class Beat:
    """One rank's last heartbeat: `time` is when it last moved, `since` when its phase began."""

    rank: int
    phase: str
    time: float
    since: float
    step: int | None = None
    step_seconds: float | None = None  # the median of its recent step times (None before two steps ended)
    between_seconds: float | None = None  # the median of its recent times from a step's end to the next one's begin
    slow_seconds: dict[str, float] = field(default_factory=dict)  # slow phase -> its longest stretch so far
    pid: int | None = None
    # since the rank started, over its steps timed whole: the time from a step's end to the next one's begin (where
    # the Trainer reads the next batch), and those steps' time end to end (None: a heartbeat of an older tuitrain)
    waited_seconds: float | None = None
    stepped_seconds: float | None = None


def beat_from(data: Any) -> Beat | None:
    """A Beat from a heartbeat file's JSON, or None when it is not one."""
    try:
        slow = data.get("slow_seconds") or {}
        return Beat(rank=int(data["rank"]), phase=str(data["phase"]), time=float(data["time"]),
                    since=float(data.get("since") or data["time"]),
                    step=None if data.get("step") is None else int(data["step"]),
                    step_seconds=None if data.get("step_seconds") is None else float(data["step_seconds"]),
                    between_seconds=None if data.get("between_seconds") is None else float(data["between_seconds"]),
                    slow_seconds={str(k): float(v) for k, v in slow.items()},
                    pid=None if data.get("pid") is None else int(data["pid"]),
                    waited_seconds=_seconds(data.get("waited_seconds")),
                    stepped_seconds=_seconds(data.get("stepped_seconds")))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


def heartbeat_folders(paths: RunPaths) -> list[Path]:
    """Where a run's ranks keep their heartbeats: its own heartbeats/ (every rank of a local run, and of a run over
    SSH once mirrored home) and each Slurm node M > 0's, in its own folder on the shared filesystem (RunPaths.nodes)."""
    return [node.heartbeats for node in paths.nodes().values()]


def read_beats(paths: RunPaths) -> dict[int, Beat]:
    """rank -> its last heartbeat (a rank that never beat is absent), from every folder of heartbeat_folders."""
    beats: dict[int, Beat] = {}
    for folder in heartbeat_folders(paths):
        for file in folder.glob("rank-*.json") if folder.is_dir() else ():
            try:
                beat = beat_from(read_json(file))
            except (OSError, ValueError):
                continue  # replaced as we read it: the next look reads it
            if beat is not None:
                beats[beat.rank] = beat
    return beats
