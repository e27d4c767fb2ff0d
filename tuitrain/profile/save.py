"""Writing profiles: atomically, keeping the old file's permissions, and a .bak of a file whose
comments the TOML writer would drop."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import stat
from pathlib import Path
from typing import Any, Iterator

import tomli_w

from tuitrain.atomic import write_text_atomic

from .problems import Problem, ProfileError

_WRITABLE = (str, int, float, bool, _dt.date, _dt.time, _dt.datetime)


def _unwritable(value: Any, key: str) -> Iterator[tuple[str, str]]:
    if value is None:
        yield key, "has no value (None); TOML cannot write it: remove the key or give a value"
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                yield f"{key}.{k}" if key else str(k), f"key {k!r} is not a string"
            else:
                yield from _unwritable(v, f"{key}.{k}" if key else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _unwritable(v, f"{key}[{i}]")
    elif not isinstance(value, _WRITABLE):
        yield key, f"a {type(value).__name__} cannot be written to TOML"


def has_comments(text: str) -> bool:
    """Whether TOML text has a '#' comment (a '#' outside any string)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            return True
        if c in "\"'":
            triple = text[i:i + 3] == c * 3
            close = c * 3 if triple else c
            i += 3 if triple else 1
            while i < n:
                if c == '"' and text[i] == "\\":
                    i += 2
                    continue
                if text.startswith(close, i):
                    i += len(close)
                    # a multi-line string may end with up to two extra quotes
                    while triple and i < n and text[i] == c:
                        i += 1
                    break
                if not triple and text[i] == "\n":
                    break  # unterminated; let the parser complain elsewhere
                i += 1
            continue
        i += 1
    return False


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def _fail(label: str, message: str, fix: str | None = None) -> ProfileError:
    return ProfileError([Problem(label, "", message, fix)])


def save_profile(data: dict[str, Any], path: Path) -> list[Problem]:
    """Write `data` as TOML to `path`, atomically.

    The text goes to a temporary file in the same folder, is flushed and fsynced, then replaces
    the target; the old file's permissions are kept. On any failure the temporary file is
    removed, the old file is untouched, and a ProfileError says why. If the old file has
    comments (which the writer cannot keep), it is first copied to `<name>.toml.bak` and a
    warning says so. Returns those warnings.
    """
    path = Path(path)
    label = str(path)
    bad = list(_unwritable(data, ""))
    if bad:
        raise ProfileError([Problem(label, key, message) for key, message in bad])
    try:
        text = tomli_w.dumps(data)
    except (TypeError, ValueError) as exc:
        raise _fail(label, f"cannot write as TOML: {exc}") from None

    target = path.resolve() if path.is_symlink() else path
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise _fail(label, "is a folder, not a file", "give a .toml file name")
    if not folder.is_dir():
        raise _fail(label, f"the folder {folder} does not exist", "create it first")

    warnings: list[Problem] = []
    mode: int | None = None  # a new file: 0666 less the umask; an existing one keeps its mode
    if target.exists():
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
            old_text = target.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise _fail(label, f"cannot read the existing file: {exc.strerror or exc}") from None
        if has_comments(old_text) and old_text != text:
            bak = backup_path(target)
            try:
                shutil.copy2(target, bak)
            except OSError as exc:
                why = (f"cannot write in the folder {folder}: permission denied"
                       if isinstance(exc, PermissionError) else f"cannot save: {exc.strerror or exc}")
                raise _fail(label, f"{why} (while keeping a backup at {bak})",
                            "the file has comments that saving would drop") from None
            warnings.append(Problem(label, "", "comments are not kept when saving; "
                                    f"the previous file, comments included, is at {bak}",
                                    severity="warning"))

    try:
        write_text_atomic(target, text, mode)
    except OSError as exc:
        if isinstance(exc, PermissionError):
            message = f"cannot write in the folder {folder}: permission denied"
        elif isinstance(exc, IsADirectoryError):
            message = "is a folder, not a file"
        else:
            message = f"cannot save: {exc.strerror or exc}"
        raise _fail(label, message) from None
    try:  # make the rename itself durable
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    return warnings
