"""What this machine has to train on, in one look: NVIDIA GPUs (NVML), Apple MPS, the CPU.

No torch (the CLI and the app never import it). ``detect_hardware()`` is what the planner and
the preflight get; it honours ``TUITRAIN_NVML_TABLE`` (a recorded device table, see
`tuitrain.hardware.recorded`) so a driverless machine can plan for a recorded GPU box.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from tuitrain.hardware.devices import Discovery, GpuInfo, GpuProcess, MigDevice, discover
from tuitrain.hardware.host import HostInfo, current_user, host_info
from tuitrain.hardware.mps import mps_available
from tuitrain.hardware.na import NA, NaType
from tuitrain.hardware.recorded import library_from_env

__all__ = ["GpuInfo", "GpuProcess", "Hardware", "MigDevice", "cpu_has_bf16", "detect_hardware", "hardware_from"]


@dataclass(frozen=True)
class Hardware:
    gpus: tuple[GpuInfo, ...] = field(default_factory=tuple)
    mps: bool = False
    cpu_count: int = 1
    physical_cores: int = 0  # 0: unknown (a Hardware built by hand); planning then uses cpu_count
    nvml_reason: str = ""  # why NVML gave no GPU ("driver not found"); "" when it answered
    driver_version: str | NaType = NA
    host: HostInfo = field(default_factory=HostInfo)
    user: str = ""  # who we run as (to tell our processes from other users')
    cpu_bf16: bool | NaType = NA  # the CPU computes bf16 natively (AVX512-BF16 / AMX)
    real_gpus: bool = False  # the GPUs are this machine's, read from its driver (not a recorded table's, nor made up)

    @property
    def has_cuda(self) -> bool:
        return bool(self.gpus)

    def gpu(self, index: int) -> GpuInfo | None:
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def status_line(self) -> str:
        if self.nvml_reason:
            return f"no NVIDIA GPU (NVML: {self.nvml_reason})"
        if not self.gpus:
            return "no NVIDIA GPU (NVML found none)"
        return f"{len(self.gpus)} NVIDIA GPU(s), driver {self.driver_version}"


def cpu_has_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool | NaType:
    """Native bf16 on the CPU (the first "flags" line of /proc/cpuinfo); NA where unknown."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return NA


def hardware_from(discovery: Discovery, mps: bool = False, host: HostInfo | None = None, user: str = "",
                  cpu_bf16: bool | NaType = NA) -> Hardware:
    """A Hardware from a Discovery (pure: the planner's tests build theirs this way)."""
    host = host or HostInfo()
    return Hardware(gpus=discovery.gpus, mps=mps, cpu_count=host.cpu_count, physical_cores=host.physical_cores,
                    nvml_reason="" if discovery.available else discovery.reason,
                    driver_version=discovery.driver_version, host=host, user=user, cpu_bf16=cpu_bf16)


def detect_hardware(nvml: Any = None, probe_mps: bool = False, environ: Mapping[str, str] | None = None,
                    discovery: Discovery | None = None) -> Hardware:
    """Look at this machine. `nvml`: the NVML library (default: $TUITRAIN_NVML_TABLE's recorded
    table if set, else pynvml). `probe_mps`: ask torch in a child process (cached) instead of
    trusting the platform check alone. `discovery`: GPUs already read (a sampler's), not read again. `real_gpus`:
    the GPUs came from this machine's driver, not a recorded table (the CUDA run on them needs a CUDA torch)."""
    if nvml is None:
        nvml = library_from_env(os.environ if environ is None else environ)
    if discovery is None:
        discovery = discover(nvml)
    mps = mps_available(probe=probe_mps)
    found = hardware_from(discovery, mps=mps, host=host_info(), user=current_user(), cpu_bf16=cpu_has_bf16())
    # a discovery handed in was read the same way (the app's sampler honours $TUITRAIN_NVML_TABLE too)
    return dataclasses.replace(found, real_gpus=nvml is None and bool(found.gpus))
