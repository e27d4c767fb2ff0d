"""Several machines: a profile with [[distributed.machines]] → one MachinePlan per machine.

Pure: the same profile gives the same plans, with nothing probed (the machines are elsewhere; what only they can
tell is checked by `tuitrain doctor`, tuitrain/remote/doctor.py). Each machine runs `accelerate launch` with its own
`--machine_rank`, and every machine the same `--num_machines`, `--main_process_ip` and `--main_process_port`.

How each machine's devices are read from the profile: `hardware.accelerator` is the same everywhere; with `auto`, a
machine whose GPUs are listed (its own `gpus`, else `hardware.gpus`) runs on them with CUDA, `gpus = []` hides every
GPU (CPU ranks), and a machine with no GPUs listed is planned for CUDA on all of its GPUs (a note says so). Listed GPU
indices are NVML's (nvidia-smi's), so they go out under CUDA_DEVICE_ORDER=PCI_BUS_ID in the order given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.launch.plan import (
    ENGINE_MODULE,
    _strategy_note,
    accelerate_config,
    deepspeed_json_path,
    pasteable_command,
    profile_folder,
)
from tuitrain.launch.script import is_script, resolved_script, script_env, script_program
from tuitrain.launch.threads import cpu_threads
from tuitrain.profile import Problem
from tuitrain.profile.implied import implied_notes
from tuitrain.profile.rules.machines import (
    listed_machines,
    machine_gpus,
    machine_processes,
    machines_port_problem,
)

LAUNCH_MODULE = "accelerate.commands.launch"


@dataclass(frozen=True)
class MachinePlan:
    """What one machine runs: `argv` in `workdir` with `env` added, under `python` there."""

    host: str
    machine_rank: int
    python: str
    workdir: str
    argv: list[str]
    env: dict[str, str]
    accelerate_config: dict[str, Any]
    num_processes: int  # on this machine
    accelerator: str
    node_dir: str  # this machine's part of the run directory (relative: to workdir)
    network_interface: str | None = None
    notes: list[str] = field(default_factory=list)

    def command_line(self) -> str:
        """The command a user could paste on that machine (in `workdir`) to run its part without tuitrain."""
        return pasteable_command(self.env, self.argv)

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "machine_rank": self.machine_rank,
            "python": self.python,
            "workdir": self.workdir,
            "node_dir": self.node_dir,
            "argv": self.argv,
            "command": self.command_line(),
            "env": self.env,
            "accelerate_config": self.accelerate_config,
            "num_processes": self.num_processes,
            "accelerator": self.accelerator,
            "network_interface": self.network_interface,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class MachinesPlan:
    """Every machine's plan, and what is true of them all."""

    machines: list[MachinePlan]
    num_machines: int
    num_processes: int  # in all
    main_process_ip: str | None
    main_process_port: int | None
    strategy: str
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    ssh_config: str | None = None  # an ssh_config for `ssh -F` (None: the user's own)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def accelerate_config(self) -> dict[str, Any]:
        """The main machine's (the others differ in machine_rank only)."""
        return self.machines[0].accelerate_config if self.machines else {}

    def record_fields(self) -> dict[str, Any]:
        """What run.json keeps of this plan: the home supervisor starts each machine from it."""
        return {"argv": [], "env": {}, "num_processes": self.num_processes, "num_machines": self.num_machines,
                "main_process_port": self.main_process_port,
                "accelerator": self.machines[0].accelerator if self.machines else "cpu",
                "machines": [m.to_dict() for m in self.machines], "ssh_config": self.ssh_config}

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_machines": self.num_machines,
            "num_processes": self.num_processes,
            "main_process_ip": self.main_process_ip,
            "main_process_port": self.main_process_port,
            "strategy": self.strategy,
            "machines": [m.to_dict() for m in self.machines],
            "notes": self.notes,
            "problems": [p.to_dict() for p in self.problems],
        }


def has_machines(settings: Mapping[str, Any]) -> bool:
    """Whether a profile (raw or with defaults) lists [[distributed.machines]]."""
    dist = settings.get("distributed")
    return isinstance(dist, Mapping) and bool(listed_machines(dist))


def interface_env(name: str | None) -> dict[str, str]:
    """GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME for one exact interface (NCCL matches prefixes unless given '=')."""
    if not name:
        return {}
    return {"GLOO_SOCKET_IFNAME": name, "NCCL_SOCKET_IFNAME": f"={name}"}


def _devices(settings: Mapping[str, Any], machine: Mapping[str, Any]) -> tuple[str, dict[str, str], list[str]]:
    """(accelerator, device environment, notes) of one machine."""
    hardware = settings["hardware"]
    asked = hardware["accelerator"]
    gpus = machine_gpus(machine, hardware)
    if asked == "cpu" or (asked == "auto" and gpus == []):
        why = "hardware.gpus = [] hides every GPU" if asked == "auto" else "accelerator cpu"
        return "cpu", {"CUDA_VISIBLE_DEVICES": ""}, [f"CPU ranks ({why})"]
    if asked == "mps":
        env = {"PYTORCH_ENABLE_MPS_FALLBACK": "1"} if hardware.get("mps_fallback") else {}
        return "mps", env, []
    if gpus:
        names = ", ".join(str(g) for g in gpus)
        notes = [f"GPUs {names} (NVML numbers, as nvidia-smi shows them) → cuda:0…cuda:{len(gpus) - 1}"]
        return "cuda", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus)}, notes
    notes = ["every GPU of the machine"]
    if asked == "auto":
        notes = [("accelerator auto → cuda, every GPU of the machine (its GPUs are not known here: list them with "
                  "gpus = [...] or set hardware.accelerator)")]
    return "cuda", {"CUDA_DEVICE_ORDER": hardware["device_order"]}, notes


def node_dir(run_id: str, machine_rank: int) -> str:
    """Where a machine keeps its part of a run, under its workdir: distinct per machine even where the
    machines share a file system (as home folders on NFS do)."""
    return f".tuitrain/runs/{run_id}/machine-{machine_rank}"


def plan_machines(settings: Mapping[str, Any], run_dir: Path, file: str = "profile", *,
                  processes_set: bool = True, local_python: str | None = None,
                  local_cwd: str | None = None, ssh_config: str | None = None,
                  resume_from: Path | None = None) -> MachinesPlan:
    """`settings`: a profile with defaults (tuitrain.profile.profile_with_defaults) that lists machines.
    `run_dir`: the home run directory; each machine keeps its part in `node_dir(run id, rank)` under its workdir.
    `processes_set`: whether the profile itself sets distributed.num_processes (else a machine with GPUs listed runs
    one process per GPU). `local_python` / `local_cwd`: the defaults of a machine's `python` and `workdir` (this
    interpreter, this folder). `resume_from`: the checkpoint a [script] is told to resume from."""
    dist = settings["distributed"]
    counting = dist if processes_set else {k: v for k, v in dist.items() if k != "num_processes"}
    machines = listed_machines(dist)
    count = len(machines)
    python_default = local_python or sys.executable
    cwd_default = local_cwd or os.getcwd()
    ip = dist.get("main_process_ip")
    port = dist.get("main_process_port")
    problems: list[Problem] = []
    no_port = machines_port_problem(file, count, port, "error")
    if no_port is not None:
        problems.append(no_port)
    ds_json = deepspeed_json_path(settings, profile_folder(file))
    plans: list[MachinePlan] = []
    total = 0
    for rank, machine in enumerate(machines):
        processes = machine_processes(machine, counting, settings["hardware"]) or 1
        total += processes
        accelerator, device_env, notes = _devices(settings, machine)
        interface = machine.get("network_interface") or dist.get("network_interface")
        thread_env, thread_note = cpu_threads(settings, 0, processes)  # the machine's cores are not known here
        env = {"PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", **device_env, **interface_env(interface),
               **thread_env}
        notes.append(thread_note)
        if interface:
            notes.append(f"network interface {interface}: GLOO_SOCKET_IFNAME={interface}, NCCL_SOCKET_IFNAME=={interface} "
                         "(the '=' asks NCCL for this name exactly, not every name it begins)")
        mine = {**settings, "distributed": {**dist, "machine_rank": rank, "num_machines": count,
                                            "num_processes": processes}}
        python = machine.get("python") or python_default
        workdir = machine.get("workdir") or cwd_default
        folder = node_dir(Path(run_dir).name, rank)
        if workdir.startswith("/"):
            folder = f"{workdir.rstrip('/')}/{folder}"  # absolute where it can be: `ps` then shows which run it is
        argv = [python, "-m", LAUNCH_MODULE, "--config_file", f"{folder}/accelerate.yaml",
                "--machine_rank", str(rank), "--num_machines", str(count)]
        if ip:
            argv += ["--main_process_ip", str(ip)]
        if port is not None:
            argv += ["--main_process_port", str(port)]
        if is_script(settings):
            # the same script path on every machine (as torchrun's), run in that machine's workdir; each
            # machine's agent puts its own tuitrain's hook folder on PYTHONPATH (script_env's is this machine's)
            script = resolved_script(settings["script"], profile_folder(file) or Path(cwd_default))
            argv += script_program(script, resume_from)
            env.update(script_env(script, None))
        else:
            argv += ["-m", ENGINE_MODULE, folder]
        plans.append(MachinePlan(
            host=str(machine.get("host")), machine_rank=rank, python=python,
            workdir=workdir, argv=argv, env=env,
            accelerate_config=accelerate_config(mine, accelerator, "all", ds_json),
            num_processes=processes, accelerator=accelerator, node_dir=folder, network_interface=interface,
            notes=notes))
    notes = []
    if plans:
        notes.append(_strategy_note(settings, plans[0].accelerator, total))
        notes += implied_notes(settings)
        notes.append(f"{count} machine(s), {total} process(es) in all; the main machine (rank 0) is {plans[0].host}"
                     + (f", reached by the others at {ip}:{port}" if ip and port is not None else ""))
    if is_script(settings) and plans:
        script = settings["script"]
        shown = f"module {script['module']}" if script.get("module") else resolved_script(script, Path(cwd_default))["path"]
        notes.append(f"script mode: every machine runs {shown} in its workdir, with its own tuitrain's hook on "
                     "PYTHONPATH (the script's path is the same on every machine)")
    notes.append("`tuitrain run` starts every machine over ssh (a tuitrain agent on each runs its command in its "
                 "workdir and sends its logs home); `tuitrain doctor` checks the machines first")
    return MachinesPlan(machines=plans, num_machines=count, num_processes=total, main_process_ip=ip,
                        main_process_port=port, strategy=dist["strategy"], notes=notes, problems=problems,
                        ssh_config=ssh_config)
