"""One NVML session and the one gate every NVML call passes.

The gate turns any ``NVMLError`` (not supported, no permission, GPU lost, a function this driver
lacks) into `NA`, so callers need no branches. A device that reports GPU_IS_LOST once is marked
lost and not asked again in this session. No driver at all is a normal state: the session opens
"unavailable" with a reason a person can read ("driver not found"), and reports no device.

The library is injected: ``NvmlSession.open(lib)`` takes the real ``pynvml`` module (the default)
or a `tuitrain.hardware.recorded.RecordedNvml` (a recorded device table, for machines with no GPU).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from tuitrain.hardware.na import NA
from tuitrain.torch_build import nvml_library_loads as driver_library_loadable  # one look at the driver

GPU_IS_LOST = 15
NOT_FOUND = 6
_REASONS = {
    12: "driver not found",  # NVML_ERROR_LIBRARY_NOT_FOUND
    9: "driver not loaded",  # NVML_ERROR_DRIVER_NOT_LOADED
    4: "no permission",  # NVML_ERROR_NO_PERMISSION
    18: "driver/library version mismatch",  # NVML_ERROR_LIB_RM_VERSION_MISMATCH
    28: "no GPU found by the driver",  # NVML_ERROR_GPU_NOT_FOUND
}


def default_library() -> Any:
    """The real pynvml module, or None when nvidia-ml-py is not installed."""
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def error_class(lib: Any) -> type[BaseException]:
    """The exception type the library raises (pynvml.NVMLError; the recorded table raises it too)."""
    return getattr(lib, "NVMLError", None) or _NoError


class _NoError(Exception):
    """Stands for the error class of a library that has none (never raised)."""


def reason_for(exc: BaseException) -> str:
    code = getattr(exc, "value", None)
    if code in _REASONS:
        return _REASONS[code]
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # noqa: BLE001 - pynvml's __str__ asks the library for unknown codes, which can fail any way
        return f"NVML error {code}"


class NvmlSession:
    """nvmlInit once, the gate for every call, nvmlShutdown once. Use as a context manager."""

    def __init__(self, lib: Any, available: bool, reason: str = "") -> None:
        self.lib = lib
        self.available = available
        self.reason = reason
        self.errors: Counter[str] = Counter()
        self.lost: set[int] = set()
        self._error = error_class(lib) if lib is not None else _NoError
        self._handles: dict[int, Any] = {}
        self.memory_v1_only: set[int] = set()  # GPUs whose driver refused the version 2 memory call (devices.read_memory)
        self.process_samples_seen: dict[int, int] = {}  # GPU → the newest per-process sample read (µs, devices)

    @classmethod
    def open(cls, lib: Any = None) -> "NvmlSession":
        """Start NVML through `lib` (default: pynvml). Never raises: no driver → unavailable."""
        if lib is None and not driver_library_loadable():
            return cls(None, False, _REASONS[12])
        lib = lib if lib is not None else default_library()
        if lib is None:
            return cls(None, False, "nvidia-ml-py is not installed")
        try:
            lib.nvmlInit()
        except error_class(lib) as exc:
            return cls(lib, False, reason_for(exc))
        except OSError as exc:  # a broken libnvidia-ml.so
            return cls(lib, False, f"driver not usable ({exc})")
        return cls(lib, True)

    # ------------------------------------------------------------------ the gate
    def call(self, name: str, *args: Any, found_none: Any = NA) -> Any:
        """lib.<name>(*args), or NA when the library lacks it or NVML refuses. `found_none`: the answer when NVML
        says NOT_FOUND (a supported call with nothing to report, e.g. no process ran a kernel since)."""
        if not self.available:
            return NA
        fn: Callable[..., Any] | None = getattr(self.lib, name, None)
        if fn is None:
            self.errors[f"{name}: missing"] += 1
            return NA
        try:
            return fn(*args)
        except self._error as exc:
            code = getattr(exc, "value", None)
            if code == NOT_FOUND and found_none is not NA:
                return found_none
            self.errors[f"{name}: {reason_for(exc)}"] += 1
            if code == GPU_IS_LOST:
                raise _Lost() from exc
            return NA

    def device_call(self, index: int, name: str, *args: Any, handle: Any = None, found_none: Any = NA) -> Any:
        """lib.<name>(handle of GPU `index`, *args) through the gate; NA for a lost GPU.

        `handle` overrides the GPU's own handle (a MIG instance's handle of GPU `index`); `found_none`: as `call`."""
        if index in self.lost:
            return NA
        try:
            if handle is None:
                handle = self.handle(index)
            if handle is NA:
                return NA
            return self.call(name, handle, *args, found_none=found_none)
        except _Lost:
            self.lost.add(index)
            return NA

    def handle(self, index: int) -> Any:
        if index not in self._handles:
            try:
                handle = self.call("nvmlDeviceGetHandleByIndex", index)
            except _Lost:
                self.lost.add(index)
                return NA
            if handle is NA:
                return NA  # not cached: a transient failure may clear
            self._handles[index] = handle
        return self._handles[index]

    def system_call(self, name: str, *args: Any) -> Any:
        try:
            return self.call(name, *args)
        except _Lost:
            return NA

    def device_count(self) -> int:
        count = self.system_call("nvmlDeviceGetCount")
        return int(count) if count is not NA else 0

    def constant(self, name: str, default: int) -> int:
        """A pynvml constant (NVML_TEMPERATURE_GPU, ...), or its documented value."""
        return int(getattr(self.lib, name, default))

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        if self.available:
            self.available = False
            try:
                self.lib.nvmlShutdown()
            except self._error:
                pass

    def __enter__(self) -> "NvmlSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Lost(Exception):
    """Internal: the device answered GPU_IS_LOST (caught by device_call)."""


def text(value: Any) -> Any:
    """NVML strings come as bytes from older pynvml versions and as str from newer ones."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value
