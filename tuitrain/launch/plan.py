"""Profile (with defaults) + Hardware → LaunchPlan: the `accelerate launch` command line, its
environment and the accelerate config it passes with --config_file.

The accelerate config is a plain mapping (importing accelerate's config classes loads torch);
tests prove that accelerate's own loader and `accelerate launch` accept what we write. Planning
is pure given the machine facts (`machine`); when they are not given they are probed once
(tuitrain/launch/preflight.py). `export_accelerate_config` plans the config alone, with no
machine at all (a cluster's config written on a laptop).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from tuitrain.hardware import Hardware
from tuitrain.hardware.mapping import map_devices
from tuitrain.hardware.preflight import check as hardware_preflight
from tuitrain.launch.accelerate_default_config import default_config_path
from tuitrain.launch.accelerate_export import deepspeed_section, fsdp_section
from tuitrain.launch.preflight import MachineFacts, machine_problems, probe_machine
from tuitrain.launch.script import is_script, resolved_script, script_env, script_note, script_program
from tuitrain.launch.threads import cpu_threads
from tuitrain.profile import Problem
from tuitrain.profile.accelerate_names import CPU_RANKS_MARK
from tuitrain.profile.implied import implied_notes, mixed_precision
from tuitrain.profile.rules.strategies import FSDP_ALONE_FIX, fsdp_world_of_one

ENGINE_MODULE = "tuitrain.engine"
MACHINES_NOT_BUILT = "a profile that lists [[distributed.machines]] is planned machine by machine, not as one machine's run"


def pasteable_command(env: dict[str, str], argv: list[str]) -> str:
    """`K=V … accelerate launch …` for an argv of `python -m accelerate.commands.launch …`: what a user could
    paste to run it without tuitrain."""
    pairs = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (pairs + " " if pairs else "") + shlex.join(["accelerate", "launch", *argv[3:]])


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

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def record_fields(self) -> dict[str, Any]:
        """What run.json keeps of this plan: the supervisor launches from it."""
        return {"argv": self.argv, "env": self.env, "num_processes": self.num_processes,
                "num_machines": self.num_machines, "main_process_port": self.main_process_port,
                "accelerator": self.accelerator}

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
        }


def choose_accelerator(profile: Mapping[str, Any], hardware: Hardware, file: str) -> tuple[str, list[str], list[Problem]]:
    asked = profile["hardware"]["accelerator"]
    dist = profile["distributed"]
    notes: list[str] = []
    problems: list[Problem] = []
    if asked == "auto":
        sharded = dist["strategy"] in ("fsdp", "deepspeed")
        if hardware.has_cuda and profile["hardware"].get("gpus") == []:
            chosen, why = "cpu", "hardware.gpus = [] hides every GPU"
        elif hardware.has_cuda:
            chosen, why = "cuda", f"{len(hardware.gpus)} NVIDIA GPU(s) found"
        elif hardware.mps and dist["num_processes"] == 1 and not sharded:
            chosen, why = "mps", "Apple MPS found and one process asked"
        else:
            chosen = "cpu"
            why = "no NVIDIA GPU found" + (" (MPS runs one process, and no FSDP or DeepSpeed)" if hardware.mps else "")
        notes.append(f"accelerator auto → {chosen}: {why}")
        return chosen, notes, problems
    return asked, notes, problems


def distributed_type(profile: Mapping[str, Any]) -> str:
    """accelerate's distributed_type for a profile. CPU ranks are MULTI_GPU with every GPU hidden:
    on a machine without GPUs, MULTI_CPU (and --cpu) start ONE process, MULTI_GPU starts real
    gloo ranks."""
    dist = profile["distributed"]
    if dist["strategy"] == "fsdp":
        return "FSDP"
    if dist["strategy"] == "deepspeed":
        return "DEEPSPEED"
    multi = dist["num_processes"] > 1 or dist["num_machines"] > 1
    return "MULTI_GPU" if multi else "NO"


def profile_folder(file: str) -> Path | None:
    """The folder a profile's relative paths start from ("profile" or "<...>" names none)."""
    if not file or file.startswith("<") or file == "profile":
        return None
    return Path(file).expanduser().resolve().parent


def deepspeed_json_path(profile: Mapping[str, Any], base_dir: Path | None) -> Path | None:
    ds = profile["distributed"].get("deepspeed") or {}
    raw = ds.get("config_file")
    if profile["distributed"]["strategy"] != "deepspeed" or not raw:
        return None
    path = Path(raw).expanduser()
    return path if path.is_absolute() else (base_dir or Path.cwd()) / path


def accelerate_config(profile: Mapping[str, Any], accelerator: str, gpu_ids: list[str] | str,
                      deepspeed_json: Path | None = None) -> dict[str, Any]:
    """The accelerate config for a profile on a device kind ("cuda", "mps", "cpu"; "auto" for a
    config written for wherever it will run). `gpu_ids`: "all", or the CUDA device numbers."""
    dist = profile["distributed"]
    kind = distributed_type(profile)
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": kind,
        "downcast_bf16": "yes" if dist.get("downcast_bf16") else "no",
        "gpu_ids": gpu_ids if isinstance(gpu_ids, str) else (",".join(gpu_ids) or "all"),
        "machine_rank": dist["machine_rank"],
        "main_training_function": "main",
        "mixed_precision": mixed_precision(profile)[0],  # the one the Trainer trains in: [training] may say it
        "num_machines": dist["num_machines"],
        "num_processes": dist["num_processes"] * dist["num_machines"],
        "rdzv_backend": dist["rdzv_backend"],
        "same_network": bool(dist.get("same_network", True)),
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": accelerator == "cpu" and kind != "MULTI_GPU",
    }
    for key in ("main_process_ip", "main_process_port"):
        if dist.get(key) is not None:
            config[key] = dist[key]
    if kind == "FSDP":
        config["fsdp_config"] = fsdp_section(dist.get("fsdp") or {})
    if kind == "DEEPSPEED":
        ds = dist.get("deepspeed") or {}
        config["deepspeed_config"] = deepspeed_section(ds, str(deepspeed_json) if deepspeed_json else None)
        if dist["num_machines"] > 1:
            # Without it accelerate hands several machines to DeepSpeed's own runner (pdsh over ssh
            # from machine 0); tuitrain starts every machine itself, as torchrun does.
            config["deepspeed_config"]["deepspeed_multinode_launcher"] = "standard"
        if ds.get("config_file"):
            # accelerate refuses mixed_precision next to a DeepSpeed JSON: the JSON says it
            del config["mixed_precision"]
    return config


def export_accelerate_config(profile: Mapping[str, Any], file: str = "profile",
                             processes_set: bool = True) -> tuple[dict[str, Any], list[str]]:
    """The accelerate config of a profile with no machine checks, and comment lines that say what
    the YAML alone cannot (for `tuitrain profile export-accelerate`). `processes_set`: whether the
    profile itself sets distributed.num_processes (else the launch picks one per selected GPU)."""
    hw = profile["hardware"]
    dist = profile["distributed"]
    accelerator = hw["accelerator"]
    # CPU ranks use no GPU: gpu_ids would make accelerate set CUDA_VISIBLE_DEVICES to them
    gpus = hw.get("gpus") if accelerator != "cpu" else None
    gpu_ids = ",".join(str(g) for g in gpus) if gpus else "all"
    base_dir = profile_folder(file)
    per_gpu = not processes_set and dist["strategy"] != "single" and accelerator in ("auto", "cuda")
    if per_gpu and gpus and len(gpus) > 1:
        profile = {**profile, "distributed": {**dist, "num_processes": len(gpus)}}
    config = accelerate_config(profile, accelerator, gpu_ids, deepspeed_json_path(profile, base_dir))
    header = [f"accelerate config of {file} (tuitrain profile export-accelerate)",
              "use it with: accelerate launch --config_file THIS_FILE your_script.py"]
    if per_gpu and gpus and len(gpus) > 1:
        header.append(f"num_processes: one per selected GPU ({len(gpus)} per machine), as `tuitrain run` starts "
                      "when distributed.num_processes is not set")
    elif per_gpu and not gpus:
        header.append("num_processes: not set in the profile, so `tuitrain run` starts one per GPU of the machine "
                      "it runs on; this file says 1: set distributed.num_processes for a fixed count")
    if accelerator == "cpu" and config["distributed_type"] == "MULTI_GPU":
        header.append(CPU_RANKS_MARK + " (import-accelerate reads this line back)")
        header.append("CPU ranks: launch with CUDA_VISIBLE_DEVICES= (empty) so that MULTI_GPU starts gloo ranks;")
        header.append("accelerate's MULTI_CPU / --cpu would start one process")
    if gpus:
        header.append(f"gpu_ids are CUDA numbers; set CUDA_DEVICE_ORDER={hw['device_order']} so they match "
                      "the physical (nvidia-smi) indices")
    if dist["strategy"] == "fsdp" and not (dist.get("fsdp") or {}).get("transformer_layer_cls_to_wrap"):
        header.append("fsdp: no layer class given: accelerate wraps the model's _no_split_modules")
    if dist["strategy"] == "fsdp" and accelerator == "cpu":
        header.append("fsdp on the CPU: accelerate 1.15 runs plain DDP instead (no GPU, no FSDP plugin)")
    return config, header


def _strategy_note(profile: Mapping[str, Any], accelerator: str, total: int) -> str:
    dist = profile["distributed"]
    strategy = dist["strategy"]
    where = {"cuda": "CUDA GPU", "mps": "Apple MPS", "cpu": "CPU"}.get(accelerator, accelerator)
    if strategy == "single":
        return f"strategy single: one process on the {where}"
    if strategy == "ddp" and accelerator == "cpu":
        return (f"strategy ddp: {total} gloo ranks on the CPU (accelerate's MULTI_GPU type with every GPU hidden; "
                "MULTI_CPU and --cpu would start one process)")
    if strategy == "ddp":
        return f"strategy ddp: {total} process(es), one per {where}, NCCL"
    if strategy == "fsdp":
        fsdp = dist.get("fsdp") or {}
        version = fsdp.get("version", 1)
        text = (f"strategy fsdp (FSDP{version}): {total} process(es), "
                f"{fsdp.get('sharding_strategy', 'full_shard')}, wrap {fsdp.get('auto_wrap_policy', 'transformer')}")
        if fsdp.get("auto_wrap_policy", "transformer") == "transformer" and not fsdp.get("transformer_layer_cls_to_wrap"):
            text += " (layer class: the model's _no_split_modules, read by accelerate in each rank)"
        alone = fsdp_world_of_one(fsdp, total)
        return f"{text}; {alone} ({FSDP_ALONE_FIX})" if alone else text
    ds = dist.get("deepspeed") or {}
    if ds.get("config_file"):
        return f"strategy deepspeed: {total} process(es), settings from {ds['config_file']}"
    return (f"strategy deepspeed: {total} process(es), ZeRO stage {ds.get('zero_stage', 2)}, "
            f"optimizer offload {ds.get('offload_optimizer_device', 'none')}, "
            f"parameter offload {ds.get('offload_param_device', 'none')}")


def plan_launch(profile: dict[str, Any], hardware: Hardware, run_dir: Path, file: str = "profile",
                *, machine: MachineFacts | None = None, resume_from: Path | None = None) -> LaunchPlan:
    """`profile` is a profile with defaults filled in (tuitrain.profile.profile_with_defaults).
    `machine`: the facts of this machine the checks need (None: probed now). `resume_from`: the
    checkpoint a [script] is told to resume from (the engine reads it from run.json)."""
    dist = profile["distributed"]
    accelerator, notes, problems = choose_accelerator(profile, hardware, file)
    if dist.get("machines"):
        # one machine's plan would start a wrong, local run: machines are planned by launch/machines.py (the
        # machines backend); this guards a caller that skipped the chooser (tuitrain.backends.for_profile)
        problems.append(Problem(file, "distributed.machines", MACHINES_NOT_BUILT,
                                "plan and start it with `tuitrain plan PROFILE` / `tuitrain run PROFILE`"))
    total = dist["num_processes"] * dist["num_machines"]
    env: dict[str, str] = {"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
    if accelerator == "cuda":
        # The raw selection (None: every GPU), so FASTEST_FIRST can order "all GPUs" itself.
        mapping = map_devices(hardware.gpus, profile["hardware"].get("gpus"), profile["hardware"]["device_order"])
        env.update(mapping.env)
        notes += [*mapping.lines, *mapping.notes]
    elif accelerator == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # hide any GPU: the CPU run the Trainer docs describe
    elif accelerator == "mps" and profile["hardware"].get("mps_fallback"):
        env["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"  # FSDP/DeepSpeed on MPS: refused by machine_problems
    cores = getattr(hardware, "physical_cores", 0) or getattr(hardware, "cpu_count", 0)
    thread_env, thread_note = cpu_threads(profile, cores, dist["num_processes"])
    env.update(thread_env)

    base_dir = profile_folder(file)
    ds_json = deepspeed_json_path(profile, base_dir)
    facts = machine if machine is not None else probe_machine(profile)
    problems += machine_problems(profile, accelerator, facts, file, deepspeed_json=ds_json,
                                 cpu_count=getattr(hardware, "cpu_count", None))
    problems += hardware_preflight(profile, hardware, file=file, accelerator=accelerator)

    port = dist.get("main_process_port")
    config_path = run_dir / "accelerate.yaml"
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config_path)]
    if port is not None:
        argv += ["--main_process_port", str(port)]
    elif total > 1:
        notes.append("main_process_port: a free port is picked at launch (none set in the profile)")
    cwd = None
    if is_script(profile):
        script = resolved_script(profile["script"], base_dir or Path.cwd())
        argv += script_program(script, resume_from)
        # the PYTHONPATH tuitrain runs with is kept behind the hook's folder, as a plain launch would see it
        env.update(script_env(script, os.environ.get("PYTHONPATH")))
        cwd = script["workdir"]
        notes.append(script_note(script))
    else:
        argv += ["-m", ENGINE_MODULE, str(run_dir)]
    notes.insert(0, _strategy_note(profile, accelerator, total))
    notes += implied_notes(profile)
    notes.append(thread_note)
    notes.append(f"--config_file {config_path}: accelerate's default config ({default_config_path()}) "
                 "is never used unseen (accelerate #1133)")
    return LaunchPlan(
        argv=argv,
        env=env,
        # gpu_ids "all": the GPUs are chosen by CUDA_VISIBLE_DEVICES above. accelerate launch would
        # set CUDA_VISIBLE_DEVICES to any other gpu_ids value, replacing the physical selection.
        accelerate_config=accelerate_config(profile, accelerator, "all", ds_json),
        num_processes=total,
        num_machines=dist["num_machines"],
        accelerator=accelerator,
        main_process_port=port,
        notes=notes,
        problems=problems,
        strategy=dist["strategy"],
        cwd=cwd,
    )
