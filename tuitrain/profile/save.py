"""Writing profiles: atomically, keeping the old file's permissions, its comments, key order and layout
(round-trip editing, toml_edit), and a .bak only when the file had to be rewritten and had comments."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import stat
import tomllib
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


def _fresh_text(data: dict[str, Any]) -> str:
    """A new file's text: readable sections ([table], [[list of tables]]); tomli-w's if that would not
    read back to `data`."""
    from . import toml_edit

    try:
        text = toml_edit.render(data)
        if toml_edit.same(tomllib.loads(text), data):
            return text
    except Exception:  # noqa: BLE001 - any failure of the layout writer falls back to the plain one
        pass
    return tomli_w.dumps(data)


def _edited_text(old_text: str, data: dict[str, Any]) -> str | None:
    """`old_text` edited in place to hold `data` (comments, order and layout kept), or None when that
    cannot be done exactly (the old text does not parse, or the edit would not read back to `data`)."""
    from . import toml_edit

    try:
        old = tomllib.loads(old_text)
        text = toml_edit.edit(old_text, old, data)
        if toml_edit.same(tomllib.loads(text), data):
            return text
    except Exception:  # noqa: BLE001 - any failure of the round-trip editor falls back to rewriting the file
        pass
    return None


def save_profile(data: dict[str, Any], path: Path) -> list[Problem]:
    """Write `data` as TOML to `path`, atomically.

    An existing file is edited in place: changed values keep their place and comments, new keys go
    at the end of their table, removed keys go with their own comment lines, and the rest of the
    text is kept as it was. A new file is written with [sections] and [[lists of tables]]. Whatever
    is written is first read back and must give `data` exactly; when editing in place cannot manage
    that, the file is rewritten whole (comments lost), a file with comments is first copied to
    `<name>.toml.bak`, and a warning says so. Returns those warnings.

    The text goes to a temporary file in the same folder, is flushed and fsynced, then replaces
    the target; the old file's permissions are kept. On any failure the temporary file is
    removed, the old file is untouched, and a ProfileError says why.
    """
    path = Path(path)
    label = str(path)
    bad = list(_unwritable(data, ""))
    if bad:
        raise ProfileError([Problem(label, key, message) for key, message in bad])
    try:
        tomli_w.dumps(data)  # the fallback writer must manage it too; it names what TOML cannot hold
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
        edited = _edited_text(old_text, data)
        text = edited if edited is not None else _fresh_text(data)
        if edited is None and has_comments(old_text) and old_text != text:
            bak = backup_path(target)
            try:
                shutil.copy2(target, bak)
            except OSError as exc:
                why = (f"cannot write in the folder {folder}: permission denied"
                       if isinstance(exc, PermissionError) else f"cannot save: {exc.strerror or exc}")
                raise _fail(label, f"{why} (while keeping a backup at {bak})",
                            "the file has comments that saving would drop") from None
            warnings.append(Problem(label, "", "this file could not be edited in place, so its comments are not kept; "
                                    f"the previous file, comments included, is at {bak}",
                                    severity="warning"))
    else:
        text = _fresh_text(data)

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
