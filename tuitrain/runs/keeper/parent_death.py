"""A child process that dies with the process that started it (Linux's parent-death signal): the
supervisor's launcher (SIGTERM), a Slurm node's launcher (SIGKILL, after ignoring SIGTERM) and the app each browser
tab of `tuitrain serve` runs (SIGKILL)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Callable

PR_SET_PDEATHSIG = 1


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
        libc.prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent died before the prctl took hold
            os._exit(1)

    return preexec


def end_with(parent: int, sig: int = signal.SIGTERM) -> None:
    """The same asked by the child itself, once started (a process another program started for us, such as an app
    that `tuitrain serve`'s textual-serve runs): `sig` when `parent` dies; ends now if it is gone already. Nothing
    where Linux's signal does not exist."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent:  # the parent died before the prctl took hold (or never was ours)
        os.kill(os.getpid(), sig)
