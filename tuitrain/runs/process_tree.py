"""Finding and ending every process of a run, whatever session or group its ranks live in.

torch's elastic agent starts each rank in a session of its own, so a process-group kill misses
them: we track pids (descendants and the ranks' own records) and end them one by one.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Iterable

import psutil


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def descendants(pid: int) -> set[int]:
    try:
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        if pid and pid != os.getpid():
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def end_processes(pids: Iterable[int], grace: float = 5.0) -> list[int]:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL what is left. Returns the pids killed."""
    targets = [p for p in set(pids) if alive(p)]
    signal_all(targets, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in targets):
        time.sleep(0.1)
    left = [p for p in targets if alive(p)]
    signal_all(left, signal.SIGKILL)
    return left
