"""A full disk, named in one line wherever a run meets it: a checkpoint's save (torch's zip writer then says only
"unexpected pos 9664 vs 9556"), a log or event written, its record. Standard library only: run.json's writer asks it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Iterable

FULL_BELOW_BYTES = 1024 * 1024


def full_disk(folder: Path) -> str | None:
    """"the disk holding X is full (12 KiB free)" when it is; None otherwise."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    if free >= FULL_BELOW_BYTES:
        return None
    return f"the disk holding {folder} is full ({free // 1024} KiB free)"


# The system's own words for a full disk (or a spent quota), as Python, safetensors (Rust's io::Error) and shells
# print them. torch's zip writer says none of them ("unexpected pos 9664 vs 9556", "file write failed").
_FULL_WORDS = re.compile(r"No space left on device|Disk quota exceeded")
_FULL_CODES = re.compile(r"\[Errno (?:28|122)\]|StorageFull|QuotaExceeded|os error (?:28|122)\b")
DISK_WAS_FULL = "a disk was full"


def disk_full(folders: Iterable[str | Path | None], said: str = "") -> str | None:
    """The one line that names a full disk, wherever a run met it (a save, a log, its record): "the disk holding X is
    full (12 KiB free)" for the first of `folders` that is; else, when `said` (an error, a log's tail) holds the
    system's words for it, "a disk was full (No space left on device)" (space freed since, or a quota); None when
    neither."""
    for folder in folders:
        if folder:
            found = full_disk(Path(folder))
            if found:
                return found
    words = _FULL_WORDS.search(said) or _FULL_CODES.search(said)
    return f"{DISK_WAS_FULL} ({words.group(0)})" if words else None


def names_full_disk(text: str) -> bool:
    """Whether `text` already says a disk was full in `disk_full`'s words (so it is not said twice)."""
    return DISK_WAS_FULL in text or bool(re.search(r"the disk holding .+ is full \(", text))


def exception_text(exc: BaseException) -> str:
    """An exception and those it was raised from or during, as text (torch's "unexpected pos" is raised while its
    writer's own failure is handled; an OSError's errno is in its str)."""
    parts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)
