"""[hardware]: the accelerator against the precision, the processes and the GPUs listed."""

from __future__ import annotations

from typing import Any, Mapping

from ..implied import mixed_precision
from ..problems import Problem
from .common import table_of, value_of, value_or_default


def rules_hardware(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    hardware = table_of(data, "hardware")
    dist = table_of(data, "distributed")
    accelerator = value_or_default(hardware, "hardware.accelerator")
    processes = value_or_default(dist, "distributed.num_processes")
    precision, said_by = mixed_precision(data)
    if accelerator == "cpu" and precision == "fp16":
        # one rule for hardware.mixed_precision and training.fp16: the key that makes the run fp16 is named
        fix = ('use mixed_precision = "bf16" or "no" on the CPU' if said_by == "hardware.mixed_precision" else
               'set training.fp16 = false (bf16 runs on the CPU: hardware.mixed_precision = "bf16")')
        out.append(Problem(file, said_by, 'fp16 mixed precision does not run on the CPU; accelerator is "cpu"', fix))
    if accelerator == "mps" and processes > 1:
        out.append(Problem(file, "distributed.num_processes",
                           f"{processes} processes, but an Apple GPU (mps) runs one",
                           "set distributed.num_processes = 1"))
    gpus = value_of(hardware, "gpus", "list")
    if gpus is not None and accelerator in ("cpu", "mps"):
        out.append(Problem(file, "hardware.gpus", f'ignored with accelerator = "{accelerator}"',
                           "remove it", severity="warning"))
    elif gpus is not None and accelerator in ("auto", "cuda") and processes > len(gpus) and gpus:
        out.append(Problem(file, "distributed.num_processes",
                           f"{processes} processes, but hardware.gpus lists {len(gpus)} GPU(s)",
                           f"set num_processes = {len(gpus)} or list more GPUs"))
    return out

