"""A run on several machines, as the app shows it: which ranks each machine runs, which machine is
this one, and which pids the sampler may look up here.

run.json of such a run lists its `machines` (host as the profile names it, machine_rank,
num_processes, env); ranks/rank-K.json say the host each rank really ran on (its hostname) and a
pid that lives on THAT host. A pid of another machine means nothing here: it may even be a
stranger's local process. So the sampler owns only the ranks of this machine (the rule is
`runs.owners.rank_is_here`), and the monitor labels ranks and logs by machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from tuitrain.runs.owners import rank_is_here, same_host, this_host

LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def ranks_on_this_host(rank_host: Any, hostname: str) -> bool:
    """A rank record's `host` names this machine (no host: a local run's older record)."""
    return rank_is_here({"host": rank_host}, hostname)


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


def run_machines(record: Mapping[str, Any], rank_records: Mapping[int, Mapping[str, Any]] | None = None,
                 hostname: str | None = None) -> list[Machine]:
    """The machines of a multi-machine run, each with its global ranks (accelerate numbers machine
    M's local rank L as the ranks of the machines before it + L); [] for a run on one machine.
    Never raises on a damaged record: what cannot be read is left out."""
    listed = record.get("machines")
    if not isinstance(listed, list) or not listed:
        return []
    hostname = hostname or this_host()
    rank_records = rank_records or {}
    entries = [m for m in listed if isinstance(m, Mapping)]
    try:
        total = int(record.get("num_processes") or 0)
    except (TypeError, ValueError):
        total = 0
    share = max(1, total // max(1, len(entries))) if total else 1
    machines = []
    start = 0
    for position, entry in enumerate(entries):
        try:
            count = int(entry.get("num_processes") or share)
        except (TypeError, ValueError):
            count = share
        index = entry.get("machine_rank", position)
        index = index if isinstance(index, int) else position
        host = str(entry.get("host") or f"machine {index}")
        ranks = tuple(range(start, start + max(0, count)))
        start += max(0, count)
        seen_here = any(ranks_on_this_host(rank_records[r].get("host"), hostname) and rank_records[r].get("host")
                        for r in ranks if isinstance(rank_records.get(r), Mapping))
        ssh_host = host.rsplit("@", 1)[-1]
        here = bool(seen_here) or ssh_host in LOOPBACK or same_host(ssh_host, hostname)
        env = entry.get("env") if isinstance(entry.get("env"), Mapping) else {}
        accelerator = entry.get("accelerator") or record.get("accelerator")
        machines.append(Machine(index, host, ranks, here, env or {}, str(accelerator) if accelerator else None))
    # a rank record's own machine number (node_rank) wins over the arithmetic
    by_index = {m.index: m for m in machines}
    moved: dict[int, int] = {}
    for rank, rec in rank_records.items():
        node = rec.get("node_rank") if isinstance(rec, Mapping) else None
        if isinstance(node, int) and node in by_index and rank not in by_index[node].ranks:
            moved[rank] = node
    if moved:
        machines = [Machine(m.index, m.host, tuple(sorted({r for r in m.ranks if r not in moved} |
                                                         {r for r, n in moved.items() if n == m.index})),
                            m.here, m.env, m.accelerator) for m in machines]
    return machines


def machine_of_rank(machines: list[Machine], rank: int) -> Machine | None:
    return next((m for m in machines if rank in m.ranks), None)


def machines_line(machines: list[Machine]) -> str:
    """'node1: rank 0, rank 1 · node2: rank 2, rank 3'."""
    return " · ".join(f"{m.label}: {rank_list(m.ranks)}" for m in machines)
