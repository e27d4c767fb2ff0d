"""Atomic file writes: a reader never sees half a file, a failed write never truncates the old one.

Files are created as `open()` creates them (0666 less the umask), not mkstemp's 0600: runs and
profiles on a shared workstation are read by other users whenever the umask lets them."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

CREATE_MODE = 0o666  # the kernel takes the umask (and a folder's default ACL) off this


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new, uniquely named file beside `path`, open for writing."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, CREATE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> None:
    """Write `text` to a temporary file beside `path`, fsync it, then rename it over `path`.
    `mode`: the file's permissions (None: 0666 less the umask, as for any new file)."""
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def current_umask() -> int:
    """The process's umask, read without changing it (os.umask would, for every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(folder: Path) -> None:
    """safetensors writes its files 0600 whatever the umask (safetensors#782): give every file of a folder
    (a checkpoint, a kept LoRA base, an export) the mode the umask asks for, so a lab's shared workstation can
    read it."""
    mode = 0o666 & ~current_umask()
    for path in folder.rglob("*"):
        if path.is_file():
            try:
                os.chmod(path, mode)
            except OSError:
                pass
