"""Sleeping until something a queued run waits for may have changed, at almost no cost: Linux inotify (through
ctypes, no dependency) on a few folders — the queue folder (entries come and go), each dependency's run
directory (its run.json is replaced when it ends), the run's control/ (a cancel) — and the signals that end the
wait (`signal.set_wakeup_fd`). Where inotify is missing, a plain poll every FALLBACK_SECONDS."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import signal
from pathlib import Path
from typing import Sequence

IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
MASK = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE  # not writes: a lock file's close would wake everyone
FALLBACK_SECONDS = 1.0


class Wakeup:
    def __init__(self, folders: Sequence[Path]) -> None:
        self.fd = -1
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd >= 0:
                self.fd = fd
                for folder in folders:
                    libc.inotify_add_watch(fd, os.fsencode(str(folder)), MASK)  # a folder we cannot watch: the timeout
        except (OSError, AttributeError):
            self.fd = -1
        self.signal_read, signal_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.signal_write = signal_write
        self.previous = signal.set_wakeup_fd(signal_write, warn_on_full_buffer=False)

    def wait(self, timeout: float) -> bool:
        """Sleep at most `timeout` s; True when woken by a change or a signal."""
        fds = [self.signal_read] + ([self.fd] if self.fd >= 0 else [])
        if self.fd < 0:
            timeout = min(timeout, FALLBACK_SECONDS)
        ready, _, _ = select.select(fds, [], [], max(0.0, timeout))
        for fd in ready:
            try:
                while os.read(fd, 65536):
                    pass
            except BlockingIOError:
                pass
        return bool(ready)

    def close(self) -> None:
        signal.set_wakeup_fd(self.previous)
        for fd in (self.fd, self.signal_read, self.signal_write):
            if fd >= 0:
                os.close(fd)
