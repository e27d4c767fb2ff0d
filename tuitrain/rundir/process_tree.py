"""Finding and ending every process of a run, whatever session or group its ranks live in.

torch's elastic agent starts each rank in a session of its own, so a process-group kill misses
them: we track processes (descendants and the ranks' own records) and end them one by one.

A process is known by its pid *and* its start time: pids are reused (pid_max is often 32768 and a
run cycles through dozens), and a pid alone would let a late signal reach a stranger.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import TYPE_CHECKING, Any, Iterable

import psutil

if TYPE_CHECKING:
    from tuitrain.rundir.record import ProcessIdentity

START_TIME_TOLERANCE = 0.05  # seconds; /proc reports start times in clock ticks
KILL_GRACE_SECONDS = 5.0  # between SIGTERM and SIGKILL when tuitrain ends a run's processes


def identity(pid: int) -> ProcessIdentity | None:
    """{"pid", "started"} of a live process, as run.json records it; None when it is gone."""
    try:
        return {"pid": pid, "started": psutil.Process(pid).create_time()}
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def find(pid: int | None, started: float | None = None) -> psutil.Process | None:
    """The live process with this pid and start time (any start time when `started` is None);
    None when it is gone, a zombie, or the pid now belongs to another process."""
    if not pid:
        return None
    try:
        proc = psutil.Process(pid)
        if started is not None and abs(proc.create_time() - float(started)) > START_TIME_TOLERANCE:
            return None
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def find_recorded(entry: Any) -> psutil.Process | None:
    """`entry` is a recorded identity ({"pid", "started"}) or, in records written before start
    times were kept, a bare pid."""
    if isinstance(entry, dict):
        return find(entry.get("pid"), entry.get("started"))
    if isinstance(entry, int):
        return find(entry)
    return None


def alive(pid: int | None) -> bool:
    return find(pid) is not None


def running(proc: psutil.Process) -> bool:
    """Still the same process (psutil compares start times) and not a zombie."""
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def descendants(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return list(proc.children(recursive=True))
    except psutil.NoSuchProcess:
        return []


def _send(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        if proc.pid == os.getpid():
            continue
        try:
            proc.send_signal(sig)  # psutil checks the start time first: a reused pid is never signalled
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


def end_processes(procs: Iterable[psutil.Process], grace: float = 5.0) -> list[int]:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL what is left. Returns the pids killed."""
    targets = [p for p in {p.pid: p for p in procs}.values() if running(p)]
    _send(targets, signal.SIGTERM)
    _, left = psutil.wait_procs(targets, timeout=grace)
    left = [p for p in left if running(p)]
    _send(left, signal.SIGKILL)
    psutil.wait_procs(left, timeout=2.0)
    return [p.pid for p in left]


def keep_popen_code(child: subprocess.Popen[bytes], ended: Iterable[psutil.Process]) -> None:
    """`end_processes` waits for what it ends, and for a child of ours that wait reaps it: Popen, asking later,
    finds no child and calls its exit 0 (a launcher killed in a teardown then read as a success). Give Popen the
    code psutil saw."""
    if child.returncode is not None:
        return
    code = next((getattr(p, "returncode", None) for p in ended if p.pid == child.pid), None)
    if code is not None:
        child.returncode = int(code)


def signal_name(code: int | None) -> str | None:
    """`-9` (Popen's way) or `137` (a shell's way) → "SIGKILL"; None for a plain exit code."""
    if code is None:
        return None
    number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else None
    if number is None:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
