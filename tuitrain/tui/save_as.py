"""Save As: where an answer saves the profile, what saving there would do, and what the copy
changes so that it means the same from its new folder (said to the user afterwards)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuitrain.tui.profile_edits import set_path

if TYPE_CHECKING:
    from tuitrain.profile.paths import Moved

SAVE_AS_QUESTION = "Save the profile as: a name (saved in profiles/, listed on Home) or a .toml path from the working folder"


def shown_path(path: Path, cwd: Path) -> str:
    """A path as the user sees it: from the working folder when it is inside it, else absolute."""
    full, here = Path(path).absolute(), Path(cwd).absolute()
    return str(full.relative_to(here)) if full.is_relative_to(here) else str(full)


def with_changes(data: dict[str, Any], changes: Sequence[Moved]) -> dict[str, Any]:
    """A copy of `data` with each (key, old value, new value) change made."""
    out = copy.deepcopy(data)
    for key, _old, new in changes:
        set_path(out, key, new)
    return out


def change_notes(changes: Sequence[Moved]) -> list[tuple[str, str]]:
    """What to tell the user of Save As's changes, as (title, words): the run name, then the paths."""
    notes = [("Run name", f"run.name set to {new!r} (it was {old!r}, the old file's own name)")
             for key, old, new in changes if key == ("run", "name")]
    paths = [f"{'.'.join(key)} = {new!r}" + (" (the script still runs in the old file's folder)" if old is None else "")
             for key, old, new in changes if key != ("run", "name")]
    if paths:
        notes.append(("Paths", "relative paths rewritten from the new file's folder, naming the same files: "
                      + "; ".join(paths)))
    return notes


def save_as_target(answer: str | None, cwd: Path) -> Path | None:
    """The file a save-as answer names, or None: a bare name ("csvcopy", "csvcopy.toml": no folder)
    goes in ./profiles, where profiles are looked up by name; a path is relative to the working
    folder; either gets .toml."""
    answer = (answer or "").strip()
    if not answer:
        return None
    if "/" not in answer and "\\" not in answer and not answer.startswith("~") and answer not in (".", ".."):
        target = cwd / "profiles" / answer
    else:
        target = Path(answer).expanduser()
        if not target.is_absolute():
            target = cwd / target
    if target.suffix != ".toml":
        target = target.with_suffix(".toml")
    return target


def save_as_outcome(target: Path | None, own_file: Path | None, cwd: Path) -> str:
    """What saving to `target` would do (`own_file`: the profile's file, None for a new one), said
    before it is done ("writes profiles/csvcopy.toml")."""
    if target is None:
        return "give a name (saved in profiles/) or a .toml path"
    where = shown_path(target, cwd)
    if target.is_dir():
        return f"{where} is a folder: give a file name"
    if own_file is not None and target.resolve() == own_file.resolve():
        return f"writes {where} (this profile's own file)"
    if target.exists():
        return f"overwrites {where}"
    new_folder = "" if target.parent.is_dir() else f" (makes the folder {shown_path(target.parent, cwd)})"
    return f"writes {where}{new_folder}"
