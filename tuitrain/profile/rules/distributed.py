"""[distributed]: processes and machines against the strategy, the machine rank and main address, and the
strategy tables given for another strategy. (Listed machines: machines.py; the strategies: strategies.py.)"""

from __future__ import annotations

from typing import Any, Mapping

from ..problems import Problem
from .common import table_of, value_or_default
from .machines import interface_problem, listed_machines, machine_count, rules_machines


def rules_distributed(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    dist = table_of(data, "distributed")
    strategy = value_or_default(dist, "distributed.strategy")
    processes = value_or_default(dist, "distributed.num_processes")
    listed = listed_machines(dist)
    machines = machine_count(dist)
    rank = value_or_default(dist, "distributed.machine_rank")
    if strategy == "single" and processes > 1:
        out.append(Problem(file, "distributed.num_processes",
                           f'{processes} processes with strategy = "single"',
                           f'set distributed.strategy = "ddp" to run {processes} processes, or num_processes = 1'))
    if strategy == "single" and machines > 1:
        out.append(Problem(file, "distributed.machines" if listed else "distributed.num_machines",
                           f'{machines} machines with strategy = "single"',
                           'set distributed.strategy = "ddp" (or fsdp / deepspeed)'))
    if not listed and rank >= machines:
        out.append(Problem(file, "distributed.machine_rank",
                           f"must be less than num_machines ({machines}), got {rank}",
                           f"use 0 to {machines - 1}" if machines > 1 else "set machine_rank = 0"))
    if not listed and machines > 1 and not value_or_default(dist, "distributed.main_process_ip"):
        out.append(Problem(file, "distributed.main_process_ip",
                           f"needed when num_machines = {machines}",
                           'set main_process_ip = "<address of machine 0>"'))
    bad = interface_problem(file, "distributed.network_interface", dist.get("network_interface"))
    if bad is not None:
        out.append(bad)
    out.extend(rules_machines(file, dist, table_of(data, "hardware")))
    for sub in ("fsdp", "deepspeed"):
        if sub in dist and strategy != sub:
            out.append(Problem(file, f"distributed.{sub}", f'ignored: strategy is "{strategy}"',
                               f'set distributed.strategy = "{sub}" to use it', severity="warning"))
    return out

