"""The end of a log, read from the end (never the whole file)."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_BYTES = 64 * 1024


def read_tail(path: Path, nbytes: int = TAIL_BYTES) -> str:
    """The last `nbytes` of a file as text ("" when it does not exist)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - nbytes))
            return handle.read().decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return ""
