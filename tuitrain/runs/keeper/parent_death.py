"""A child process that dies with the process that started it (Linux's parent-death signal): the
supervisor's launcher (SIGTERM) and a Slurm node's launcher (SIGKILL, after ignoring SIGTERM)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Callable


def die_with_parent(sig: int = signal.SIGTERM, first: Callable[[], None] | None = None) -> Callable[[], None] | None:
    """A preexec_fn asking Linux to send the child `sig` when this process dies (PR_SET_PDEATHSIG), after
    `first` (run in the child too); None where that does not exist."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        if first is not None:
            first()
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the prctl took hold
            os._exit(1)

    return preexec
