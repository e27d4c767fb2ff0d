"""[[distributed.machines]] and the machine helpers the planner shares (launch/machines.py): which machines,
how many processes each runs on which GPUs, their hosts and interfaces, and the rendezvous port they need."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..problems import Problem, Severity
from ..processes import processes_per_machine
from ..schema import MACHINE_KEYS
from ..values import toml_literal
from .common import value_or_default


def listed_machines(dist: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The [[distributed.machines]] tables of a [distributed] section (only those that are tables)."""
    machines = dist.get("machines")
    if not isinstance(machines, list):
        return []
    return [m for m in machines if isinstance(m, dict)]


def machine_count(dist: Mapping[str, Any]) -> int:
    """How many machines take part: the machines listed, else num_machines."""
    listed = listed_machines(dist)
    if listed:
        return len(listed)
    return value_or_default(dist, "distributed.num_machines")


def machine_gpus(machine: Mapping[str, Any], hardware: Mapping[str, Any]) -> list[Any] | None:
    """A machine's GPUs: its own `gpus`, else hardware.gpus (None: all of that machine's)."""
    gpus = machine["gpus"] if "gpus" in machine else hardware.get("gpus")
    return gpus if isinstance(gpus, list) else None


def machine_processes(machine: Mapping[str, Any], dist: Mapping[str, Any], hardware: Mapping[str, Any]) -> int | None:
    """The processes one listed machine runs (profile.processes.processes_per_machine): its num_processes, else
    distributed.num_processes, else 1 on the CPU or with "single", else one per listed GPU; None when only the
    machine can tell (one per GPU, and its GPUs are not listed)."""
    own = machine.get("num_processes")
    given = own if isinstance(own, int) and not isinstance(own, bool) else dist.get("num_processes")
    gpus = machine_gpus(machine, hardware)
    return processes_per_machine(given, value_or_default(dist, "distributed.strategy"),
                                 value_or_default(hardware, "hardware.accelerator"),
                                 None if gpus is None else len(gpus))


_IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*\Z")


def interface_problem(file: str, key: str, name: Any) -> Problem | None:
    """Why a network_interface value is no single interface name, or None. tuitrain adds NCCL's '=' itself."""
    if not isinstance(name, str):
        return None  # the type problem is said already
    fix = 'give one interface name as `ip -br addr` lists it, e.g. network_interface = "eth1"'
    if not name:
        return Problem(file, key, "is empty", fix + ", or remove the key")
    if any(ch.isspace() for ch in name) or "," in name:
        return Problem(file, key, f"{toml_literal(name)} is not one interface name (spaces or commas)", fix)
    if name[0] in "=^":
        return Problem(file, key, f"{toml_literal(name)} starts with {name[0]!r}: NCCL's prefix/exclude syntax",
                       f'give the plain name (network_interface = {toml_literal(name.lstrip("=^").split(",")[0])}): '
                       "tuitrain writes NCCL_SOCKET_IFNAME with '=' itself, for an exact match")
    if len(name) > 15:
        return Problem(file, key, f"{toml_literal(name)} is longer than an interface name can be (15 characters)", fix)
    if not _IFNAME.match(name):
        return Problem(file, key, f"{toml_literal(name)} is not an interface name", fix)
    return None


def host_problem(file: str, key: str, host: Any) -> Problem | None:
    """Why a machine's host is no SSH destination, or None (anything ssh takes is fine: aliases, user@host)."""
    if not isinstance(host, str):
        return None
    fix = 'give an SSH destination, e.g. host = "node1" (a ~/.ssh/config alias) or host = "me@10.0.0.2"'
    if not host.strip():
        return Problem(file, key, "is empty", fix)
    if host.startswith("-"):
        return Problem(file, key, f"{toml_literal(host)} starts with '-': ssh would read it as an option", fix)
    if any(ch.isspace() or ord(ch) < 32 for ch in host):
        return Problem(file, key, f"{toml_literal(host)} contains spaces or control characters", fix)
    return None


def rules_machines(file: str, dist: Mapping[str, Any], hardware: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    raw = dist.get("machines")
    if not isinstance(raw, list):
        return out
    seen: dict[str, int] = {}
    counts: list[tuple[int, int, str]] = []  # (index, processes, where the number comes from)
    accelerator = value_or_default(hardware, "hardware.accelerator")
    for i, machine in enumerate(raw):
        if not isinstance(machine, dict):
            continue
        where = f"distributed.machines[{i}]"
        host = machine.get("host")
        bad = host_problem(file, f"{where}.host", host)
        if bad is not None:
            out.append(bad)
        elif isinstance(host, str):
            if host in seen:
                out.append(Problem(file, f"{where}.host", f"{toml_literal(host)} is listed twice (machines {seen[host]} "
                                   f"and {i})", "list each machine once; for more processes on one machine raise its "
                                   "num_processes"))
            else:
                seen[host] = i
        for leaf in ("python", "workdir"):
            value = machine.get(leaf)
            if isinstance(value, str) and (not value.strip() or value.startswith("-")):
                out.append(Problem(file, f"{where}.{leaf}", f"{toml_literal(value)} is no path",
                                   f"e.g. {MACHINE_KEYS[leaf].example}, or remove it"))
        bad = interface_problem(file, f"{where}.network_interface", machine.get("network_interface"))
        if bad is not None:
            out.append(bad)
        gpus = machine_gpus(machine, hardware)
        if "gpus" in machine and accelerator in ("cpu", "mps"):
            out.append(Problem(file, f"{where}.gpus", f'ignored with hardware.accelerator = "{accelerator}"',
                               "remove it", severity="warning"))
            gpus = None
        processes = machine_processes(machine, dist, hardware)
        if processes is None:
            out.append(Problem(file, f"{where}.num_processes",
                               "how many processes this machine runs is not known here (one per GPU, and its GPUs "
                               "are not listed)", "set distributed.num_processes (per machine), or list the "
                               "machine's gpus"))
            continue
        if gpus and processes > len(gpus):
            source = "num_processes" if "num_processes" in machine else "distributed.num_processes"
            out.append(Problem(file, f"{where}.num_processes" if "num_processes" in machine else f"{where}.gpus",
                               f"{processes} processes ({source}) on {len(gpus)} GPU(s)",
                               f"set num_processes = {len(gpus)} for this machine, or list more GPUs"))
        counts.append((i, processes, "num_processes" if "num_processes" in machine else "gpus"))
    if counts:
        first = counts[0]
        for i, processes, leaf in counts[1:]:
            if processes != first[1]:
                out.append(Problem(file, f"distributed.machines[{i}].{leaf}",
                                   f"machine {i} runs {processes} process(es), machine {first[0]} runs {first[1]}: "
                                   "accelerate starts the same number on every machine",
                                   "give every machine the same num_processes (or the same number of gpus)"))
    listed = listed_machines(dist)
    if "num_machines" in dist and listed and value_or_default(dist, "distributed.num_machines") != len(listed):
        out.append(Problem(file, "distributed.num_machines",
                           f"{dist['num_machines']} but {len(listed)} machine(s) are listed in [[distributed.machines]]",
                           f"set num_machines = {len(listed)}, or remove it (the listed machines count)"))
    if "machine_rank" in dist and listed:
        out.append(Problem(file, "distributed.machine_rank", "ignored: each listed machine's rank is its place in "
                           "[[distributed.machines]] (the first is 0)", "remove it", severity="warning"))
    if len(listed) > 1 and not value_or_default(dist, "distributed.main_process_ip"):
        host = listed[0].get("host")
        out.append(Problem(file, "distributed.main_process_ip",
                           f"needed with {len(listed)} machines listed: the address of the main machine"
                           + (f" ({host})" if isinstance(host, str) else "") + " as the others reach it",
                           'e.g. main_process_ip = "10.0.0.1"'))
    return out


def machines_port_problem(file: str, machines: int, port: Any, severity: Severity) -> Problem | None:
    """A run over several machines without main_process_port, or None: the one rule (required; no machine can
    pick a free port for all of them). One message, two severities: the profile alone warns (the editor's
    field checks, `validate --offline`: the file may be finished on the machine that launches it); every plan
    refuses (launch.preflight, launch.machines.plan_machines), and so `validate`, `plan`, the launch dialog, the
    editor's plan and `run` do."""
    if machines <= 1 or port is not None:
        return None
    return Problem(file, "distributed.main_process_port",
                   f"needed with num_machines = {machines}: every machine must meet at the same port "
                   "(each would pick its own free one); the launch refuses to start without it",
                   "e.g. main_process_port = 29500", severity=severity)

