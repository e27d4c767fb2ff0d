"""How many processes one machine of a run starts: the one rule, asked wherever the count is decided — a run on
this machine (runs.start.from_profile.launch_settings, with its selected GPUs), each listed machine (profile.rules.machines
.machine_processes, with the GPUs the profile lists for it), each node of a Slurm job (slurm.script.job_resources)
and an exported accelerate config (launch.plan.export_accelerate_config)."""

from __future__ import annotations

from typing import Any, Mapping


def processes_set(data: Mapping[str, Any]) -> bool:
    """Whether a profile as written (not with defaults) sets distributed.num_processes itself."""
    dist = data.get("distributed")
    return isinstance(dist, Mapping) and "num_processes" in dist


def processes_per_machine(given: Any, strategy: Any, accelerator: Any, gpus: int | None) -> int | None:
    """The processes one machine runs: `given` (the count the profile sets for it: a listed machine's own
    num_processes, else distributed.num_processes; None when unset), else 1 with "single" or on the CPU or MPS,
    else one per GPU it runs on (`gpus`: how many, 0 for none: a CPU run), as torchrun's --nproc_per_node=gpu;
    None when only the machine can tell (one per GPU, and how many is not known where this is asked)."""
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    if strategy == "single" or accelerator in ("cpu", "mps"):
        return 1
    if gpus is None:
        return None
    return max(1, gpus)
