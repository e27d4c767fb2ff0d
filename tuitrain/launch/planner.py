"""The one planner: one machine's part of a run, from the profile (with defaults), that machine's place in the run
(`MachineRole`: its rank among how many machines, its processes and GPUs, where they meet, its run folder) and,
when the plan is made on that machine, its hardware. Every backend asks it: the local plan (launch.plan.plan_launch)
is its answer for the one machine a profile describes, a multi-machine plan (launch.machines.plan_machines) its
answer for each listed machine, and a Slurm node (slurm.agent.plan_node) its answer for node N of the job.

Where the plan is made is the one thing that changes the answers, and `hardware` says which:

- given, the machine is this one: its GPUs are mapped (launch.devices.devices_here), its cores share out the
  threads, the PYTHONPATH tuitrain runs with is kept behind a script's hook, and its checks run (the installed
  packages, the port, the GPUs: `problems`);
- None, the machine is elsewhere and nothing of it is known: its devices are read from the profile alone
  (devices_elsewhere), what only that machine knows is filled in on arrival (`arrival_env`: its threads from its
  cores, its own hook's path; asked by its agent, runs.keeper.node_agent), and `tuitrain doctor` checks it; its command
  spells out its place in the run (a person reads one per machine).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, cast

from tuitrain.hardware import Hardware
from tuitrain.hardware.na import NA
from tuitrain.hardware.preflight import check as hardware_preflight
from tuitrain.hardware.preflight import selected_devices
from tuitrain.launch.accelerate_config import accelerate_config
from tuitrain.launch.devices import Devices, devices_elsewhere, devices_here
from tuitrain.launch.flight_recorder import flight_recorder_env
from tuitrain.launch.memory_fit import GpuRoom, MemoryCheck, memory_check
from tuitrain.launch.model_source import ModelConfig, deepspeed_config, profile_model
from tuitrain.launch.preflight import MachineFacts, machine_problems, probe_machine, torch_problem
from tuitrain.launch.script import (
    local_hook_path,
    resolved_script,
    script_env,
    script_note,
    script_program,
    script_settings,
)
from tuitrain.launch.threads import cpu_threads
from tuitrain.profile import Problem
from tuitrain.profile.rules.strategies import FSDP_ALONE_FIX, fsdp_world_of_one
from tuitrain.profile.settings import Settings
from tuitrain.rundir.script_env import SCRIPT_ENV

ENGINE_MODULE = "tuitrain.engine"
LAUNCH_MODULE = "accelerate.commands.launch"
DIRECT_MODULE = "tuitrain.engine.direct_launch"  # one process on one machine: the rank is started directly
ACCELERATE_LAUNCH_ENV = "TUITRAIN_ACCELERATE_LAUNCH"  # "1": a run of one process goes through accelerate launch too
FREE_PORT_NOTE = "main_process_port: a free port is picked at launch (none set in the profile)"


@dataclass(frozen=True)
class MachineRole:
    """One machine's place in a run, and where it keeps its part of the run."""

    folder: str  # its run directory as its ranks see it: accelerate.yaml's folder, the engine's argument
    rank: int = 0
    machines: int = 1
    processes: int = 1  # on this machine
    main_ip: str | None = None
    port: int | None = None
    gpus: list[Any] | int | None = None  # as the profile selects them for this machine (a count: any N free; None: all)
    interface: str | None = None  # the network interface its ranks meet the others' over
    python: str = sys.executable
    relative_to: str | None = None  # where a script's relative path starts when the profile has no folder (None: here)
    scheduler_gpus: bool = False  # a scheduler chose the GPUs it sees (Slurm's CUDA_VISIBLE_DEVICES): all are the run's


@dataclass(frozen=True)
class MachinePart:
    """What one machine runs (`argv` with `env` added), and what the planner says of it."""

    argv: list[str]
    env: dict[str, str]
    accelerate_config: dict[str, Any]
    accelerator: str
    processes: int
    cwd: str | None  # where its ranks run: a [script]'s workdir (None: where the launch starts)
    device_notes: list[str]
    thread_note: str
    launch_notes: list[str] = field(default_factory=list)  # what the launch decides there: a free port, a script's hook
    interface_note: str | None = None
    problems: list[Problem] = field(default_factory=list)  # this machine's checks (made only where it is planned)
    memory: MemoryCheck | None = None  # its GPUs' memory for the run (planned here, on CUDA, with the model's config)
    accelerator_why: str = ""  # how `auto` chose it (launch.devices.Devices.why); "" where the profile asked


def role_of(settings: Settings, run_dir: Path) -> MachineRole:
    """The role a profile gives the machine that runs it by itself (its distributed.machine_rank of num_machines)."""
    dist = settings["distributed"]
    return MachineRole(folder=str(run_dir), rank=dist["machine_rank"], machines=dist["num_machines"],
                       processes=dist["num_processes"], main_ip=dist["main_process_ip"],
                       port=dist["main_process_port"], gpus=settings["hardware"]["gpus"])


def machine_settings(settings: Settings, role: MachineRole) -> Settings:
    """The settings as this machine runs them: its rank, the machines, its processes and GPUs, where they meet."""
    hardware = settings["hardware"]
    gpus = None if role.scheduler_gpus and hardware["accelerator"] != "cpu" else role.gpus
    mine: dict[str, Any] = {
        **settings,
        "hardware": {**hardware, "gpus": gpus},
        "distributed": {**settings["distributed"], "machine_rank": role.rank, "num_machines": role.machines,
                        "num_processes": role.processes, "main_process_ip": role.main_ip, "main_process_port": role.port}}
    return cast(Settings, mine)


def profile_folder(file: str) -> Path | None:
    """The folder a profile's relative paths start from ("profile" or "<...>" names none)."""
    if not file or file.startswith("<") or file == "profile":
        return None
    return Path(file).expanduser().resolve().parent


def deepspeed_json_path(profile: Settings, base_dir: Path | None) -> Path | None:
    ds = profile["distributed"]["deepspeed"] or {}
    raw = ds.get("config_file")
    if profile["distributed"]["strategy"] != "deepspeed" or not raw:
        return None
    path = Path(raw).expanduser()
    return path if path.is_absolute() else (base_dir or Path.cwd()) / path


def pasteable_command(env: dict[str, str], argv: list[str]) -> str:
    """`K=V … accelerate launch …` for an argv of `python -m accelerate.commands.launch …` (or of
    tuitrain.engine.direct_launch, which takes the same arguments): what a user could paste to run it without tuitrain."""
    pairs = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (pairs + " " if pairs else "") + shlex.join(["accelerate", "launch", *argv[3:]])


def interface_env(name: str | None) -> dict[str, str]:
    """GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME for one exact interface (NCCL matches prefixes unless given '=')."""
    if not name:
        return {}
    return {"GLOO_SOCKET_IFNAME": name, "NCCL_SOCKET_IFNAME": f"={name}"}


def interface_note(name: str) -> str:
    return (f"network interface {name}: GLOO_SOCKET_IFNAME={name}, NCCL_SOCKET_IFNAME=={name} "
            "(the '=' asks NCCL for this name exactly, not every name it begins)")


def strategy_note(profile: Settings, accelerator: str, total: int) -> str:
    """What the run's strategy does with its `total` processes on `accelerator`: one line, the plan's first."""
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
        fsdp = dist["fsdp"] or {}
        version = fsdp.get("version", 1)
        text = (f"strategy fsdp (FSDP{version}): {total} process(es), "
                f"{fsdp.get('sharding_strategy', 'full_shard')}, wrap {fsdp.get('auto_wrap_policy', 'transformer')}")
        if fsdp.get("auto_wrap_policy", "transformer") == "transformer" and not fsdp.get("transformer_layer_cls_to_wrap"):
            text += " (layer class: the model's _no_split_modules, read by accelerate in each rank)"
        alone = fsdp_world_of_one(fsdp, total)
        return f"{text}; {alone} ({FSDP_ALONE_FIX})" if alone else text
    ds = dist["deepspeed"] or {}
    if ds.get("config_file"):
        return f"strategy deepspeed: {total} process(es), settings from {ds['config_file']}"
    return (f"strategy deepspeed: {total} process(es), ZeRO stage {ds.get('zero_stage', 2)}, "
            f"optimizer offload {ds.get('offload_optimizer_device', 'none')}, "
            f"parameter offload {ds.get('offload_param_device', 'none')}")


def launch_module(role: MachineRole, environ: Mapping[str, str]) -> str:
    """What starts a machine's ranks: `accelerate launch`, or for a run of one process on one machine the rank itself
    (tuitrain.engine.direct_launch: the environment accelerate launch would give it, without its second Python)."""
    if role.machines == 1 and role.processes == 1 and environ.get(ACCELERATE_LAUNCH_ENV) != "1":
        return DIRECT_MODULE
    return LAUNCH_MODULE


def direct_note() -> str:
    return ("one process: started as its own rank, with the environment `accelerate launch` would give it and the same "
            f"accelerate.yaml (no launcher process; {ACCELERATE_LAUNCH_ENV}=1 starts it through accelerate launch)")


def _launch_argv(role: MachineRole, here: bool) -> list[str]:
    module = launch_module(role, os.environ if here else {})
    argv = [role.python, "-m", module, "--config_file", f"{role.folder}/accelerate.yaml"]
    if not here:  # read by a person, one command per machine: its place in the run on the command line too
        argv += ["--machine_rank", str(role.rank), "--num_machines", str(role.machines)]
        if role.main_ip:
            argv += ["--main_process_ip", str(role.main_ip)]
    if role.port is not None:
        argv += ["--main_process_port", str(role.port)]
    return argv


def plan_machine(settings: Settings, role: MachineRole, hardware: Hardware | None, file: str = "profile",
                 *, facts: MachineFacts | None = None, resume_from: Path | None = None) -> MachinePart:
    """One machine's part of a run. `settings`: a profile with defaults (tuitrain.profile.settings_with_defaults).
    `hardware`: this machine's, when the plan is made on it (None: the machine is elsewhere; see the module's
    docstring). `facts`: what its checks need (None: probed now, when here). `resume_from`: the checkpoint a
    [script] is told to resume from (the engine reads it from run.json)."""
    here = hardware is not None
    mine = machine_settings(settings, role)
    base_dir = profile_folder(file)
    found = (facts if facts is not None else probe_machine(mine, base_dir)) if hardware is not None else None
    devices: Devices = devices_here(mine, hardware, found.torch) if hardware is not None and found is not None \
        else devices_elsewhere(mine)
    ds_json = deepspeed_json_path(mine, base_dir)
    cores = (getattr(hardware, "physical_cores", 0) or getattr(hardware, "cpu_count", 0)) if here else 0
    thread_env, thread_note = cpu_threads(mine, cores, role.processes)
    device_env = devices.env
    if role.scheduler_gpus and devices.accelerator == "cuda":  # the scheduler's CUDA_VISIBLE_DEVICES stays
        device_env = {k: v for k, v in device_env.items() if k != "CUDA_VISIBLE_DEVICES"}
    env = {"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", **device_env, **interface_env(role.interface),
           **thread_env, **flight_recorder_env(role.folder, devices.accelerator, os.environ if here else {})}
    problems: list[Problem] = []
    memory: MemoryCheck | None = None
    if hardware is not None and found is not None:
        problems += machine_problems(mine, devices.accelerator, found, file, deepspeed_json=ds_json,
                                     cpu_count=getattr(hardware, "cpu_count", None))
        cpu_torch = torch_problem(file, mine, devices.accelerator, found, hardware.real_gpus,
                                  str(hardware.driver_version) if hardware.driver_version is not NA else None)
        problems += [cpu_torch] if cpu_torch is not None else []
        problems += hardware_preflight(mine, hardware, file=file, accelerator=devices.accelerator)
        if devices.accelerator == "cuda" and found.model is not None:
            memory = memory_here(mine, role, hardware, found.model, file, ds_json)
            problems += memory.problems
    argv = _launch_argv(role, here)
    launch_notes: list[str] = []
    if here and role.port is None and role.processes * role.machines > 1:
        launch_notes.append(FREE_PORT_NOTE)
    if here and argv[2] == DIRECT_MODULE:
        launch_notes.append(direct_note())
    cwd = None
    given_script = script_settings(mine)
    if given_script is not None:
        script = resolved_script(given_script, base_dir or Path(role.relative_to or os.getcwd()))
        argv += script_program(script, resume_from)
        # here, the PYTHONPATH tuitrain runs with is kept behind the hook's folder, as a plain launch would see it;
        # elsewhere, that machine's agent puts its own tuitrain's hook folder first (script_env's is this one's)
        env.update(script_env(script, os.environ.get("PYTHONPATH") if here else None))
        cwd = script["workdir"]
        if here:
            launch_notes.append(script_note(script))
    else:
        argv += ["-m", ENGINE_MODULE, role.folder]
    return MachinePart(
        argv=argv, env=env,
        # gpu_ids "all": the GPUs are chosen by CUDA_VISIBLE_DEVICES above. accelerate launch would
        # set CUDA_VISIBLE_DEVICES to any other gpu_ids value, replacing the physical selection.
        accelerate_config=accelerate_config(mine, devices.accelerator, "all", ds_json),
        accelerator=devices.accelerator, accelerator_why=devices.why, processes=role.processes, cwd=cwd,
        device_notes=devices.notes,
        thread_note=thread_note, launch_notes=launch_notes,
        interface_note=interface_note(role.interface) if role.interface else None, problems=problems, memory=memory)


def memory_here(settings: Settings, role: MachineRole, hardware: Hardware, model: ModelConfig, file: str,
                deepspeed_json: Path | None) -> MemoryCheck:
    """Each GPU's memory for the run against the GPUs it takes on this machine (tuitrain.launch.memory)."""
    shape, setup = profile_model(settings, model, role.processes, role.machines,
                                 deepspeed_config(settings, deepspeed_json))
    rooms = []
    for gpu, mig in selected_devices(settings, hardware):
        total, used = (mig.memory_total, mig.memory_used) if mig is not None else (gpu.memory_total, gpu.memory_used)
        name = f"GPU {gpu.index}" + (f" (MIG {mig.profile})" if mig is not None else f" ({gpu.name})" if gpu.name else "")
        free = total - used if isinstance(total, int) and isinstance(used, int) else None
        rooms.append(GpuRoom(name, free, total if isinstance(total, int) else None))
    return memory_check(shape, setup, rooms, file, model.where)


def arrival_env(env: Mapping[str, str], cores: int, processes: int) -> dict[str, str]:
    """The environment of a machine planned elsewhere (`plan_machine` with no hardware), completed on that machine
    by what only it knows: OMP_NUM_THREADS from its physical `cores` shared by its `processes` (unless the profile
    fixed it: then the plan has it), and for a script its own tuitrain's hook folder first on PYTHONPATH (tuitrain
    may be installed elsewhere there). The plan made on the machine itself gets the same from the same rules."""
    out = dict(env)
    if "OMP_NUM_THREADS" not in out:
        out.update(cpu_threads({"hardware": {}}, cores, processes)[0])
    if SCRIPT_ENV in out:
        out["PYTHONPATH"] = local_hook_path(out.get("PYTHONPATH"))
    return out
