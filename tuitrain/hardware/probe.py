"""A light probe of the machine: no torch (the CLI and the app never import it)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    memory_total: int


@dataclass(frozen=True)
class Hardware:
    gpus: tuple[GpuInfo, ...] = field(default_factory=tuple)
    mps: bool = False
    cpu_count: int = 1

    @property
    def has_cuda(self) -> bool:
        return bool(self.gpus)


def _nvml_gpus() -> tuple[GpuInfo, ...]:
    try:
        import pynvml
    except ImportError:
        return ()
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return ()  # no driver: a normal state, not an error
    try:
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
            found.append(GpuInfo(index, str(name), str(uuid), int(total)))
        return tuple(found)
    except pynvml.NVMLError:
        return ()
    finally:
        pynvml.nvmlShutdown()


def detect_hardware() -> Hardware:
    mps = platform.system() == "Darwin" and platform.machine() == "arm64"
    return Hardware(gpus=_nvml_gpus(), mps=mps, cpu_count=os.cpu_count() or 1)
