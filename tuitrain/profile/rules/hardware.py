"""[hardware]: the accelerator against the precision, the processes and the GPUs listed or counted
(`gpus = N`: any N free GPUs, chosen at start), and min_free_memory."""

from __future__ import annotations

from typing import Any, Mapping

from ..implied import mixed_precision
from ..memory_size import EXAMPLE as SIZE_EXAMPLE
from ..memory_size import parse_memory_size
from ..problems import Problem
from ..schema import KeySpec
from ..shape import _check_key
from ..values import toml_literal, type_problem
from .common import table_of, value_of, value_or_default
from .machines import listed_machines

GPUS_EXAMPLE = "gpus = [0, 1], or gpus = 2 for any 2 free GPUs"


def gpus_problems(file: str, value: Any, machines: bool) -> list[Problem]:
    """hardware.gpus: a list (the shape check's "gpus" rules) or a count of at least 1 (not with listed
    machines: a count is this machine's choice at start)."""
    if isinstance(value, list):
        return _check_key(file, "hardware.gpus", "gpus", value, KeySpec("gpus", example=GPUS_EXAMPLE))
    if isinstance(value, bool) or not isinstance(value, int):
        return [type_problem(file, "hardware.gpus", value, ["gpus", "int"], GPUS_EXAMPLE)]
    if value < 1:
        return [Problem(file, "hardware.gpus", f"a count of GPUs must be at least 1, got {value}",
                        "gpus = 1 for any free GPU, or gpus = [] to hide every GPU")]
    if machines:
        return [Problem(file, "hardware.gpus", f"gpus = {value} (any {value} free GPUs) is chosen on this machine "
                        "when a run starts; with [[distributed.machines]] each machine's GPUs are listed",
                        "list them, e.g. gpus = [0, 1], or give each machine its own gpus")]
    return []


def min_free_problems(file: str, value: Any, accelerator: str) -> list[Problem]:
    if value is None:
        return []
    if parse_memory_size(value) is None:
        return [Problem(file, "hardware.min_free_memory", f"{toml_literal(value)} is not a memory size", SIZE_EXAMPLE)]
    if accelerator in ("cpu", "mps"):
        return [Problem(file, "hardware.min_free_memory", f'ignored with accelerator = "{accelerator}"', "remove it",
                        severity="warning")]
    return []


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
    raw = hardware.get("gpus")
    if raw is not None:
        out += gpus_problems(file, raw, bool(listed_machines(dist)))
    gpus = value_of(hardware, "gpus", "list")
    count = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1 else None
    if (gpus is not None or count is not None) and accelerator in ("cpu", "mps"):
        out.append(Problem(file, "hardware.gpus", f'ignored with accelerator = "{accelerator}"',
                           "remove it", severity="warning"))
    elif gpus is not None and accelerator in ("auto", "cuda") and processes > len(gpus) and gpus:
        out.append(Problem(file, "distributed.num_processes",
                           f"{processes} processes, but hardware.gpus lists {len(gpus)} GPU(s)",
                           f"set num_processes = {len(gpus)} or list more GPUs"))
    elif count is not None and accelerator in ("auto", "cuda") and processes > count:
        out.append(Problem(file, "distributed.num_processes",
                           f"{processes} processes, but hardware.gpus = {count} asks for {count} GPU(s)",
                           f"set num_processes = {count} or ask for more GPUs"))
    out += min_free_problems(file, hardware.get("min_free_memory"), accelerator)
    return out

