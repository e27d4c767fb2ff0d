"""Live GPU, host and rank figures, shared by ``tuitrain gpus --watch`` and the app.

One NVML session for the sampler's life; static fields read once; one read of every device per
`sample()`; history kept in fixed-size rings (``deque(maxlen=history)``) per GPU, for the host and
per (run, rank). Each GPU process is matched to the run and rank that owns it ("rank 3 of run X on
GPU 2, 31 GiB") through `owners`, a pid → owner table the caller hands in (tuitrain/runs/view/owners.py
reads it from the run records: this layer knows no runs). Blocking work: call `sample()` from a
worker thread, never an event loop.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import psutil

from tuitrain.hardware.devices import Discovery, GpuInfo, ProcessOwner, attach_owners, read_dynamic, read_static
from tuitrain.hardware.host import HostInfo, ProcessMeter, host_info, nearest_owned, parent_pids
from tuitrain.hardware.na import NA, NaType
from tuitrain.hardware.nvml import NvmlSession, text

DEFAULT_HISTORY = 300  # five minutes at 1 Hz

# pid → owner of every process the caller tracks (ranks, launchers), asked once per sample; the
# callee keeps its own cache (tuitrain.runs.view.owners.OwnerIndex(root).get). A GPU process that is
# not in it belongs to its nearest ancestor's owner.
Owners = Callable[[], Mapping[int, ProcessOwner]]


@dataclass(frozen=True)
class GpuPoint:
    time: float
    utilization: int | NaType
    memory_used: int | NaType
    temperature: int | NaType
    power_draw: float | NaType


@dataclass(frozen=True)
class HostPoint:
    time: float
    cpu_percent: float | NaType
    memory_used: int | NaType


@dataclass(frozen=True)
class RankPoint:
    time: float
    cpu_percent: float | NaType
    rss: int | NaType
    gpu_memory: int | NaType


@dataclass(frozen=True)
class RankUsage:
    """One live rank: where it runs and what it uses."""

    owner: ProcessOwner
    pid: int
    gpus: tuple[tuple[int, int | NaType], ...] = ()  # (NVML index, GPU memory used by it)
    cpu_percent: float | NaType = NA
    rss: int | NaType = NA

    @property
    def gpu_memory(self) -> int | NaType:
        known = [m for _, m in self.gpus if m is not NA]
        return sum(known) if known else NA

    def describe(self) -> str:
        where = ", ".join(f"GPU {i}, {_gib(m)}" for i, m in self.gpus) if self.gpus else "the CPU"
        return f"{self.owner.describe()} on {where}"


def _no_owners() -> Mapping[int, ProcessOwner]:
    return {}


def _cpu_total(times: Any) -> float:
    """All CPU time; Linux counts guest time inside user time already (as psutil does)."""
    return sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def _gib(num_bytes: int | NaType) -> str:
    return f"{num_bytes / 2**30:.0f} GiB" if num_bytes is not NA else "N/A GiB"


@dataclass(frozen=True)
class Snapshot:
    time: float
    discovery: Discovery
    host: HostInfo
    ranks: tuple[RankUsage, ...] = ()

    @property
    def gpus(self) -> tuple[GpuInfo, ...]:
        return self.discovery.gpus


@dataclass(frozen=True)
class SampledView:
    """The latest snapshot with copies of the history rings: safe to hand to another thread."""

    snapshot: Snapshot
    gpu_history: dict[int, tuple[GpuPoint, ...]]
    host_history: tuple[HostPoint, ...]
    rank_history: dict[tuple[str, int], tuple[RankPoint, ...]]


class Sampler:
    """Samples every GPU, the host and the live ranks `owners` names (see `Owners`)."""

    def __init__(self, nvml: Any = None, history: int = DEFAULT_HISTORY, clock: Callable[[], float] = time.time, *,
                 owners: Owners | None = None, ancestors: Callable[[int], list[int]] = parent_pids) -> None:
        if history < 1:
            raise ValueError("history must be at least 1 sample")
        self.history = history
        self.clock = clock
        self.session = NvmlSession.open(nvml)
        self.meter = ProcessMeter()
        self.owners: Owners = owners or _no_owners
        self.ancestors = ancestors
        self.driver_version = text(self.session.system_call("nvmlSystemGetDriverVersion"))
        self.static = tuple(read_static(self.session, i) for i in range(self.session.device_count()))
        self.gpu_history: dict[int, deque[GpuPoint]] = {g.index: deque(maxlen=history) for g in self.static}
        self.host_history: deque[HostPoint] = deque(maxlen=history)
        self.rank_history: dict[tuple[str, int], deque[RankPoint]] = {}
        self._rank_seen: dict[tuple[str, int], int] = {}
        self.samples = 0
        self.latest: Snapshot | None = None
        self._cpu_times: Any = None  # the host's last psutil.cpu_times(), for a percentage of our own

    # ------------------------------------------------------------------ one tick
    def sample(self) -> Snapshot:
        now = self.clock()
        gpus = tuple(read_dynamic(self.session, gpu, self.meter.identify) for gpu in self.static)
        owners = self.owners()
        if owners:
            gpus = attach_owners(gpus, lambda pid: nearest_owned(pid, owners, self.ancestors))
        host = host_info(cpu_percent=self._host_cpu())
        ranks = self._ranks(owners, gpus)
        self.samples += 1
        for gpu in gpus:
            self.gpu_history[gpu.index].append(
                GpuPoint(now, gpu.utilization, gpu.memory_used, gpu.temperature, gpu.power_draw))
        self.host_history.append(HostPoint(now, host.cpu_percent, host.memory_used))
        self._record_ranks(now, ranks)
        discovery = Discovery(self.session.available, self.session.reason, self.driver_version, gpus)
        self.latest = Snapshot(now, discovery, host, ranks)
        return self.latest

    def _host_cpu(self) -> float | NaType:
        """Busy % of the whole machine since the last sample (NA on the first). Our own delta, not
        psutil.cpu_percent(None), whose one shared baseline any other caller would reset."""
        now = psutil.cpu_times()
        before, self._cpu_times = self._cpu_times, now
        if before is None:
            return NA
        total = _cpu_total(now) - _cpu_total(before)
        idle = (now.idle + getattr(now, "iowait", 0.0)) - (before.idle + getattr(before, "iowait", 0.0))
        return max(0.0, min(100.0, 100.0 * (1.0 - idle / total))) if total > 0 else NA

    def _ranks(self, owners: Mapping[int, ProcessOwner], gpus: tuple[GpuInfo, ...]) -> tuple[RankUsage, ...]:
        on_gpu: dict[tuple[str, int], list[tuple[int, Any]]] = {}
        for gpu in gpus:
            for proc in gpu.processes:
                if proc.owner is not None and proc.owner.rank is not None:
                    on_gpu.setdefault((proc.owner.run_id, proc.owner.rank), []).append((gpu.index, proc.used_memory))
        out = []
        pids = set()
        for pid, owner in owners.items():
            if owner.rank is None:
                continue
            stats = self.meter.measure(pid)
            if stats.rss is NA and stats.user is NA:
                continue  # gone (or never seen from here)
            pids.add(pid)
            out.append(RankUsage(owner, pid, tuple(on_gpu.get((owner.run_id, owner.rank), ())),
                                 stats.cpu_percent, stats.rss))
        for gpu in gpus:
            pids.update(p.pid for p in gpu.processes)
        self.meter.forget_except(pids)
        return tuple(sorted(out, key=lambda r: (r.owner.run_id, r.owner.rank)))

    def _record_ranks(self, now: float, ranks: tuple[RankUsage, ...]) -> None:
        for usage in ranks:
            key = (usage.owner.run_id, int(usage.owner.rank or 0))
            ring = self.rank_history.get(key)
            if ring is None:
                ring = self.rank_history[key] = deque(maxlen=self.history)
            ring.append(RankPoint(now, usage.cpu_percent, usage.rss, usage.gpu_memory))
            self._rank_seen[key] = self.samples
        for key in [k for k, seen in self._rank_seen.items() if self.samples - seen > self.history]:
            del self._rank_seen[key]
            self.rank_history.pop(key, None)

    def view(self) -> SampledView:
        """A sample now, with copies of every history ring (call it from the sampling thread)."""
        snapshot = self.sample()
        return SampledView(snapshot, {i: tuple(ring) for i, ring in self.gpu_history.items()},
                           tuple(self.host_history), {k: tuple(ring) for k, ring in self.rank_history.items()})

    # ------------------------------------------------------------------ a loop
    def run(self, interval: float, stop: threading.Event,
            on_sample: Callable[[Snapshot], None] | None = None, count: int | None = None,
            clock: Callable[[], float] = time.monotonic) -> None:
        """Sample every `interval` seconds (no drift) until `stop` is set or `count` samples."""
        start = clock()
        tick = taken = 0
        while not stop.is_set() and (count is None or taken < count):
            snapshot = self.sample()
            taken += 1
            if on_sample is not None:
                on_sample(snapshot)
            if count is not None and taken >= count:
                break
            tick += 1
            delay = start + tick * interval - clock()
            if delay < 0:  # fell behind (a slow NVML read): skip the missed ticks
                tick += int(-delay // interval) + 1
                delay = start + tick * interval - clock()
            stop.wait(max(delay, 0.0))

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "Sampler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
