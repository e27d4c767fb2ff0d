"""Can a folder be made and written here: the one answer for run.output_dir, asked by validate (the profile's
rule), by the plan (the output folder the run would use, its default included) and by the start itself."""

from __future__ import annotations

import tempfile
from pathlib import Path


def unusable_folder(path: Path) -> str | None:
    """Why `path` cannot be used as a folder to write into (a file in its way, a read-only or pseudo file system
    such as /proc, no permission); None when it can. Probes with a temporary folder in the nearest folder that
    exists, removed again: permission bits alone do not say that /proc refuses every mkdir, even to root."""
    existing = path
    try:
        if path.exists() and not path.is_dir():
            return f"{path} is a file, not a folder"
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            return f"{path} cannot be created: {existing} is a file"
        Path(tempfile.mkdtemp(prefix=".tuitrain-probe-", dir=existing)).rmdir()
    except OSError as exc:
        done = "written" if existing == path else "created"
        return (f"{path} cannot be {done}: {existing} takes no new folder ({exc.strerror or exc}): a read-only or "
                "special file system such as /proc, or no write permission")
    return None
