"""Profile (with defaults) + Hardware → LaunchPlan. Pure: no processes, no environment reads.

The accelerate config is a plain mapping (importing accelerate's config classes loads torch);
tests prove that accelerate's own loader and `accelerate launch` accept what we write.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.hardware import Hardware
from tuitrain.profile import Problem

ENGINE_MODULE = "tuitrain.engine"


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

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def command_line(self) -> str:
        """The command a user could paste to run this without tuitrain."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        args = ["accelerate", "launch", *self.argv[3:]]
        return (env + " " if env else "") + shlex.join(args)

    def to_dict(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "command": self.command_line(),
            "env": self.env,
            "accelerate_config": self.accelerate_config,
            "num_processes": self.num_processes,
            "num_machines": self.num_machines,
            "accelerator": self.accelerator,
            "main_process_port": self.main_process_port,
            "notes": self.notes,
            "problems": [p.to_dict() for p in self.problems],
        }


def _problem(file: str, key: str, message: str, fix: str | None, severity: str = "error") -> Problem:
    return Problem(file=file, key=key, message=message, fix=fix, severity=severity, line=None, column=None)  # type: ignore[arg-type]


def choose_accelerator(profile: dict[str, Any], hardware: Hardware, file: str) -> tuple[str, list[str], list[Problem]]:
    asked = profile["hardware"]["accelerator"]
    notes: list[str] = []
    problems: list[Problem] = []
    if asked == "auto":
        if hardware.has_cuda:
            chosen, why = "cuda", f"{len(hardware.gpus)} NVIDIA GPU(s) found"
        elif hardware.mps and profile["distributed"]["num_processes"] == 1:
            chosen, why = "mps", "Apple MPS found and one process asked"
        else:
            chosen, why = "cpu", "no NVIDIA GPU found" + (" (MPS runs one process only)" if hardware.mps else "")
        notes.append(f"accelerator auto → {chosen}: {why}")
        return chosen, notes, problems
    if asked == "cuda" and not hardware.has_cuda:
        problems.append(_problem(file, "hardware.accelerator", "asks for CUDA GPUs, but this machine has no NVIDIA GPU (NVML found none)",
                                 'set hardware.accelerator = "cpu" (or "auto"), or run on a machine with a GPU'))
    if asked == "mps" and not hardware.mps:
        problems.append(_problem(file, "hardware.accelerator", "asks for Apple MPS, which this machine does not have",
                                 'set hardware.accelerator = "cpu" (or "auto")'))
    return asked, notes, problems


def _selected_gpus(profile: dict[str, Any], hardware: Hardware, file: str) -> tuple[list[str], list[Problem]]:
    gpus = profile["hardware"].get("gpus")
    if gpus is None:
        return [str(g.index) for g in hardware.gpus], []
    known = {str(g.index) for g in hardware.gpus} | {g.uuid for g in hardware.gpus}
    missing = [str(g) for g in gpus if str(g) not in known]
    problems = []
    if missing:
        have = ", ".join(sorted(str(g.index) for g in hardware.gpus)) or "none"
        problems.append(_problem(file, "hardware.gpus", f"GPU(s) {', '.join(missing)} not found on this machine (it has: {have})",
                                 "pick GPUs from `tuitrain gpus`, or remove hardware.gpus to use all"))
    return [str(g) for g in gpus], problems


def accelerate_config(profile: dict[str, Any], accelerator: str, gpu_ids: list[str]) -> dict[str, Any]:
    dist = profile["distributed"]
    processes = dist["num_processes"]
    multi = processes > 1 or dist["num_machines"] > 1
    # On a machine without GPUs, accelerate's MULTI_CPU type (and --cpu) start ONE process;
    # the multi-GPU path with no visible GPU starts real gloo ranks. So CPU ranks use MULTI_GPU.
    distributed_type = "MULTI_GPU" if multi else "NO"
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": distributed_type,
        "downcast_bf16": "no",
        "machine_rank": dist["machine_rank"],
        "main_training_function": "main",
        "mixed_precision": profile["hardware"]["mixed_precision"],
        "num_machines": dist["num_machines"],
        "num_processes": processes * dist["num_machines"],
        "rdzv_backend": dist["rdzv_backend"],
        "same_network": True,
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": accelerator == "cpu" and not multi,
    }
    if accelerator == "cuda" and gpu_ids:
        config["gpu_ids"] = ",".join(str(i) for i in range(len(gpu_ids)))
    else:
        config["gpu_ids"] = "all"
    if dist["num_machines"] > 1:
        config["main_process_ip"] = dist.get("main_process_ip")
        config["main_process_port"] = dist.get("main_process_port")
    return config


def plan_launch(profile: dict[str, Any], hardware: Hardware, run_dir: Path, file: str = "profile") -> LaunchPlan:
    """`profile` is a profile with defaults filled in (tuitrain.profile.profile_with_defaults)."""
    dist = profile["distributed"]
    accelerator, notes, problems = choose_accelerator(profile, hardware, file)
    env: dict[str, str] = {"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
    gpu_ids: list[str] = []
    if accelerator == "cuda":
        gpu_ids, gpu_problems = _selected_gpus(profile, hardware, file)
        problems += gpu_problems
        env["CUDA_DEVICE_ORDER"] = profile["hardware"]["device_order"]
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpu_ids)
        notes += [f"physical GPU {g} → cuda:{i}" for i, g in enumerate(gpu_ids)]
        if dist["num_processes"] > len(gpu_ids) and not problems:
            problems.append(_problem(file, "distributed.num_processes",
                                     f"{dist['num_processes']} processes but {len(gpu_ids)} GPU(s) selected",
                                     f"set distributed.num_processes = {len(gpu_ids)} or select more GPUs in hardware.gpus"))
    elif accelerator == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # hide any GPU: the CPU run the Trainer docs describe
    elif accelerator == "mps":
        if dist["num_processes"] > 1:
            problems.append(_problem(file, "distributed.num_processes", "MPS runs one process only (gloo and nccl do not run on MPS)",
                                     "set distributed.num_processes = 1, or hardware.accelerator = \"cpu\" for CPU ranks"))
        if profile["hardware"].get("mps_fallback"):
            env["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
    if accelerator == "cpu" and profile["hardware"]["mixed_precision"] == "fp16":
        problems.append(_problem(file, "hardware.mixed_precision", "fp16 mixed precision does not run on the CPU",
                                 'set hardware.mixed_precision = "no" (or "bf16")'))

    port = dist.get("main_process_port")
    config_path = run_dir / "accelerate.yaml"
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config_path)]
    if port is not None:
        argv += ["--main_process_port", str(port)]
    elif dist["num_processes"] > 1 or dist["num_machines"] > 1:
        notes.append("main_process_port: a free port is picked at launch (none set in the profile)")
    argv += ["-m", ENGINE_MODULE, str(run_dir)]
    notes.append(f"--config_file {config_path}: accelerate's default config is never used unseen")
    return LaunchPlan(
        argv=argv,
        env=env,
        accelerate_config=accelerate_config(profile, accelerator, gpu_ids),
        num_processes=dist["num_processes"] * dist["num_machines"],
        num_machines=dist["num_machines"],
        accelerator=accelerator,
        main_process_port=port,
        notes=notes,
        problems=problems,
    )
