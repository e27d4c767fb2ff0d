"""A sampled snapshot as plain JSON data: what `tuitrain gpus --json` prints and what a node agent sends home."""

from __future__ import annotations

from typing import Any

from tuitrain.hardware.mapping import cuda_ordinals, pci_order
from tuitrain.hardware.na import plain
from tuitrain.hardware.sampler import Snapshot


def to_json(snapshot: Snapshot, mps: bool) -> dict[str, Any]:
    discovery = snapshot.discovery
    ordinals = cuda_ordinals(discovery.gpus)
    gpus = []
    for gpu in pci_order(discovery.gpus):
        data = plain(gpu)
        data["cuda_index"] = ordinals[gpu.index]
        data["processes"] = [{**plain(p), "owner": plain(p.owner) if p.owner else None} for p in gpu.processes]
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
