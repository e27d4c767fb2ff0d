"""Checkpoints in an output_dir: which exist, which are whole, which run wrote each, and what was
measured at each.

A checkpoint is complete when every file the Trainer needs to resume exactly is there and whole:
tuitrain's marker (tuitrain.json, written last by the run once every rank has saved) lists every
file with its size, and each is checked against it; weights and torch files are also checked for
truncation from their own headers, so a checkpoint without a marker (another tool's, or a save cut
short) is judged by its contents. A kill during a save (transformers #35782), a truncated or
zero-byte weights file, or a deleted scheduler.pt makes a checkpoint damaged, with the reason,
and `latest` never picks it.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from tuitrain.rundir.json_shape import problem, repaired
from tuitrain.rundir.record import RunRecord

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json",
            "adapter_model.safetensors", "adapter_model.bin")
_OPTIMIZER = ("optimizer.pt", "optimizer.bin")
_SHARDED = ("global_step", "optimizer_0", "pytorch_model_fsdp")
MARKER = "tuitrain.json"
LORA_BASE = "lora-base"  # in an output folder: the from-scratch base a LoRA run's adapters are relative to


class _CheckpointNeeded(TypedDict):
    step: int
    path: str
    complete: bool


class CheckpointJson(_CheckpointNeeded, total=False):
    """A checkpoint as `Checkpoint.to_dict` writes it (`checkpoints --json`, a run's summary, the mirror of another
    box's run); an older version's lacks the later keys."""

    missing: list[str]
    metrics: dict[str, Any]
    size_bytes: int
    world_size: int | None
    run: str | None
    verified: bool


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path
    complete: bool
    missing: tuple[str, ...]  # why it is not complete: files absent or damaged, one reason each
    metrics: dict[str, Any] = field(default_factory=dict)
    size_bytes: int = 0
    world_size: int | None = None
    run: str | None = None  # the run that wrote it (from the marker)
    verified: bool = False  # sizes checked against tuitrain's marker

    @property
    def why(self) -> str:
        """Why it is not complete, in one line ("" when it is)."""
        return "; ".join(self.missing)

    def to_dict(self) -> CheckpointJson:
        return {
            "step": self.step,
            "path": str(self.path),
            "complete": self.complete,
            "missing": list(self.missing),
            "metrics": self.metrics,
            "size_bytes": self.size_bytes,
            "world_size": self.world_size,
            "run": self.run,
            "verified": self.verified,
        }


def checkpoints_from_json(data: object) -> list[Checkpoint]:
    """Checkpoints another box listed (`to_dict` each, as its tuitrain, maybe another version, wrote them): each one
    that checks, as this machine's are; one that does not is left out, keys a newer version adds are left alone."""
    data = repaired(data)  # a file's name in `missing` may hold bytes that are not UTF-8
    found: list[CheckpointJson] = [c for c in data if problem(c, CheckpointJson) is None] if isinstance(data, list) else []
    return [Checkpoint(c["step"], Path(c["path"]), c["complete"], tuple(c.get("missing", ())), c.get("metrics", {}),
                       c.get("size_bytes", 0), c.get("world_size"), c.get("run"), c.get("verified", False))
            for c in found]


def files_with_sizes(folder: Path) -> dict[str, int]:
    """Every file under `folder` (relative POSIX path → bytes), the marker and temporaries aside."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MARKER and not path.name.startswith(f".{MARKER}."):
            found[path.relative_to(folder).as_posix()] = path.stat().st_size
    return found


def _state(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _metrics_at(state: dict[str, Any], step: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for entry in state.get("log_history", []):
        if entry.get("step") == step:
            found.update({k: v for k, v in entry.items() if k not in ("step", "epoch")})
    return found


def _marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _safetensors_problem(file: Path, size: int) -> str | None:
    """A safetensors file states its own length: 8 bytes of header size, the header, then the
    data up to the largest offset the header names."""
    try:
        with open(file, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                return f"{file.name} is truncated ({size} bytes)"
            (header_size,) = struct.unpack("<Q", head)
            if header_size > size - 8:
                return f"{file.name} is truncated ({size} bytes, its header alone is {header_size})"
            header = json.loads(handle.read(header_size))
    except (OSError, ValueError, UnicodeDecodeError):
        return f"{file.name} is damaged (its header does not read)"
    ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__" and isinstance(entry, dict)]
    expected = 8 + header_size + max(ends, default=0)
    if size < expected:
        return f"{file.name} is truncated ({size} of {expected} bytes)"
    return None


def _torch_problem(file: Path, size: int) -> str | None:
    """torch.save writes a zip archive; one cut short has no central directory at its end."""
    if size == 0:
        return f"{file.name} is empty"
    if zipfile.is_zipfile(file):
        return None
    try:
        with open(file, "rb") as handle:
            legacy = handle.read(2) == b"\x80\x02"  # torch's pre-1.6 pickle format: nothing to check
    except OSError:
        legacy = False
    return None if legacy else f"{file.name} is damaged or truncated (not a whole torch file)"


def _content_problems(path: Path, sizes: dict[str, int]) -> list[str]:
    problems = []
    for name, size in sizes.items():
        file = path / name
        if name.endswith(".safetensors"):
            problem = _safetensors_problem(file, size)
        elif name.endswith((".pt", ".pth", ".bin")) and "/" not in name:
            problem = _torch_problem(file, size)
        else:
            problem = None
        if problem:
            problems.append(problem)
    return problems


def _base_problems(path: Path, names: set[str]) -> list[str]:
    """An adapter checkpoint is only as whole as the base it adapts: a from-scratch base kept once in the
    output folder's lora-base/ (tuitrain.engine.lora), which resume and export load."""
    base = path.parent / LORA_BASE
    if "adapter_config.json" not in names or not base.is_dir():
        return []
    sizes = files_with_sizes(base)
    problems = [] if "config.json" in sizes else [f"{LORA_BASE}/config.json is missing (the adapter's base)"]
    return problems + [f"{LORA_BASE}/{p} (the adapter's base)" for p in _content_problems(base, sizes)]


def _required_problems(names: set[str], state: dict[str, Any] | None, world_size: int | None) -> list[str]:
    """What the Trainer needs to resume exactly (not merely to load weights)."""
    missing = []
    if state is None:
        missing.append("no readable trainer_state.json")
    sharded = any(n.startswith(_SHARDED) for n in names)
    deepspeed = any(n.startswith("global_step") for n in names)
    if not names.intersection(_WEIGHTS) and not sharded:
        missing.append("no model weights")
    if not sharded and not names.intersection(_OPTIMIZER):
        missing.append("no optimizer.pt (optimizer state)")
    if not deepspeed and "scheduler.pt" not in names:
        missing.append("no scheduler.pt (the learning-rate schedule would restart)")
    rng = {n for n in names if n.startswith("rng_state")}
    if world_size and world_size > 1:
        absent = [f"rng_state_{i}.pth" for i in range(world_size) if f"rng_state_{i}.pth" not in rng]
        if absent:
            missing.append(f"no {', '.join(absent)} (the data order would change)")
    elif not rng:
        missing.append("no rng_state.pth (the data order would change)")
    return missing


def _marker_problems(marker: dict[str, Any], sizes: dict[str, int]) -> list[str]:
    problems = []
    for name, size in (marker.get("files") or {}).items():
        if name not in sizes:
            problems.append(f"{name} is missing (it was saved with the checkpoint)")
        elif sizes[name] != size:
            problems.append(f"{name} is {sizes[name]} bytes, {size} when saved")
    return problems


def inspect_checkpoint(path: Path, world_size: int | None = None) -> Checkpoint:
    """`world_size`: the world of the run that wrote it, when known; a checkpoint without a marker
    is judged against it (a save cut short by a kill may hold rank 0's rng_state_0.pth alone)."""
    match = _CHECKPOINT.match(path.name)
    step = int(match.group(1)) if match else -1
    sizes = files_with_sizes(path) if path.is_dir() else {}
    names = {name.split("/", 1)[0] for name in sizes}
    state = _state(path)
    marker = _marker(path)
    counted = len([n for n in names if n.startswith("rng_state")])
    world_size = (marker or {}).get("world_size") or (max(counted, world_size or 0) or None)
    # a script's own checkpoint (tuitrain.saved) holds what that script resumes from, not the Trainer's files
    own = (marker or {}).get("kind") == "saved"
    problems = [] if own else _required_problems(names, state, world_size)
    verified = marker is not None and isinstance(marker.get("files"), dict)
    if verified:
        problems += _marker_problems(marker, sizes)  # type: ignore[arg-type]
    named = {p.split(" ", 1)[0] for p in problems}  # a file the marker's sizes already fault is said once
    problems += [p for p in _content_problems(path, sizes) if p.split(" ", 1)[0] not in named]
    problems += _base_problems(path, names)
    return Checkpoint(
        step=step,
        path=path,
        complete=not problems,
        missing=tuple(problems),
        metrics=_metrics_at(state, step) if state else {},
        size_bytes=sum(sizes.values()),
        world_size=world_size,
        run=(marker or {}).get("run"),
        verified=verified,
    )


def list_checkpoints(output_dir: Path, run: str | None = None, world_size: int | None = None) -> list[Checkpoint]:
    """Every checkpoint in `output_dir`; with `run`, only those that run wrote (and those no run
    claims: a save cut short before its marker, judged against the run's `world_size`)."""
    if not output_dir.is_dir():
        return []
    found = [inspect_checkpoint(p, world_size) for p in output_dir.iterdir() if p.is_dir() and _CHECKPOINT.match(p.name)]
    if run is not None:
        found = [c for c in found if c.run in (None, run)]
    return sorted(found, key=lambda c: c.step)


def run_checkpoints(record: RunRecord) -> list[Checkpoint]:
    """The checkpoints a run wrote (a resumed run can share an output folder with its parent)."""
    out = record.get("output_dir")
    return list_checkpoints(Path(out), run=record.get("id"), world_size=run_world_size(record)) if out else []


def run_world_size(record: RunRecord) -> int | None:
    """How many ranks the run trained with (run.json's num_processes counts every machine's)."""
    return record.get("num_processes")


def latest_complete(checkpoints: list[Checkpoint]) -> Checkpoint | None:
    complete = [c for c in checkpoints if c.complete]
    return complete[-1] if complete else None
