"""Rank 0's decision on every rank: a rank that saves, evaluates or stops alone hangs the others.
Used by the engine's ControlCallback and by script mode's tuitrain.report."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist


def group_device() -> Any:
    """A device the process group's backend can broadcast on (NCCL: this rank's GPU)."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def broadcast_flags(flags: tuple[bool, ...], device: Any = None) -> tuple[bool, ...]:
    tensor = torch.tensor([int(f) for f in flags], dtype=torch.int32, device=device or group_device())
    dist.broadcast(tensor, src=0)
    return tuple(bool(v) for v in tensor.tolist())
