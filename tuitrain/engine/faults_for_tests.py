"""Faults for tests only, read from the environment, which nothing but a test sets: what a real failure does to a
rank, on a machine where it cannot honestly be made (a CUDA out-of-memory on the CPU), or at a moment a test picks.

- `TUITRAIN_TEST_RAISE` = JSON `{"raise": "RuntimeError" | "OutOfMemoryError" | "FileNotFoundError", "step": 30,
  "rank": 1, "attempts": [1], "batch_above": 4}`: that rank raises the real exception (torch's own
  `torch.OutOfMemoryError`) at the end of that step, on those attempts of the run (run.json's `attempt`; absent:
  every attempt), while per_device_train_batch_size is above `batch_above` (absent: whatever it is).
- `TUITRAIN_TEST_GPU_MEMORY_CAP` = bytes: each rank's CUDA allocator may use at most that much of its GPU
  (`torch.cuda.set_per_process_memory_fraction`), so a batch too big for the cap runs out of memory for real
  (scripts/gpu_check.sh), on a card of any size and past the plan's estimate, which sees the whole card.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from transformers import TrainerCallback

from tuitrain.rundir.run import Run

RAISE_ENV = "TUITRAIN_TEST_RAISE"
GPU_MEMORY_CAP_ENV = "TUITRAIN_TEST_GPU_MEMORY_CAP"


class RaiseAtStep(TrainerCallback):
    def __init__(self, fault: Mapping[str, Any]) -> None:
        self.fault = fault

    def on_step_end(self, args, state, control, **kwargs):
        fault = self.fault
        if state.global_step != int(fault["step"]) or args.per_device_train_batch_size <= int(fault.get("batch_above", 0)):
            return
        name = str(fault["raise"])
        if name == "OutOfMemoryError":
            import torch

            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate 2.00 GiB (a test's fault, {RAISE_ENV}, "
                                         f"at per_device_train_batch_size = {args.per_device_train_batch_size})")
        error = {"RuntimeError": RuntimeError, "FileNotFoundError": FileNotFoundError}[name]
        raise error(f"a test's fault ({RAISE_ENV}) at step {state.global_step}")


def fault_callbacks(run: Run, rank: int) -> list[Any]:
    """The callbacks of this rank's faults (none unless a test asked); the GPU memory cap set."""
    cap = os.environ.get(GPU_MEMORY_CAP_ENV)
    if cap:
        import torch

        if torch.cuda.is_available():
            device = int(os.environ.get("LOCAL_RANK", "0"))
            total = torch.cuda.get_device_properties(device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, int(cap) / total), device)
    raw = os.environ.get(RAISE_ENV)
    if not raw:
        return []
    fault = json.loads(raw)
    attempts = fault.get("attempts")
    if int(fault.get("rank", 0)) != rank or (attempts is not None and run.attempt not in attempts):
        return []
    return [RaiseAtStep(fault)]
