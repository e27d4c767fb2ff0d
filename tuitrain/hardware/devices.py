"""NVIDIA GPUs as plain data, read through one `NvmlSession` (every call through its gate).

A GPU's description splits in two reads: `read_static` (name, UUID, PCI bus id, compute
capability, power limit, cores, MIG: read once per session) and `read_dynamic` (memory,
utilisation, temperature, power draw, processes with each one's SM share and peak memory where the driver
gives them: read every sample). `discover` does both once.
Every field the driver cannot give is `NA`; a lost GPU keeps its static fields and `lost=True`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from tuitrain.hardware.na import NA, NaType
from tuitrain.hardware.nvml import NvmlSession, text

Identify = Callable[[int], "tuple[str | NaType, str | NaType]"]  # pid → (user, command), NA where unknown


class ProcessOwner(Protocol):
    """Who a process works for, as the layer that started it says (tuitrain/runs/view/owners.py: a
    run's rank, launcher or supervisor). Hardware reads only these, and imports nothing of runs."""

    @property
    def run_id(self) -> str: ...

    @property
    def rank(self) -> int | None: ...  # None for a process that is no rank (a launcher)

    def describe(self) -> str: ...


OwnerOf = Callable[[int], "ProcessOwner | None"]  # pid → its owner, None for a stranger's process


@dataclass(frozen=True)
class MigDevice:
    index: int
    uuid: str | NaType = NA
    name: str | NaType = NA
    memory_total: int | NaType = NA  # bytes
    memory_used: int | NaType = NA  # bytes, read every sample (read_dynamic)

    @property
    def profile(self) -> str | NaType:
        """The instance's MIG profile ('3g.40gb' of 'NVIDIA A100-SXM4-80GB MIG 3g.40gb'); its name when it has none."""
        if self.name is NA:
            return NA
        before, mig, profile = str(self.name).rpartition("MIG ")
        return profile if mig and profile else self.name


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_memory: int | NaType = NA  # bytes
    kind: str = "compute"  # "compute", "graphics" or "compute+graphics"
    user: str | NaType = NA
    command: str | NaType = NA
    owner: ProcessOwner | None = None  # the run and rank it belongs to (see attach_owners)
    sm_util: int | NaType = NA  # % of the time a kernel of its ran, of late (nvmlDeviceGetProcessUtilization)
    peak_memory: int | NaType = NA  # bytes, its most since it started (accounting mode: nvmlDeviceGetAccountingStats)


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU. `index` is NVML's (= nvidia-smi's, PCI bus order)."""

    index: int
    name: str | NaType = NA
    uuid: str | NaType = NA
    memory_total: int | NaType = NA  # bytes
    pci_bus_id: str | NaType = NA
    compute_capability: tuple[int, int] | NaType = NA
    memory_used: int | NaType = NA  # bytes, as nvidia-smi counts them: without the driver's reserve (see read_memory)
    memory_reserved: int | NaType = NA  # bytes the driver keeps for itself (part of total, not of used); NA before NVML v2
    utilization: int | NaType = NA  # percent of time a kernel ran
    memory_utilization: int | NaType = NA
    temperature: int | NaType = NA  # °C
    power_draw: float | NaType = NA  # watts
    power_limit: float | NaType = NA  # watts
    num_cores: int | NaType = NA
    max_sm_clock: int | NaType = NA  # MHz
    mig_enabled: bool | NaType = NA
    mig_devices: tuple[MigDevice, ...] = ()  # a MIG-enabled GPU's instances, each with its memory
    processes: tuple[GpuProcess, ...] = ()
    lost: bool = False
    process_sm: bool | NaType = NA  # the driver gives each process's SM share (NA: not asked, or not supported)
    accounting: bool | NaType = NA  # accounting mode is on: each process's peak memory (NA: not supported here)

    @property
    def memory_free(self) -> int | NaType:
        total, used = self.memory_total, self.memory_used
        return total - used if total and not isinstance(total, NaType) and not isinstance(used, NaType) else NA

    @property
    def memory_fraction(self) -> float | NaType:
        """Used / total, 0..1, NA when unknown."""
        if self.memory_total and self.memory_used is not NA:
            return self.memory_used / self.memory_total
        return NA

    @property
    def compute_capability_text(self) -> str | NaType:
        cc = self.compute_capability
        return f"{cc[0]}.{cc[1]}" if cc else NA

    @property
    def speed_estimate(self) -> float | NaType:
        """CUDA cores × max SM clock (MHz): the throughput guess behind FASTEST_FIRST."""
        if self.num_cores and self.max_sm_clock:
            return float(self.num_cores * self.max_sm_clock)
        return NA


@dataclass(frozen=True)
class Discovery:
    """Everything NVML said in one look: whether it answered, the driver, the GPUs."""

    available: bool
    reason: str = ""  # why not available ("driver not found"), "" when available
    driver_version: str | NaType = NA
    gpus: tuple[GpuInfo, ...] = ()

    @property
    def status_line(self) -> str:
        if not self.available:
            return f"no NVIDIA GPU (NVML: {self.reason})"
        if not self.gpus:
            return f"no NVIDIA GPU (NVML driver {self.driver_version} found none)"
        return f"{len(self.gpus)} NVIDIA GPU(s), driver {self.driver_version}"


# ---------------------------------------------------------------------------- reading

def _number(value: Any, scale: float = 1.0) -> Any:
    if value is NA or value is None:
        return NA
    return value / scale if scale != 1.0 else value


def read_static(session: NvmlSession, index: int) -> GpuInfo:
    call = session.device_call
    cc = call(index, "nvmlDeviceGetCudaComputeCapability")
    pci = call(index, "nvmlDeviceGetPciInfo")
    mig_mode = call(index, "nvmlDeviceGetMigMode")
    mig_enabled = bool(mig_mode[0]) if mig_mode is not NA else NA
    return GpuInfo(
        index=index,
        name=text(call(index, "nvmlDeviceGetName")),
        uuid=text(call(index, "nvmlDeviceGetUUID")),
        pci_bus_id=text(pci.busId) if pci is not NA else NA,
        compute_capability=(int(cc[0]), int(cc[1])) if cc is not NA else NA,
        power_limit=_number(call(index, "nvmlDeviceGetEnforcedPowerLimit"), 1000.0),
        num_cores=call(index, "nvmlDeviceGetNumGpuCores"),
        max_sm_clock=call(index, "nvmlDeviceGetMaxClockInfo", session.constant("NVML_CLOCK_SM", 1)),
        mig_enabled=mig_enabled,
        mig_devices=_mig_devices(session, index) if mig_enabled else (),
        lost=index in session.lost,
    )


def _mig_devices(session: NvmlSession, index: int) -> tuple[MigDevice, ...]:
    count = session.device_call(index, "nvmlDeviceGetMaxMigDeviceCount")
    found = []
    for slot in range(count if count is not NA else 0):
        handle = session.device_call(index, "nvmlDeviceGetMigDeviceHandleByIndex", slot)
        if handle is NA:
            continue  # an empty slot answers NOT_FOUND
        memory = session.device_call(index, "nvmlDeviceGetMemoryInfo", handle=handle)
        found.append(MigDevice(
            index=slot,
            uuid=text(session.device_call(index, "nvmlDeviceGetUUID", handle=handle)),
            name=text(session.device_call(index, "nvmlDeviceGetName", handle=handle)),
            memory_total=memory.total if memory is not NA else NA,
            memory_used=memory.used if memory is not NA else NA,
        ))
    return tuple(found)


def _mig_memory(session: NvmlSession, index: int, migs: tuple[MigDevice, ...]) -> tuple[MigDevice, ...]:
    """`migs` with this moment's memory (an instance's used memory changes; its slot does not)."""
    out = []
    for mig in migs:
        handle = session.device_call(index, "nvmlDeviceGetMigDeviceHandleByIndex", mig.index)
        memory = session.device_call(index, "nvmlDeviceGetMemoryInfo", handle=handle) if handle is not NA else NA
        out.append(dataclasses.replace(mig, memory_total=memory.total if memory is not NA else mig.memory_total,
                                       memory_used=memory.used if memory is not NA else NA))
    return tuple(out)


def _processes(session: NvmlSession, index: int, identify: Identify) -> tuple[GpuProcess, ...]:
    merged: dict[int, GpuProcess] = {}
    for name, kind in (("nvmlDeviceGetComputeRunningProcesses", "compute"),
                       ("nvmlDeviceGetGraphicsRunningProcesses", "graphics")):
        listed = session.device_call(index, name)
        for entry in listed if listed is not NA else ():
            pid = int(entry.pid)
            used = _number(getattr(entry, "usedGpuMemory", None))
            if pid in merged:  # a process with both contexts: listed twice, same memory
                before = merged[pid]
                memory = before.used_memory if used is NA else used if before.used_memory is NA else max(before.used_memory, used)
                merged[pid] = dataclasses.replace(before, kind="compute+graphics", used_memory=memory)
                continue
            user, command = identify(pid)
            merged[pid] = GpuProcess(pid=pid, used_memory=used, kind=kind, user=user, command=command)
    return tuple(merged.values())


PROCESS_WINDOW_US = 5_000_000  # a first look at each process's SM share: the driver's samples of the last 5 s


def _process_sm(session: NvmlSession, index: int, processes: tuple[GpuProcess, ...]
                ) -> tuple[tuple[GpuProcess, ...], bool | NaType]:
    """Each process's SM share since the last look at this GPU (the mean of the driver's samples; 0 for a process
    with none: it ran no kernel since), and whether the driver gives it at all (NA: not supported, e.g. GeForce)."""
    since = session.process_samples_seen.get(index) or int(time.time() * 1e6) - PROCESS_WINDOW_US
    samples = session.device_call(index, "nvmlDeviceGetProcessUtilization", since, found_none=[])
    if samples is NA:
        return processes, NA
    shares: dict[int, list[int]] = {}
    newest = since
    for sample in samples:
        shares.setdefault(int(sample.pid), []).append(max(0, min(100, int(sample.smUtil))))
        newest = max(newest, int(getattr(sample, "timeStamp", 0)))
    session.process_samples_seen[index] = newest
    return tuple(dataclasses.replace(p, sm_util=round(sum(shares[p.pid]) / len(shares[p.pid])) if p.pid in shares
                                     else 0) for p in processes), True


def _peak_memory(session: NvmlSession, index: int, processes: tuple[GpuProcess, ...]
                 ) -> tuple[tuple[GpuProcess, ...], bool | NaType]:
    """Each process's peak memory where accounting mode is on (`nvidia-smi -am 1`, as root), and whether it is
    (False: off; NA: the GPU has no accounting)."""
    mode = session.device_call(index, "nvmlDeviceGetAccountingMode")
    if mode is NA:
        return processes, NA
    if int(mode) != 1:  # NVML_FEATURE_ENABLED
        return processes, False
    out = []
    for proc in processes:
        stats = session.device_call(index, "nvmlDeviceGetAccountingStats", proc.pid)
        out.append(dataclasses.replace(proc, peak_memory=int(stats.maxMemoryUsage) if stats is not NA else NA))
    return tuple(out), True


def read_memory(session: NvmlSession, index: int) -> Any:
    """GPU `index`'s memory as nvidia-smi and nvitop show it: NVML's version 2 call, whose `used` leaves out
    the memory the driver reserves for itself (~480 MiB on an H100, which version 1 counts as used, so an idle
    GPU read 0.5 GiB used). A driver or pynvml without version 2 answers version 1, asked from then on."""
    version = getattr(session.lib, "nvmlMemory_v2", None)
    if version is not None and index not in session.memory_v1_only:
        memory = session.device_call(index, "nvmlDeviceGetMemoryInfo", version)
        if memory is not NA or index in session.lost:
            return memory
        session.memory_v1_only.add(index)
    return session.device_call(index, "nvmlDeviceGetMemoryInfo")


def read_dynamic(session: NvmlSession, static: GpuInfo, identify: Identify) -> GpuInfo:
    """`static` with this moment's memory, utilisation, temperature, power and processes."""
    index = static.index
    call = session.device_call
    memory = read_memory(session, index)
    rates = call(index, "nvmlDeviceGetUtilizationRates")
    temperature = call(index, "nvmlDeviceGetTemperature", session.constant("NVML_TEMPERATURE_GPU", 0))
    power = _number(call(index, "nvmlDeviceGetPowerUsage"), 1000.0)
    processes = _processes(session, index, identify)
    process_sm: bool | NaType = NA
    accounting: bool | NaType = NA
    if processes:  # asked only where there is someone to ask about
        processes, process_sm = _process_sm(session, index, processes)
        processes, accounting = _peak_memory(session, index, processes)
    return dataclasses.replace(
        static,
        memory_total=memory.total if memory is not NA else static.memory_total,
        memory_used=memory.used if memory is not NA else NA,
        memory_reserved=_number(getattr(memory, "reserved", None)),
        utilization=rates.gpu if rates is not NA else NA,
        memory_utilization=rates.memory if rates is not NA else NA,
        temperature=temperature,
        power_draw=power,
        mig_devices=_mig_memory(session, index, static.mig_devices),
        processes=processes,
        lost=index in session.lost,
        process_sm=process_sm,
        accounting=accounting,
    )


def no_identity(pid: int) -> tuple[str | NaType, str | NaType]:
    return NA, NA


def discover(nvml: Any = None, identify: Identify | None = None) -> Discovery:
    """One full look at every GPU. `nvml`: the library (default pynvml; or a RecordedNvml).

    `identify` gives a process's (user, command); default: psutil (host.ProcessMeter), loaded
    only when there are GPUs to look at."""
    with NvmlSession.open(nvml) as session:
        if identify is None and session.available:
            from tuitrain.hardware.host import ProcessMeter

            identify = ProcessMeter().identify
        return discover_in(session, identify or no_identity)


def discover_in(session: NvmlSession, identify: Identify) -> Discovery:
    if not session.available:
        return Discovery(available=False, reason=session.reason)
    driver = text(session.system_call("nvmlSystemGetDriverVersion"))
    gpus = tuple(read_dynamic(session, read_static(session, i), identify) for i in range(session.device_count()))
    return Discovery(available=True, driver_version=driver, gpus=gpus)


def attach_owners(gpus: Sequence[GpuInfo], owner_of: OwnerOf) -> tuple[GpuInfo, ...]:
    """The GPUs with each process's `owner` filled in by `owner_of` (pid → owner or None)."""
    out = []
    for gpu in gpus:
        procs = tuple(dataclasses.replace(p, owner=owner_of(p.pid)) for p in gpu.processes)
        out.append(dataclasses.replace(gpu, processes=procs) if gpu.processes else gpu)
    return tuple(out)
