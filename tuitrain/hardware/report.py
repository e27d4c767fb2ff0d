"""A sampled snapshot as plain JSON data: what `tuitrain gpus --json` prints, what a node agent sends home and
what another workstation streams (`gpu_sample`); and that JSON read back (`read_report`), checked where it arrives,
since it comes from another host and maybe another version: a report that does not check is one line saying why,
never a crash in the app that shows it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from tuitrain.hardware.devices import GpuInfo, GpuProcess, MigDevice
from tuitrain.hardware.host import HostInfo
from tuitrain.hardware.mapping import cuda_ordinals, pci_order
from tuitrain.hardware.na import NA, plain
from tuitrain.rundir.json_shape import answered

if TYPE_CHECKING:
    from tuitrain.hardware.sampler import Snapshot


class OwnerJson(TypedDict, total=False):
    run_id: str
    rank: int | None
    describe: str


class _ProcessNeeded(TypedDict):
    pid: int


class ProcessJson(_ProcessNeeded, total=False):  # a GpuProcess, NA as null
    used_memory: int | None
    kind: str
    user: str | None
    command: str | None
    owner: OwnerJson | None
    sm_util: int | None
    peak_memory: int | None


class _IndexNeeded(TypedDict):
    index: int


class MigJson(_IndexNeeded, total=False):  # a MigDevice
    uuid: str | None
    name: str | None
    memory_total: int | None
    memory_used: int | None


class GpuJson(_IndexNeeded, total=False):  # a GpuInfo
    name: str | None
    uuid: str | None
    memory_total: int | None
    pci_bus_id: str | None
    compute_capability: tuple[int, int] | None
    memory_used: int | None
    memory_reserved: int | None
    utilization: int | None
    memory_utilization: int | None
    temperature: int | None
    power_draw: float | None
    power_limit: float | None
    num_cores: int | None
    max_sm_clock: int | None
    mig_enabled: bool | None
    mig_devices: list[MigJson]
    processes: list[ProcessJson]
    lost: bool
    process_sm: bool | None
    accounting: bool | None
    cuda_index: object  # its CUDA index under each CUDA_DEVICE_ORDER; not read from another machine, so not checked


class NvmlJson(TypedDict, total=False):
    available: object  # bool; this and the two below are not read from another machine, so not checked
    reason: object  # str | None
    driver_version: object  # str | None
    status: str


class HostJson(TypedDict, total=False):  # a HostInfo
    cpu_count: int
    physical_cores: int
    cpu_percent: float | None
    load_average: tuple[float, float, float] | None
    memory_total: int | None
    memory_used: int | None


class ReportJson(TypedDict, total=False):
    """`to_json`'s keys; `gpu_sample` sends three of them. Every key may be missing (an older version's)."""

    time: float
    nvml: NvmlJson
    gpus: list[GpuJson]
    ranks: object  # each rank's figures (not read from another machine, so not checked)
    host: HostJson
    mps: object  # bool (not read from another machine)


@dataclass(frozen=True)
class GpuReport:
    """A checked report: the GPUs as this machine's own are, NVML's status line ('' when not said), when it was
    sampled there and its host's figures (None where the report has none: a workstation's stream)."""

    gpus: tuple[GpuInfo, ...] = ()
    status: str = ""
    time: float | None = None
    host: HostInfo | None = None


def to_json(snapshot: Snapshot, mps: bool) -> ReportJson:
    discovery = snapshot.discovery
    ordinals = cuda_ordinals(discovery.gpus)
    gpus = []
    for gpu in pci_order(discovery.gpus):
        data = plain(gpu)
        data["cuda_index"] = ordinals[gpu.index]
        data["processes"] = [{**plain(p), "owner": _owner_json(p)} for p in gpu.processes]
        gpus.append(data)
    return {
        "time": snapshot.time,
        "nvml": {"available": discovery.available, "reason": discovery.reason or None,
                 "driver_version": plain(discovery.driver_version), "status": discovery.status_line},
        "gpus": gpus,
        "ranks": [{**plain(r), "describe": r.describe()} for r in snapshot.ranks],
        "host": plain(snapshot.host),
        "mps": mps,
    }


def _owner_json(process: GpuProcess) -> dict[str, Any] | None:
    if process.owner is None:
        return None
    return {**plain(process.owner), "describe": process.owner.describe()}


def gpu_sample(snapshot: Snapshot, mps: bool) -> ReportJson:
    """The part of `to_json` another machine's app shows of this one's GPUs (each GPU's memory, use and processes
    with their owner): it changes only when they do, unlike the time, the host's figures and the ranks' CPU."""
    data = to_json(snapshot, mps)
    return {"nvml": data["nvml"], "gpus": data["gpus"], "mps": data["mps"]}


@dataclass(frozen=True)
class ReportedOwner:
    """A process's owner as another machine's report names it (a `ProcessOwner`)."""

    run_id: str
    rank: int | None
    said: str

    def describe(self) -> str:
        return self.said


def _value(data: Mapping[str, Any], key: str) -> Any:
    value = data.get(key)
    return NA if value is None else value


def _process(data: ProcessJson) -> GpuProcess:
    owner = data.get("owner")
    reported = None
    if owner is not None:
        run_id = owner.get("run_id", "?")
        reported = ReportedOwner(run_id, owner.get("rank"), owner.get("describe") or f"of run {run_id}")
    return GpuProcess(data["pid"], _value(data, "used_memory"), data.get("kind") or "compute",
                      _value(data, "user"), _value(data, "command"), reported, sm_util=_value(data, "sm_util"),
                      peak_memory=_value(data, "peak_memory"))


def _gpu(data: GpuJson) -> GpuInfo:
    capability = data.get("compute_capability")
    return GpuInfo(
        data["index"], _value(data, "name"), _value(data, "uuid"), _value(data, "memory_total"),
        _value(data, "pci_bus_id"), (capability[0], capability[1]) if capability is not None else NA,
        _value(data, "memory_used"), _value(data, "memory_reserved"), _value(data, "utilization"),
        _value(data, "memory_utilization"), _value(data, "temperature"), _value(data, "power_draw"),
        _value(data, "power_limit"), _value(data, "num_cores"), _value(data, "max_sm_clock"),
        _value(data, "mig_enabled"),
        tuple(MigDevice(m["index"], _value(m, "uuid"), _value(m, "name"), _value(m, "memory_total"),
                        _value(m, "memory_used")) for m in data.get("mig_devices", ())),
        tuple(_process(p) for p in data.get("processes", ())), data.get("lost", False),
        process_sm=_value(data, "process_sm"), accounting=_value(data, "accounting"))


def _host(data: HostJson) -> HostInfo:
    load = data.get("load_average")
    return HostInfo(data.get("cpu_count", 0), data.get("physical_cores", 0), _value(data, "cpu_percent"),
                    (load[0], load[1], load[2]) if load is not None else NA, _value(data, "memory_total"), _value(data, "memory_used"))


def read_report(data: object) -> GpuReport | str:
    """A `to_json` (or `gpu_sample`) report, as another machine sent it, read as this machine's own figures are; or
    why it does not read, in one line ("gpus[0].index: 'x' is not a whole number")."""
    report: ReportJson
    report, why = answered(data, ReportJson)  # a process's name there may hold bytes that are not UTF-8
    if why is not None:
        return why
    host = report.get("host")
    return GpuReport(tuple(_gpu(g) for g in report.get("gpus", ())), report.get("nvml", {}).get("status") or "",
                     report.get("time"), _host(host) if host is not None else None)
