"""Reading the files a run appends to: the end of a log (never the whole file), and the whole
lines written after an offset (a partial last line waits for its newline)."""

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


def read_new_lines(path: Path, offset: int) -> list[bytes]:
    """The complete lines (newline kept) written to `path` after byte `offset`; [] when there are
    none or the file does not exist yet. The caller advances its offset by each line's length."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
    except FileNotFoundError:
        return []
    return chunk[: chunk.rfind(b"\n") + 1].splitlines(keepends=True)
