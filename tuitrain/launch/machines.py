"""Several machines: a profile with [[distributed.machines]] → one MachinePlan per machine.

Pure: the same profile gives the same plans, with nothing probed (the machines are elsewhere; what only they can
tell is checked by `tuitrain doctor`, tuitrain/remote/doctor.py). Each machine's part is the one planner's answer for
it (tuitrain/launch/planner.py, with no hardware: how its devices are read from the profile is
launch.devices.devices_elsewhere's); this module adds what only several machines need: which machines and how many
processes each (profile.rules.machines), where each keeps its part of the run (`node_dir`), the rendezvous port they
must share (`machines_port_problem`) and the run's notes. Every machine runs `accelerate launch` with its own
`--machine_rank`, and the same `--num_machines`, `--main_process_ip` and `--main_process_port`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.launch.planner import MachineRole, pasteable_command, plan_machine, strategy_note
from tuitrain.launch.planner import interface_env as interface_env  # the rule is the planner's; named here too
from tuitrain.launch.script import resolved_script, script_settings
from tuitrain.profile import Problem
from tuitrain.profile.implied import implied_notes
from tuitrain.profile.rules.machines import (
    listed_machines,
    machine_gpus,
    machine_processes,
    machines_port_problem,
)
from tuitrain.profile.settings import Settings


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


def node_dir(run_id: str, machine_rank: int) -> str:
    """Where a machine keeps its part of a run, under its workdir: distinct per machine even where the
    machines share a file system (as home folders on NFS do)."""
    return f".tuitrain/runs/{run_id}/machine-{machine_rank}"


def plan_machines(settings: Settings, run_dir: Path, file: str = "profile", *,
                  processes_set: bool = True, local_python: str | None = None,
                  local_cwd: str | None = None, ssh_config: str | None = None,
                  resume_from: Path | None = None) -> MachinesPlan:
    """`settings`: a profile with defaults (tuitrain.profile.settings_with_defaults) that lists machines.
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
    ip = dist["main_process_ip"]
    port = dist["main_process_port"]
    problems: list[Problem] = []
    no_port = machines_port_problem(file, count, port, "error")
    if no_port is not None:
        problems.append(no_port)
    plans: list[MachinePlan] = []
    total = 0
    for rank, machine in enumerate(machines):
        processes = machine_processes(machine, counting, settings["hardware"]) or 1
        total += processes
        interface = machine.get("network_interface") or dist["network_interface"]
        python = machine.get("python") or python_default
        workdir = machine.get("workdir") or cwd_default
        folder = node_dir(Path(run_dir).name, rank)
        if workdir.startswith("/"):
            folder = f"{workdir.rstrip('/')}/{folder}"  # absolute where it can be: `ps` then shows which run it is
        # a script's path is the same on every machine (as torchrun's), from here; it runs in each one's workdir
        role = MachineRole(folder=folder, rank=rank, machines=count, processes=processes, main_ip=ip, port=port,
                           gpus=machine_gpus(machine, settings["hardware"]), interface=interface, python=python,
                           relative_to=cwd_default)
        part = plan_machine(settings, role, None, file, resume_from=resume_from)
        notes = [*part.device_notes, part.thread_note, *([part.interface_note] if part.interface_note else [])]
        plans.append(MachinePlan(
            host=str(machine.get("host")), machine_rank=rank, python=python, workdir=workdir, argv=part.argv,
            env=part.env, accelerate_config=part.accelerate_config, num_processes=processes,
            accelerator=part.accelerator, node_dir=folder, network_interface=interface, notes=notes))
    notes = []
    if plans:
        notes.append(strategy_note(settings, plans[0].accelerator, total))
        notes += implied_notes(settings)
        notes.append(f"{count} machine(s), {total} process(es) in all; the main machine (rank 0) is {plans[0].host}"
                     + (f", reached by the others at {ip}:{port}" if ip and port is not None else ""))
    script = script_settings(settings)
    if script is not None and plans:
        shown = f"module {script['module']}" if script["module"] else resolved_script(script, Path(cwd_default))["path"]
        notes.append(f"script mode: every machine runs {shown} in its workdir, with its own tuitrain's hook on "
                     "PYTHONPATH (the script's path is the same on every machine)")
    notes.append("`tuitrain run` starts every machine over ssh (a tuitrain agent on each runs its command in its "
                 "workdir and sends its logs home); `tuitrain doctor` checks the machines first")
    return MachinesPlan(machines=plans, num_machines=count, num_processes=total, main_process_ip=ip,
                        main_process_port=port, strategy=dist["strategy"], notes=notes, problems=problems,
                        ssh_config=ssh_config)
