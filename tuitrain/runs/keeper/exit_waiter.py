"""Sleeping until a process ends, instead of polling for it: a pidfd per watched process (Linux ≥ 5.3),
`select`ed with a timeout. Where pidfds do not exist the wait is a plain sleep, and callers notice exits on
their next look, as before."""

from __future__ import annotations

import os
import select
import time


class ExitWaiter:
    def __init__(self) -> None:
        self._fds: dict[int, int] = {}  # pid → pidfd

    def watch(self, pid: int) -> None:
        """Wake `wait` when `pid` ends (no-op when it is watched already, gone, or pidfds do not exist)."""
        if pid in self._fds or not hasattr(os, "pidfd_open"):
            return
        try:
            self._fds[pid] = os.pidfd_open(pid)
        except OSError:
            pass  # already gone (the caller's next look sees it) or not allowed

    @property
    def watching(self) -> bool:
        """Whether any exit can wake `wait` (False: pidfds do not exist here, or nothing is watched)."""
        return bool(self._fds)

    def wait(self, timeout: float) -> list[int]:
        """Sleep at most `timeout` seconds; return the watched pids that ended (they are no longer watched)."""
        if not self._fds:
            time.sleep(timeout)
            return []
        ready, _, _ = select.select(list(self._fds.values()), [], [], timeout)
        ended = [pid for pid, fd in self._fds.items() if fd in ready]
        for pid in ended:
            os.close(self._fds.pop(pid))
        return ended

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
