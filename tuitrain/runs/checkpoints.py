"""Checkpoints in an output_dir: which exist, which are complete, what was measured at each.

A kill during a save leaves a half-written folder (transformers #35782); `latest` must never
pick it, so completeness is judged from the files, not from the folder name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json", "adapter_model.safetensors")
_OPTIMIZER = ("optimizer.pt", "optimizer.bin", "scheduler.pt")
MARKER = "tuitrain.json"


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path
    complete: bool
    missing: tuple[str, ...]
    metrics: dict[str, Any] = field(default_factory=dict)
    size_bytes: int = 0
    world_size: int | None = None
    run: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "path": str(self.path),
            "complete": self.complete,
            "missing": list(self.missing),
            "metrics": self.metrics,
            "size_bytes": self.size_bytes,
            "world_size": self.world_size,
            "run": self.run,
        }


def _folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _state(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _metrics_at(state: dict[str, Any], step: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for entry in state.get("log_history", []):
        if entry.get("step") == step:
            found.update({k: v for k, v in entry.items() if k not in ("step", "epoch")})
    return found


def inspect_checkpoint(path: Path) -> Checkpoint:
    match = _CHECKPOINT.match(path.name)
    step = int(match.group(1)) if match else -1
    names = {p.name for p in path.iterdir()} if path.is_dir() else set()
    missing = []
    state = _state(path)
    if state is None:
        missing.append("trainer_state.json")
    if not names.intersection(_WEIGHTS) and not any(n.startswith(("pytorch_model_fsdp", "global_step")) for n in names):
        missing.append("model weights")
    sharded = any(n.startswith(("global_step", "optimizer_0", "pytorch_model_fsdp")) for n in names)
    if not sharded and not names.intersection(_OPTIMIZER[:2]):
        missing.append("optimizer state")
    marker: dict[str, Any] = {}
    if MARKER in names:
        try:
            marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            marker = {}
    world_size = marker.get("world_size") or (len([n for n in names if n.startswith("rng_state")]) or None)
    return Checkpoint(
        step=step,
        path=path,
        complete=not missing,
        missing=tuple(missing),
        metrics=_metrics_at(state, step) if state else {},
        size_bytes=_folder_size(path) if path.is_dir() else 0,
        world_size=world_size,
        run=marker.get("run"),
    )


def list_checkpoints(output_dir: Path) -> list[Checkpoint]:
    if not output_dir.is_dir():
        return []
    found = [inspect_checkpoint(p) for p in output_dir.iterdir() if p.is_dir() and _CHECKPOINT.match(p.name)]
    return sorted(found, key=lambda c: c.step)


def latest_complete(output_dir: Path) -> Checkpoint | None:
    complete = [c for c in list_checkpoints(output_dir) if c.complete]
    return complete[-1] if complete else None
