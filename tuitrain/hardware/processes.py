"""Every process on every GPU as rows to show, sort and (one's own, not a run's) end.

Pure functions of `GpuInfo`s, and `terminate`, which blocks (call it from a worker): SIGTERM, then
SIGKILL once `grace` seconds have passed. Who may end a process is one rule, `refusal`: a process of
a tuitrain run is stopped through its run (every rank saves and stops together), never one rank
alone; another user's process is theirs; a process nobody can identify is left alone.
"""

from __future__ import annotations

import shlex
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from tuitrain.hardware.devices import GpuInfo, GpuProcess
from tuitrain.hardware.na import NA, NaType
from tuitrain.humanize import gib
from tuitrain.rundir.json_shape import sendable

if TYPE_CHECKING:
    import psutil

SORTS = ("memory", "pid", "user")  # the order `o` cycles through on the GPUs screen
GRACE = 5.0  # seconds between SIGTERM and SIGKILL


@dataclass(frozen=True)
class GpuProcessRow:
    """One process on one GPU (a process with contexts on two GPUs is two rows)."""

    gpu: int
    process: GpuProcess

    @property
    def key(self) -> str:
        return f"{self.gpu}:{self.process.pid}"


def sort_processes(processes: tuple[GpuProcess, ...], by: str) -> list[GpuProcess]:
    """`by` one of SORTS: GPU memory (largest first, unknown last), pid, or user (then pid)."""
    if by == "memory":
        return sorted(processes, key=lambda p: (p.used_memory is NA, -(p.used_memory or 0), p.pid))
    if by == "user":
        return sorted(processes, key=lambda p: (p.user is NA, str(p.user), p.pid))
    return sorted(processes, key=lambda p: p.pid)


def process_rows(gpus: tuple[GpuInfo, ...], by: str) -> list[GpuProcessRow]:
    """Each GPU's processes in NVML order of GPUs, sorted `by` within each GPU."""
    return [GpuProcessRow(gpu.index, proc) for gpu in sorted(gpus, key=lambda g: g.index)
            for proc in sort_processes(gpu.processes, by)]


def sm_share(process: GpuProcess) -> str:
    """A process's SM share as shown: '15%', or 'N/A' where the driver does not give it (`use_notes` says why)."""
    return f"{process.sm_util}%" if process.sm_util is not NA else "N/A"


def _missing(gpu: GpuInfo) -> dict[str, str]:
    """The per-process figures `gpu` does not give, each with why (a code `_why` words)."""
    out = {}
    if gpu.process_sm is not True:
        out["SM share"] = "no samples"
    if gpu.accounting is not True:
        out["peak memory"] = "accounting off" if gpu.accounting is False else "no accounting"
    return out


def _why(code: str, indices: list[int]) -> str:
    if code == "no samples":
        return "the driver gives no per-process samples there"
    if code == "accounting off":
        return f"accounting mode is off: `sudo nvidia-smi -i {','.join(map(str, indices))} -am 1` turns it on"
    return "no accounting mode there"


def use_words(gpu: GpuInfo, process: GpuProcess) -> str:
    """'SM 15% of late · peak 4.0 GiB', each figure N/A with why where the driver does not give it."""
    missing = _missing(gpu)
    sm = f"SM {sm_share(process)} of late" if "SM share" not in missing else \
        f"SM share N/A ({_why(missing['SM share'], [gpu.index])})"
    peak = f"peak {gib(process.peak_memory, unit=True)}" if "peak memory" not in missing else \
        f"peak memory N/A ({_why(missing['peak memory'], [gpu.index])})"
    return f"{sm} · {peak}"


def use_notes(gpus: tuple[GpuInfo, ...]) -> list[str]:
    """Why a process's SM share or peak memory reads N/A, one line per reason, for the GPUs that hold processes: the
    driver gives no per-process samples there (`nvmlDeviceGetProcessUtilization`: GeForce, MIG, old drivers), or
    accounting mode is off or absent (it keeps each process's peak memory). [] when every figure is there."""
    reasons: dict[tuple[str, str], list[int]] = {}
    for gpu in sorted(gpus, key=lambda g: g.index):
        if gpu.processes and not gpu.lost:
            for what, code in _missing(gpu).items():
                reasons.setdefault((what, code), []).append(gpu.index)
    return [f"{what} per process: N/A on GPU {', '.join(map(str, indices))} ({_why(code, indices)})"
            for (what, code), indices in reasons.items()]


def command_line(pid: int) -> str | NaType:
    """The command `pid` runs with its arguments, as `ps -f` shows it ('python train.py --config a.toml');
    NA when it cannot be read (gone, in another container, not ours to read) or has none (a kernel thread).
    Reads /proc: call it from a worker."""
    import psutil

    try:
        words = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError, ValueError):
        return NA
    return sendable(shlex.join(words)) if words else NA  # psutil decodes non-UTF-8 bytes as surrogates


def short_command(command: str) -> str:
    """A command line with its program's folder left out ('python train.py' of '/opt/venv/bin/python train.py'),
    so that a narrow column shows its arguments; a quoted program (a path with spaces) is left whole."""
    program, space, rest = command.partition(" ")
    if program.startswith("'") or "/" not in program or command == NA:  # N/A: not seen, not a path
        return command
    return program.rsplit("/", 1)[1] + space + rest


def refusal(process: GpuProcess, me: str) -> str | None:
    """Why `me` may not end `process` from the GPUs view, or None when it may."""
    if process.owner is not None:
        return (f"pid {process.pid} is {process.owner.describe()}: stop the run with s (on Home or in its monitor), "
                "which saves and stops every rank, instead of killing one")
    if process.user is NA:
        return f"pid {process.pid}: its owner cannot be seen from here (another container, or gone)"
    if process.user != me:
        return f"pid {process.pid} belongs to {process.user}: only your own processes can be killed here"
    return None


def terminate(pid: int, grace: float = GRACE, user: str | None = None,
              clock: Callable[[], float] = time.monotonic) -> str:
    """End `pid`: SIGTERM, then SIGKILL if it still runs after `grace` seconds. `user`: the owner the
    view showed; a pid that now belongs to someone else (reused meanwhile) is left alone. Returns
    what happened, as a sentence."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if user is not None and proc.username() != user:
            return f"pid {pid} is no longer {user}'s process: left alone"
        proc.send_signal(signal.SIGTERM)
    except psutil.NoSuchProcess:
        return f"pid {pid} had already ended"
    except (psutil.AccessDenied, OSError) as exc:
        return f"pid {pid} could not be signalled: {exc}"
    deadline = clock() + grace
    while clock() < deadline:
        if _ended(proc):
            return f"pid {pid} ended on SIGTERM"
        time.sleep(0.05)
    try:
        proc.send_signal(signal.SIGKILL)
    except psutil.NoSuchProcess:
        return f"pid {pid} ended on SIGTERM"
    except (psutil.AccessDenied, OSError) as exc:
        return f"pid {pid} ignored SIGTERM and could not be killed: {exc}"
    return f"pid {pid} ignored SIGTERM for {grace:g} s: sent SIGKILL"


def _ended(proc: "psutil.Process") -> bool:
    """Gone, or a zombie (it has ended; its parent has not reaped it yet)."""
    import psutil

    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
