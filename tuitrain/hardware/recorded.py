"""A recorded device table: the few pynvml functions tuitrain calls, answered from JSON.

The one stand-in tuitrain allows, and only at the NVML boundary: machines with no NVIDIA driver
(CI, laptops) run discovery, the sampler, the planner and ``tuitrain gpus`` against a table
recorded on a real box. Inject it (``NvmlSession.open(RecordedNvml(table))``), or, for a
subprocess, point ``TUITRAIN_NVML_TABLE`` at the JSON file (`library_from_env`).

Table format (see tests/fixtures/nvml/README.md)::

    {"description": "...", "init_error": null | "LIBRARY_NOT_FOUND", "driver_version": "550.54.15",
     "devices": [{"name": ..., "uuid": ..., "pci_bus_id": ..., "compute_capability": [8, 6],
                  "memory": {"total": B, "used": B, "reserved": B}, "utilization": {"gpu": %, "memory": %},
                  "temperature": C, "power_usage": mW, "power_limit": mW, "num_cores": N,
                  "max_sm_clock": MHz, "mig_mode": [current, pending],
                  "mig_devices": [{"uuid": ..., "name": ..., "memory": {...}}],
                  "compute_processes": [{"pid": P, "used_memory": B | null}],
                  "graphics_processes": [...], "lost_after": N, "handle_error": "GPU_IS_LOST",
                  "process_utilization": [{"pid": P, "timestamp": us, "sm": %, "mem": %, "enc": %, "dec": %}],
                  "accounting_mode": 0 | 1,
                  "accounting_stats": {"P": {"max_memory_usage": B, "gpu_utilization": %, ...}}}]}

Any field may be ``{"error": "NOT_SUPPORTED"}`` (any NVML_ERROR_* name) and a missing field
raises NOT_SUPPORTED, as a driver does. Memory says both of NVML's answers: with ``reserved``, the
version 2 call answers ``used`` (nvidia-smi's figure) and ``reserved``, and version 1 counts the
reserve as used (``used + reserved``); without it, the table is of a driver that has no version 2
call (FUNCTION_NOT_FOUND), and version 1 answers ``used``. ``lost_after: N``: after N calls of
nvmlDeviceGetMemoryInfo (one per sample) every call on that GPU raises GPU_IS_LOST.
``process_utilization``: the samples nvmlDeviceGetProcessUtilization answers, all of them whatever time
stamp is asked (a recording of the recent ones; an empty list answers NOT_FOUND, as a driver does when no
process ran a kernel since). ``accounting_stats``: nvmlDeviceGetAccountingStats by pid (a pid it lacks
answers NOT_FOUND). Tables recorded before these fields answer NOT_SUPPORTED for them, as an old driver does.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

from tuitrain.errors import TuitrainError
from tuitrain.torch_build import NVML_TABLE_ENV

TABLE_ENV = NVML_TABLE_ENV  # the name, in one place (a rank reads it too: tuitrain.engine.device)


@functools.cache
def nvml_error_class() -> type[Exception]:
    """pynvml.NVMLError (imported on first use), so the recorded table raises the real errors."""
    try:
        import pynvml
    except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
        return _FallbackNVMLError
    return pynvml.NVMLError


class _FallbackNVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


_CODES = {
    "UNINITIALIZED": 1, "INVALID_ARGUMENT": 2, "NOT_SUPPORTED": 3, "NO_PERMISSION": 4, "NOT_FOUND": 6,
    "DRIVER_NOT_LOADED": 9, "TIMEOUT": 10, "LIBRARY_NOT_FOUND": 12, "FUNCTION_NOT_FOUND": 13,
    "GPU_IS_LOST": 15, "RESET_REQUIRED": 16, "LIB_RM_VERSION_MISMATCH": 18, "NO_DATA": 21,
    "GPU_NOT_FOUND": 28, "UNKNOWN": 999,
}


def error(name: str) -> Exception:
    """The exception pynvml raises for NVML_ERROR_<name> (e.g. NVMLError_NotSupported)."""
    return nvml_error_class()(_CODES[name])


class _Handle:
    __slots__ = ("index", "mig")

    def __init__(self, index: int, mig: int | None = None) -> None:
        self.index = index
        self.mig = mig

    def __repr__(self) -> str:
        return f"<recorded GPU {self.index}{'' if self.mig is None else f' MIG {self.mig}'}>"


class RecordedNvml:
    """Answers the pynvml calls tuitrain makes from a recorded table (a dict, see module doc)."""

    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1
    nvmlMemory_v2 = 0x2000028  # pynvml's: the version-2 struct's size | 2 << 24

    def __init__(self, table: Mapping[str, Any]) -> None:
        self.table = table
        self.NVMLError = nvml_error_class()
        self.devices: list[Mapping[str, Any]] = list(table.get("devices") or [])
        self.memory_reads = [0] * len(self.devices)
        self.initialized = False

    # ------------------------------------------------------------------ helpers
    def _device(self, handle: _Handle) -> Mapping[str, Any]:
        if not self.initialized:
            raise error("UNINITIALIZED")
        entry = self.devices[handle.index]
        lost_after = entry.get("lost_after")
        if lost_after is not None and self.memory_reads[handle.index] > lost_after:
            raise error("GPU_IS_LOST")
        if handle.mig is not None:
            return entry["mig_devices"][handle.mig]
        return entry

    def _field(self, handle: _Handle, key: str) -> Any:
        value = self._device(handle).get(key, {"error": "NOT_SUPPORTED"})
        if isinstance(value, dict) and "error" in value:
            raise error(value["error"])
        return value

    # ------------------------------------------------------------------ system
    def nvmlInit(self) -> None:
        if self.table.get("init_error"):
            raise error(self.table["init_error"])
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        if not self.initialized:
            raise error("UNINITIALIZED")
        return str(self.table.get("driver_version", ""))

    def nvmlDeviceGetCount(self) -> int:
        if not self.initialized:
            raise error("UNINITIALIZED")
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        if not self.initialized:
            raise error("UNINITIALIZED")
        if not 0 <= index < len(self.devices):
            raise error("INVALID_ARGUMENT")
        if self.devices[index].get("handle_error"):
            raise error(self.devices[index]["handle_error"])
        return _Handle(index)

    # ------------------------------------------------------------------ device
    def nvmlDeviceGetName(self, handle: _Handle) -> str:
        return str(self._field(handle, "name"))

    def nvmlDeviceGetUUID(self, handle: _Handle) -> str:
        return str(self._field(handle, "uuid"))

    def nvmlDeviceGetPciInfo(self, handle: _Handle) -> SimpleNamespace:
        bus_id = str(self._field(handle, "pci_bus_id"))
        return SimpleNamespace(busId=bus_id, busIdLegacy=bus_id[-12:])

    def nvmlDeviceGetCudaComputeCapability(self, handle: _Handle) -> tuple[int, int]:
        major, minor = self._field(handle, "compute_capability")
        return int(major), int(minor)

    def nvmlDeviceGetMemoryInfo(self, handle: _Handle, version: Any = None) -> SimpleNamespace:
        memory = self._device(handle).get("memory")
        if version and isinstance(memory, dict) and "reserved" not in memory:
            raise error("FUNCTION_NOT_FOUND")  # a driver before version 2 (nvmlDeviceGetMemoryInfo_v2)
        if handle.mig is None and 0 <= handle.index < len(self.memory_reads):
            self.memory_reads[handle.index] += 1  # one per sample: the version the sampler settled on
        memory = self._field(handle, "memory")
        total, used, reserved = int(memory["total"]), int(memory["used"]), int(memory.get("reserved", 0))
        if version:
            return SimpleNamespace(version=version, total=total, reserved=reserved, used=used, free=total - reserved - used)
        return SimpleNamespace(total=total, used=used + reserved, free=total - used - reserved)

    def nvmlDeviceGetUtilizationRates(self, handle: _Handle) -> SimpleNamespace:
        rates = self._field(handle, "utilization")
        return SimpleNamespace(gpu=int(rates["gpu"]), memory=int(rates["memory"]))

    def nvmlDeviceGetTemperature(self, handle: _Handle, sensor: int) -> int:
        return int(self._field(handle, "temperature"))

    def nvmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        return int(self._field(handle, "power_usage"))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: _Handle) -> int:
        return int(self._field(handle, "power_limit"))

    def nvmlDeviceGetNumGpuCores(self, handle: _Handle) -> int:
        return int(self._field(handle, "num_cores"))

    def nvmlDeviceGetMaxClockInfo(self, handle: _Handle, clock_type: int) -> int:
        return int(self._field(handle, "max_sm_clock"))

    def _processes(self, handle: _Handle, key: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=int(p["pid"]), usedGpuMemory=p.get("used_memory"),
                                gpuInstanceId=p.get("gpu_instance_id", 0xFFFFFFFF),
                                computeInstanceId=p.get("compute_instance_id", 0xFFFFFFFF))
                for p in self._field(handle, key)]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: _Handle) -> list[SimpleNamespace]:
        return self._processes(handle, "compute_processes")

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: _Handle) -> list[SimpleNamespace]:
        return self._processes(handle, "graphics_processes")

    def nvmlDeviceGetProcessUtilization(self, handle: _Handle, time_stamp: int) -> list[SimpleNamespace]:
        samples = self._field(handle, "process_utilization")
        if not samples:
            raise error("NOT_FOUND")
        return [SimpleNamespace(pid=int(s["pid"]), timeStamp=int(s.get("timestamp", 0)), smUtil=int(s.get("sm", 0)),
                                memUtil=int(s.get("mem", 0)), encUtil=int(s.get("enc", 0)), decUtil=int(s.get("dec", 0)))
                for s in samples]

    def nvmlDeviceGetAccountingMode(self, handle: _Handle) -> int:
        return int(self._field(handle, "accounting_mode"))

    def nvmlDeviceGetAccountingStats(self, handle: _Handle, pid: int) -> SimpleNamespace:
        stats = self._field(handle, "accounting_stats").get(str(pid))
        if stats is None:
            raise error("NOT_FOUND")
        return SimpleNamespace(gpuUtilization=int(stats.get("gpu_utilization", 0)),
                               memoryUtilization=int(stats.get("memory_utilization", 0)),
                               maxMemoryUsage=int(stats.get("max_memory_usage", 0)), time=int(stats.get("time", 0)),
                               startTime=int(stats.get("start_time", 0)), isRunning=int(stats.get("is_running", 1)))

    def nvmlDeviceGetMigMode(self, handle: _Handle) -> list[int]:
        return [int(x) for x in self._field(handle, "mig_mode")]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: _Handle) -> int:
        self._field(handle, "mig_mode")
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: _Handle, index: int) -> _Handle:
        migs = self._device(handle).get("mig_devices") or []
        if index >= len(migs):
            raise error("NOT_FOUND")
        return _Handle(handle.index, index)


class RecordedTableError(TuitrainError):
    """A recorded device table that cannot be read: one line naming the file and the fix."""


def load_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordedTableError(f"{TABLE_ENV}={path}: no such file; point it at a recorded device table "
                                 "(tests/fixtures/nvml/*.json), or unset it to ask NVML") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordedTableError(f"{TABLE_ENV}={path}: cannot be read ({exc}); point it at a recorded device "
                                 "table, or unset it to ask NVML") from None
    except json.JSONDecodeError as exc:
        raise RecordedTableError(f"{TABLE_ENV}={path}: not JSON (line {exc.lineno}: {exc.msg}); point it at a "
                                 "recorded device table, or unset it to ask NVML") from None
    if not isinstance(table, dict):
        raise RecordedTableError(f"{TABLE_ENV}={path}: not a recorded device table (a JSON object with "
                                 "\"devices\"); point it at one, or unset it to ask NVML")
    return table


def library_from_env(environ: Mapping[str, str]) -> RecordedNvml | None:
    """A RecordedNvml of the table $TUITRAIN_NVML_TABLE names, or None when it is unset."""
    path = environ.get(TABLE_ENV)
    return RecordedNvml(load_table(path)) if path else None
