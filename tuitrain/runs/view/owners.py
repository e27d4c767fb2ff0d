"""Which run and rank owns a process: "rank 3 of run X on GPU 2, 31 GiB".

A run records its pids in run.json (``{"supervisor": P, "launcher": P, "ranks": {"0": P, ...}}``)
and each rank in ranks/rank-K.json. A GPU process is a rank itself, or a child of one (a data
loader worker, a compile helper), or of the run's launcher: we match its pid, then its ancestors.

Ownership is a runs concept: tuitrain/hardware/ sees an owner only through the small
`hardware.devices.ProcessOwner` protocol, and gets the table from here as a plain callable
(`OwnerIndex(...).get` for the sampler, `owner_lookup(...)` for one look).
"""

from __future__ import annotations

import functools
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from tuitrain.hardware.devices import GpuInfo, OwnerOf, attach_owners
from tuitrain.hardware.host import nearest_owned, parent_pids
from tuitrain.rundir.process_tree import find
from tuitrain.rundir.ranks import RankRecord, read_rank_records
from tuitrain.rundir.record import has_ended
from tuitrain.rundir.run import Run
from tuitrain.runs.catalog import list_runs

Ancestors = Callable[[int], "list[int]"]


@dataclass(frozen=True)
class RankOwner:
    run_id: str
    rank: int | None  # None for the launcher or supervisor
    role: str = "rank"  # "rank", "launcher" or "supervisor"
    profile: str = ""

    def describe(self) -> str:
        if self.rank is not None:
            return f"rank {self.rank} of run {self.run_id}"
        return f"{self.role} of run {self.run_id}"


def owners_from_runs(runs: Iterable[tuple[Run, Mapping[str, object]]]) -> dict[int, RankOwner]:
    """pid → owner, from each run's recorded pids and the ranks' pids found beside it (rank → pid: its rank
    records of this machine, which a supervisor copies into run.json only later)."""
    owners: dict[int, RankOwner] = {}
    for run, ranks_here in runs:
        pids, profile = run.pids, run.profile or ""
        for role in ("supervisor", "launcher"):
            pid = pids.get(role)
            if isinstance(pid, int) and pid > 0:
                owners[pid] = RankOwner(run.name, None, role, profile)
        for rank, pid in {**pids.get("ranks", {}), **ranks_here}.items():
            if isinstance(pid, int) and pid > 0:
                owners[pid] = RankOwner(run.name, int(rank), "rank", profile)
    return owners


def this_host() -> str:
    return socket.gethostname()


def same_host(a: str, b: str) -> bool:
    """Two names of one machine (`node1` and `node1.cluster.local` are one)."""
    a, b = a.lower(), b.lower()
    return a == b or a.split(".")[0] == b.split(".")[0]


def rank_is_here(rank_record: RankRecord, hostname: str) -> bool:
    """A rank record names a process of this machine: its `host` is this one (a record without a host is a local
    run's) and, where it kept its start time, a live process here has that pid and start time. A rank of another
    machine has a pid that means nothing here: the same number may be anyone's, and machines cloned from one image
    (containers, VMs) share hostnames."""
    host = rank_record.get("host")
    if host and not same_host(host, hostname):
        return False
    started = rank_record.get("started")
    return started is None or find(rank_record["pid"], started) is not None


def read_owners(runs_root: Path, active_only: bool = True, hostname: str | None = None) -> dict[int, RankOwner]:
    """pid → owner for the runs under `runs_root` (by default only those not yet ended), ranks of this machine only."""
    hostname = hostname or this_host()
    runs = []
    for paths, record in list_runs(runs_root):
        if active_only and has_ended(record):
            continue
        ranks = {str(r): rec["pid"] for r, rec in read_rank_records(paths).items() if rank_is_here(rec, hostname)}
        runs.append((Run(paths, record), ranks))
    return owners_from_runs(runs)


def owner_of(pid: int, owners: Mapping[int, RankOwner], ancestors: Ancestors = parent_pids) -> RankOwner | None:
    """The owner of `pid`, or of its nearest ancestor that has one; None for a stranger."""
    return nearest_owned(pid, owners, ancestors)


def owner_lookup(owners: Mapping[int, RankOwner], ancestors: Ancestors = parent_pids) -> OwnerOf:
    """`owners` as the pid → owner function hardware.devices.attach_owners takes."""
    return functools.partial(owner_of, owners=owners, ancestors=ancestors)


def owners_near(run_dirs: Iterable[str | Path]) -> dict[int, RankOwner]:
    """pid → owner for the live runs beside these run directories (every runs root one of them is in): the queue
    names who holds a GPU by the runs of its entries' roots."""
    owners: dict[int, RankOwner] = {}
    for root in dict.fromkeys(Path(d).parent for d in run_dirs):
        if root.is_dir():
            owners.update(read_owners(root))
    return owners


def with_owners(gpus: Sequence[GpuInfo], run_dirs: Iterable[str | Path]) -> tuple[GpuInfo, ...]:
    """`gpus` with each process's owner, where it is a rank (or a child of one) of a run beside `run_dirs`; the run
    records are read only when some GPU holds a process."""
    if not any(g.processes for g in gpus):
        return tuple(gpus)
    return attach_owners(gpus, owner_lookup(owners_near(run_dirs)))


class OwnerIndex:
    """read_owners(runs_root), re-read at most every `ttl` seconds (the sampler asks each tick:
    pass `OwnerIndex(root).get` as its `owners`)."""

    def __init__(self, runs_root: Path | None, ttl: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.runs_root = runs_root
        self.ttl = ttl
        self.clock = clock
        self._owners: dict[int, RankOwner] = {}
        self._read_at: float | None = None

    def get(self, refresh: bool = False) -> dict[int, RankOwner]:
        if self.runs_root is None:
            return {}
        now = self.clock()
        if refresh or self._read_at is None or now - self._read_at >= self.ttl:
            self._owners = read_owners(self.runs_root)
            self._read_at = now
        return self._owners
