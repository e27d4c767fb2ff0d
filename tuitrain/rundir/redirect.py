"""Pointing this process's fds 1 and 2 at a log file (append), so that C extensions and child processes write
there too: a rank's log, a node agent's or a Slurm agent's launcher log."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def redirect_output(path: Path) -> None:
    """From here on fds 1 and 2 append to `path` (created with the umask's mode); Python's buffers are flushed
    first so nothing printed before lands after."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)  # the umask decides
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
