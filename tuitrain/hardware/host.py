"""The host: CPU and memory of the machine, CPU and RSS of single processes (through psutil).

psutil is imported only by what needs it (~20 ms): the machine's memory and the user's name come
from /proc/meminfo and pwd on Linux, so `tuitrain plan` does without it.

A process that is gone, or that this user may not inspect (another container's pid, as NVML
reports host pids), gives NA fields, never an exception.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from tuitrain.hardware.na import NA, NaType
from tuitrain.rundir.json_shape import sendable

if TYPE_CHECKING:
    import psutil


@dataclass(frozen=True)
class HostInfo:
    cpu_count: int = 1
    physical_cores: int = 0  # cores this process may run on, hyperthread siblings once (0: not looked at)
    cpu_percent: float | NaType = NA  # whole machine, 0..100 (NA until two samples)
    load_average: tuple[float, float, float] | NaType = NA
    memory_total: int | NaType = NA
    memory_used: int | NaType = NA


@dataclass(frozen=True)
class ProcessStats:
    pid: int
    user: str | NaType = NA
    command: str | NaType = NA
    cpu_percent: float | NaType = NA  # of one core, 0..100*cores (NA on the first look)
    rss: int | NaType = NA


def host_info(cpu_percent: float | NaType = NA) -> HostInfo:
    """The machine now. `cpu_percent` comes from a sampler that has two points; else NA."""
    total, used = memory_total_used()
    try:
        load: Any = tuple(round(x, 2) for x in os.getloadavg())
    except (OSError, AttributeError):
        load = NA
    return HostInfo(cpu_count=os.cpu_count() or 1, physical_cores=_physical_cores_once(), cpu_percent=cpu_percent,
                    load_average=load, memory_total=total, memory_used=used)


@functools.cache
def _physical_cores_once() -> int:
    return physical_cores()  # host_info runs every sampler tick: read the topology once


def physical_cores(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> int:
    """Physical cores among the CPUs this process may use (its affinity: a container's or a Slurm job's
    cpuset), each core's hyperthread siblings counted once; the logical count where topology is unknown."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in allowed:
        try:
            cores.add((sys_cpu / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            cores.add(f"cpu{cpu}")
    return max(1, len(cores))


def memory_total_used(meminfo: Path = Path("/proc/meminfo")) -> tuple[int | NaType, int | NaType]:
    """(total, used) bytes of the machine's memory; used = total - available, as psutil counts it."""
    try:
        fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines() if ":" in line)
        total = int(fields["MemTotal"].split()[0]) * 1024
        return total, total - int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError, IndexError):
        pass
    import psutil

    try:
        memory = psutil.virtual_memory()
        return int(memory.total), int(memory.total - memory.available)
    except (OSError, RuntimeError):
        return NA, NA


def current_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        pass
    import psutil

    try:
        return psutil.Process().username()
    except (psutil.Error, KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else ""


class ProcessMeter:
    """Per-process CPU% and RSS across samples (psutil needs two looks for a CPU percentage).

    Keeps one psutil.Process per (pid, start time) so a reused pid starts afresh (checked at
    most every `VERIFY_EVERY` seconds: the check reads /proc once more); `forget_except` drops
    the ones no longer asked about.
    """

    MIN_INTERVAL = 0.05  # seconds between two looks for a CPU percentage worth showing
    VERIFY_EVERY = 2.0  # seconds between two checks that a pid is still the same process

    def __init__(self) -> None:
        self._procs: dict[int, tuple[psutil.Process, str | NaType, str | NaType]] = {}
        self._looked: dict[int, float] = {}  # pid → when cpu_percent last set its baseline
        self._verified: dict[int, float] = {}  # pid → when is_running() last said "same process"

    def _proc(self, pid: int) -> tuple[tuple[psutil.Process, str | NaType, str | NaType] | None, bool]:
        """(entry, created now)."""
        import psutil

        known = self._procs.get(pid)
        if known is not None:
            now = time.monotonic()
            if now - self._verified.get(pid, 0.0) < self.VERIFY_EVERY:
                return known, False
            try:
                if known[0].is_running():  # same pid *and* same start time
                    self._verified[pid] = now
                    return known, False
            except psutil.Error:
                pass
            del self._procs[pid]
        try:
            proc = psutil.Process(pid)
        except (psutil.Error, ValueError, OSError):
            return None, False
        user: str | NaType = NA
        command: str | NaType = NA
        try:
            with proc.oneshot():
                user = sendable(proc.username())  # psutil decodes a name's non-UTF-8 bytes as surrogates
                command = sendable(proc.name())
                proc.cpu_percent(None)  # the first look: sets the baseline
        except (psutil.Error, KeyError, OSError):
            pass
        self._procs[pid] = (proc, user, command)
        self._looked[pid] = self._verified[pid] = time.monotonic()
        return self._procs[pid], True

    def identify(self, pid: int) -> tuple[str | NaType, str | NaType]:
        """(user, command) of a process, NA where it cannot be seen."""
        entry, _ = self._proc(pid)
        return (entry[1], entry[2]) if entry else (NA, NA)

    def measure(self, pid: int) -> ProcessStats:
        import psutil

        entry, _ = self._proc(pid)
        if entry is None:
            return ProcessStats(pid)
        proc, user, command = entry
        cpu: float | NaType = NA
        rss: int | NaType = NA
        try:
            with proc.oneshot():
                now = time.monotonic()
                value = proc.cpu_percent(None)
                if now - self._looked.get(pid, now) >= self.MIN_INTERVAL:
                    cpu = value
                self._looked[pid] = now
                rss = proc.memory_info().rss
        except psutil.NoSuchProcess:
            self.forget_except({p for p in self._procs if p != pid})
            return ProcessStats(pid)  # gone
        except (psutil.Error, OSError):
            pass
        return ProcessStats(pid, user, command, cpu, rss)

    def forget_except(self, pids: set[int]) -> None:
        for pid in [p for p in self._procs if p not in pids]:
            del self._procs[pid]
            self._looked.pop(pid, None)
            self._verified.pop(pid, None)


def parent_pids(pid: int, limit: int = 8) -> list[int]:
    """The ancestors of a process, nearest first (at most `limit`); [] where it cannot be seen."""
    import psutil

    out: list[int] = []
    try:
        proc: psutil.Process | None = psutil.Process(pid)
        while proc is not None and len(out) < limit:
            proc = proc.parent()
            if proc is not None:
                out.append(proc.pid)
    except (psutil.Error, OSError):
        pass
    return out


T = TypeVar("T")


def nearest_owned(pid: int, owned: Mapping[int, T],
                  ancestors: Callable[[int], list[int]] = parent_pids) -> T | None:
    """`owned[pid]`, or the entry of its nearest ancestor that has one (a data loader worker
    belongs to its rank); None when neither it nor an ancestor is in `owned`."""
    if not owned:
        return None
    if pid in owned:
        return owned[pid]
    for parent in ancestors(pid):
        if parent in owned:
            return owned[parent]
    return None
