"""Profile (with defaults) + Hardware → LaunchPlan: the `accelerate launch` command line, its
environment and the accelerate config it passes with --config_file, for a run on this machine.

The machine's part is the one planner's (tuitrain/launch/planner.py: `plan_machine` with this machine's hardware);
this module adds what a run of its own says: the strategy and the keys the engine implies, the refusal of a
profile that lists machines, and that accelerate's default config is never used. A Slurm node plans the same way,
for its own role (tuitrain.slurm.agent.plan_node). `export_accelerate_config` plans the config alone, with no
machine at all (a cluster's config written on a laptop).
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.hardware import Hardware
from tuitrain.launch.accelerate_config import accelerate_config
from tuitrain.launch.accelerate_default_config import default_config_path
from tuitrain.launch.memory_fit import MemoryCheck
from tuitrain.launch.planner import (
    MachineRole,
    deepspeed_json_path,
    pasteable_command,
    plan_machine,
    profile_folder,
    role_of,
    strategy_note,
)
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import Problem, Profile
from tuitrain.profile.accelerate_names import CPU_RANKS_MARK
from tuitrain.profile.implied import implied_notes
from tuitrain.profile.processes import processes_per_machine
from tuitrain.profile.settings import Settings

MACHINES_NOT_BUILT = "a profile that lists [[distributed.machines]] is planned machine by machine, not as one machine's run"


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    env: dict[str, str]
    accelerate_config: dict[str, Any]
    num_processes: int
    num_machines: int
    accelerator: str
    main_process_port: int | None
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    strategy: str = "single"
    cwd: str | None = None  # where the ranks run (script mode: the script's workdir); None: where tuitrain runs
    memory: MemoryCheck | None = None  # each GPU's memory for the run (a CUDA plan made here; tuitrain.launch.memory)
    accelerator_why: str = ""  # how `auto` chose the accelerator ("accelerator auto → cuda: ..."); "" where asked

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def record_fields(self) -> dict[str, Any]:
        """What run.json keeps of this plan: the supervisor launches from it; `status` says the device and why."""
        return {"argv": self.argv, "env": self.env, "num_processes": self.num_processes,
                "num_machines": self.num_machines, "main_process_port": self.main_process_port,
                "accelerator": self.accelerator, **({"accelerator_why": self.accelerator_why}
                                                    if self.accelerator_why else {})}

    def command_line(self) -> str:
        """The command a user could paste to run this without tuitrain."""
        command = pasteable_command(self.env, self.argv)
        return f"cd {shlex.quote(self.cwd)} && {command}" if self.cwd else command

    def to_dict(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "command": self.command_line(),
            "env": self.env,
            "accelerate_config": self.accelerate_config,
            "num_processes": self.num_processes,
            "num_machines": self.num_machines,
            "accelerator": self.accelerator,
            "strategy": self.strategy,
            "main_process_port": self.main_process_port,
            "cwd": self.cwd,
            "notes": self.notes,
            "problems": [p.to_dict() for p in self.problems],
            "memory": self.memory.to_dict() if self.memory is not None else None,
        }


def queued_plan(plan: LaunchPlan) -> LaunchPlan:
    """The plan of a run that waits in the queue for its GPUs: memory that others hold now refuses nothing (the
    memory estimate's refusal becomes a warning where the run would fit the GPU once it is free)."""
    memory = plan.memory
    if memory is None or not memory.waits:
        return plan
    problems = [dataclasses.replace(p, severity="warning") if p in memory.problems else p for p in plan.problems]
    return dataclasses.replace(plan, problems=problems)


def export_accelerate_config(profile: Settings, file: str = "profile",
                             processes_set: bool = True) -> tuple[dict[str, Any], list[str]]:
    """The accelerate config of a profile with no machine checks, and comment lines that say what
    the YAML alone cannot (for `tuitrain profile export-accelerate`). `processes_set`: whether the
    profile itself sets distributed.num_processes (else the launch picks one per selected GPU)."""
    hw = profile["hardware"]
    dist = profile["distributed"]
    accelerator = hw["accelerator"]
    # CPU ranks use no GPU: gpu_ids would make accelerate set CUDA_VISIBLE_DEVICES to them
    raw = hw["gpus"] if accelerator != "cpu" else None
    gpus = raw if isinstance(raw, list) else None  # gpus = N: any N free GPUs, chosen at start: no ids to write
    gpu_ids = ",".join(str(g) for g in gpus) if gpus else "all"
    base_dir = profile_folder(file)
    # unset, the count is the run's rule (one per listed GPU); None: only the machine it runs on can tell
    counted = None if processes_set else processes_per_machine(None, dist["strategy"], accelerator,
                                                                len(gpus) if gpus else raw if isinstance(raw, int)
                                                                else None)
    if counted is not None and counted > 1:
        profile = {**profile, "distributed": {**dist, "num_processes": counted}}
    config = accelerate_config(profile, accelerator, gpu_ids, deepspeed_json_path(profile, base_dir))
    header = [f"accelerate config of {file} (tuitrain profile export-accelerate)",
              "use it with: accelerate launch --config_file THIS_FILE your_script.py"]
    if counted is not None and counted > 1:
        header.append(f"num_processes: one per selected GPU ({counted} per machine), as `tuitrain run` starts "
                      "when distributed.num_processes is not set")
    elif not processes_set and counted is None:
        header.append("num_processes: not set in the profile, so `tuitrain run` starts one per GPU of the machine "
                      "it runs on; this file says 1: set distributed.num_processes for a fixed count")
    if accelerator == "cpu" and config["distributed_type"] == "MULTI_GPU":
        header.append(CPU_RANKS_MARK + " (import-accelerate reads this line back)")
        header.append("CPU ranks: launch with CUDA_VISIBLE_DEVICES= (empty) so that MULTI_GPU starts gloo ranks;")
        header.append("accelerate's MULTI_CPU / --cpu would start one process")
    if gpus:
        header.append(f"gpu_ids are CUDA numbers; set CUDA_DEVICE_ORDER={hw['device_order']} so they match "
                      "the physical (nvidia-smi) indices")
    if dist["strategy"] == "fsdp" and not (dist["fsdp"] or {}).get("transformer_layer_cls_to_wrap"):
        header.append("fsdp: no layer class given: accelerate wraps the model's _no_split_modules")
    if dist["strategy"] == "fsdp" and accelerator == "cpu":
        header.append("fsdp on the CPU: accelerate 1.15 runs plain DDP instead (no GPU, no FSDP plugin)")
    return config, header


ACCELERATE_SECTIONS = ("hardware", "distributed")  # what an accelerate config is made of: all an export checks


def accelerate_config_yaml(profile: Profile) -> str:
    """The accelerate config YAML of a profile, with its comment lines: what `tuitrain profile export-accelerate`
    prints and the editor's export writes."""
    from tuitrain.profile import settings_with_defaults
    from tuitrain.profile.processes import processes_set
    from tuitrain.yaml_text import dump as dump_yaml

    config, header = export_accelerate_config(settings_with_defaults(profile), str(profile.path),
                                              processes_set(profile.data))
    return dump_yaml(config, header)


def plan_launch(profile: Settings, hardware: Hardware, run_dir: Path, file: str = "profile",
                *, machine: MachineFacts | None = None, resume_from: Path | None = None,
                role: MachineRole | None = None) -> LaunchPlan:
    """`profile` is a profile with defaults filled in (tuitrain.profile.settings_with_defaults).
    `machine`: the facts of this machine the checks need (None: probed now). `resume_from`: the
    checkpoint a [script] is told to resume from (the engine reads it from run.json). `role`: this machine's place
    in the run (None: the one the profile gives it, in `run_dir`)."""
    role = role if role is not None else role_of(profile, run_dir)
    part = plan_machine(profile, role, hardware, file, facts=machine, resume_from=resume_from)
    problems: list[Problem] = []
    if profile["distributed"]["machines"]:
        # one machine's plan would start a wrong, local run: machines are planned by launch/machines.py (the
        # machines backend); this guards a caller that skipped the chooser (tuitrain.backends.for_profile)
        problems.append(Problem(file, "distributed.machines", MACHINES_NOT_BUILT,
                                "plan and start it with `tuitrain plan PROFILE` / `tuitrain run PROFILE`"))
    total = role.processes * role.machines
    config_path = f"{role.folder}/accelerate.yaml"
    memory_lines = part.memory.lines if part.memory is not None else []
    notes = [strategy_note(profile, part.accelerator, total), *part.device_notes, *memory_lines, *part.launch_notes,
             *implied_notes(profile), part.thread_note,
             (f"--config_file {config_path}: accelerate's default config ({default_config_path()}) "
              "is never used unseen (accelerate #1133)")]
    return LaunchPlan(argv=part.argv, env=part.env, accelerate_config=part.accelerate_config, num_processes=total,
                      num_machines=role.machines, accelerator=part.accelerator, main_process_port=role.port,
                      notes=notes, problems=[*problems, *part.problems], strategy=profile["distributed"]["strategy"],
                      cwd=part.cwd, memory=part.memory, accelerator_why=part.accelerator_why)
