"""A run on several machines, as the app shows it: which ranks each machine runs, which machine is
this one, and which pids the sampler may look up here.

its backend lists its machines as its run.json does (host as the profile names it, machine_rank,
num_processes, env); ranks/rank-K.json say the host each rank really ran on (its hostname) and a
pid that lives on THAT host. A pid of another machine means nothing here: it may even be a
stranger's local process. So the sampler owns only the ranks of this machine (the rule is
`runs.view.owners.rank_is_here`), and the monitor labels ranks and logs by machine.

Machines are told apart by their index (machine_rank), never by hostname: containers and cloned VMs
share one. Which of them is this one (`machine_is_here`): one whose rank is a live process here (its
pid AND start time, as its record says), or whose SSH host is a loopback name; failing those, one whose
ranks name this hostname when no other machine of the run names the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from tuitrain.rundir.ranks import RankRecord
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.view.owners import same_host, this_host

LOOPBACK = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class Machine:
    index: int  # machine_rank
    host: str  # as the profile names it (an SSH destination)
    ranks: tuple[int, ...]  # global ranks
    here: bool  # this machine (the app's host)
    env: Mapping[str, Any]
    accelerator: str | None

    @property
    def label(self) -> str:
        return self.host + (" (this machine)" if self.here else "")


def rank_list(ranks: tuple[int, ...] | list[int]) -> str:
    """'rank 0', 'rank 0, rank 1', 'ranks 0-7' (a run of three or more)."""
    ranks = sorted(ranks)
    if not ranks:
        return "no ranks"
    if len(ranks) >= 3 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return ", ".join(f"rank {r}" for r in ranks)


def short_name(hostname: str) -> str:
    """`node1` of `Node1.cluster.local`: what runs.view.owners.same_host compares."""
    return hostname.lower().split(".")[0]


def rank_machine(rank_record: RankRecord) -> int | None:
    """The machine a rank record says it ran on: its machine_rank (the supervisor that started it), or for records
    written before that, node_rank (torch's GROUP_RANK, which a c10d rendezvous may number otherwise)."""
    return rank_record.get("machine_rank", rank_record.get("node_rank"))


def rank_process_here(rank_record: RankRecord) -> bool:
    """The record's pid is a live process of this machine started when the record says (a pid alone may be anyone's
    here, or another machine's)."""
    from tuitrain.rundir.process_tree import find

    started = rank_record.get("started")
    return started is not None and find(rank_record["pid"], started) is not None


def machine_is_here(host: str, records: list[RankRecord], hostname: str, shared: set[str],
                    live: Callable[[RankRecord], bool] = rank_process_here) -> bool:
    """Whether a machine (its SSH `host`, its ranks' `records`) is this one; `shared`: the hostnames (short_name)
    that more than one machine of the run reports, which tell nothing."""
    if any(live(record) for record in records):
        return True
    if host.rsplit("@", 1)[-1] in LOOPBACK:
        return True
    names = {r["host"] for r in records if r.get("host")}
    if names:
        return any(same_host(name, hostname) and short_name(name) not in shared for name in names)
    return same_host(host.rsplit("@", 1)[-1], hostname) and short_name(hostname) not in shared


def run_machines(entries: Sequence[MachineEntry], record: RunRecord,
                 rank_records: Mapping[int, RankRecord] | None = None, hostname: str | None = None,
                 live: Callable[[RankRecord], bool] = rank_process_here) -> list[Machine]:
    """The machines of a multi-machine run (`entries`: as its backend lists them, `Backend.machines`), each with its
    global ranks, in machine order; [] for a run on one machine. A rank belongs to the machine its record names
    (`rank_machine`); a rank without a record to the one accelerate's numbering gives (machine M's local rank L is
    the ranks of the machines before it + L). The run's record and the rank records are checked when read
    (`rundir.record`, `rundir.ranks`). `live`: whether a rank record names a live process of this machine (tests
    replace it)."""
    if not entries:
        return []
    hostname = hostname or this_host()
    rank_records = rank_records or {}
    share = max(1, Fields(record).num_processes // len(entries))
    planned: list[tuple[int, str, list[int], Mapping[str, Any], str | None]] = []
    start = 0
    for entry in entries:
        count, index = entry["num_processes"] or share, entry["machine_rank"]
        ranks = list(range(start, start + count))
        start += count
        planned.append((index, entry["host"] or f"machine {index}", ranks, entry["env"],
                        entry["accelerator"] or Fields(record).accelerator or None))
    # a rank record's own machine wins over the arithmetic
    indexes = {index for index, *_ in planned}
    placed = {rank: machine for rank, rec in rank_records.items()
              if (machine := rank_machine(rec)) is not None and machine in indexes}
    for index, _, ranks, _, _ in planned:
        ranks[:] = sorted({r for r in ranks if r not in placed} | {r for r, m in placed.items() if m == index})
    names: dict[str, set[int]] = {}
    for index, _, ranks, _, _ in planned:
        for rank in ranks:
            name = rank_records[rank].get("host") if rank in rank_records else None
            if name:
                names.setdefault(short_name(name), set()).add(index)
    shared = {name for name, machines in names.items() if len(machines) > 1}
    machines = []
    for index, host, ranks, env, accelerator in planned:
        records = [rank_records[r] for r in ranks if r in rank_records]
        here = machine_is_here(host, records, hostname, shared, live)
        machines.append(Machine(index, host, tuple(ranks), here, env, accelerator))
    return machines


def machine_of_rank(machines: list[Machine], rank: int) -> Machine | None:
    return next((m for m in machines if rank in m.ranks), None)


def machines_line(machines: list[Machine]) -> str:
    """'node1: rank 0, rank 1 · node2: rank 2, rank 3'."""
    return " · ".join(f"{m.label}: {rank_list(m.ranks)}" for m in machines)
