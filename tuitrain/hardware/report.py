"""A sampled snapshot as plain JSON data: what `tuitrain gpus --json` prints, what a node agent sends home and
what another workstation streams (`gpu_sample`); and that JSON read back as GPUs (`gpus_from_json`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuitrain.hardware.devices import GpuInfo, GpuProcess, MigDevice
from tuitrain.hardware.mapping import cuda_ordinals, pci_order
from tuitrain.hardware.na import NA, plain
from tuitrain.hardware.sampler import Snapshot

SAMPLE_KEYS = ("nvml", "gpus", "mps")  # what a workstation streams: its GPUs, without the figures that move always


def to_json(snapshot: Snapshot, mps: bool) -> dict[str, Any]:
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


def gpu_sample(snapshot: Snapshot, mps: bool) -> dict[str, Any]:
    """The part of `to_json` another machine's app shows of this one's GPUs (each GPU's memory, use and processes
    with their owner): it changes only when they do, unlike the time, the host's figures and the ranks' CPU."""
    data = to_json(snapshot, mps)
    return {key: data[key] for key in SAMPLE_KEYS}


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


def _process(data: Mapping[str, Any]) -> GpuProcess:
    owner = data.get("owner")
    reported = None
    if isinstance(owner, Mapping):
        rank = owner.get("rank")
        reported = ReportedOwner(str(owner.get("run_id", "?")), rank if isinstance(rank, int) else None,
                                 str(owner.get("describe") or f"of run {owner.get('run_id', '?')}"))
    return GpuProcess(int(data.get("pid", 0)), _value(data, "used_memory"), str(data.get("kind") or "compute"),
                      _value(data, "user"), _value(data, "command"), reported, sm_util=_value(data, "sm_util"),
                      peak_memory=_value(data, "peak_memory"))


def _gpu(data: Mapping[str, Any]) -> GpuInfo:
    capability = data.get("compute_capability")
    migs = [m for m in data.get("mig_devices") or () if isinstance(m, Mapping)]
    procs = [p for p in data.get("processes") or () if isinstance(p, Mapping)]
    return GpuInfo(
        int(data.get("index", 0)), _value(data, "name"), _value(data, "uuid"), _value(data, "memory_total"),
        _value(data, "pci_bus_id"), tuple(capability) if isinstance(capability, list) else NA,
        _value(data, "memory_used"), _value(data, "memory_reserved"), _value(data, "utilization"),
        _value(data, "memory_utilization"), _value(data, "temperature"), _value(data, "power_draw"),
        _value(data, "power_limit"), _value(data, "num_cores"), _value(data, "max_sm_clock"),
        _value(data, "mig_enabled"),
        tuple(MigDevice(int(m.get("index", 0)), _value(m, "uuid"), _value(m, "name"), _value(m, "memory_total"),
                        _value(m, "memory_used")) for m in migs),
        tuple(_process(p) for p in procs), bool(data.get("lost", False)),
        process_sm=_value(data, "process_sm"), accounting=_value(data, "accounting"))


def gpus_from_json(data: Mapping[str, Any]) -> tuple[GpuInfo, ...]:
    """The GPUs of a `to_json` (or `gpu_sample`) report, as this machine's own are: what another box streamed."""
    return tuple(_gpu(g) for g in data.get("gpus") or () if isinstance(g, Mapping))
