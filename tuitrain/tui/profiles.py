"""Where the app finds profiles: ./profiles, the user's config folder, the built-in ones.

`tuitrain.profile.list_profiles` covers ./profiles and the built-ins; the user's config folder
($XDG_CONFIG_HOME/tuitrain/profiles, default ~/.config/tuitrain/profiles) is added here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tuitrain.profile import list_profiles
from tuitrain.profile.lookup import BUILTIN_DIR


@dataclass(frozen=True)
class ProfileEntry:
    name: str
    path: Path
    where: str  # "./profiles" | "config" | "built-in"


def user_profiles_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tuitrain" / "profiles"


def find_profiles(cwd: Path | None = None) -> list[ProfileEntry]:
    cwd = cwd or Path.cwd()
    entries: list[ProfileEntry] = []
    names: set[str] = set()
    local = (cwd / "profiles").resolve()
    for name, path in list_profiles(cwd).items():
        where = "built-in" if path.parent.resolve() == BUILTIN_DIR.resolve() else "./profiles"
        if where == "./profiles" and path.parent.resolve() != local:
            where = str(path.parent)
        entries.append(ProfileEntry(name, path, where))
        names.add(name)
    folder = user_profiles_dir()
    try:
        extra = sorted(p for p in folder.glob("*.toml") if p.is_file())
    except OSError:
        extra = []
    for path in extra:
        if path.stem not in names:
            entries.append(ProfileEntry(path.stem, path, "config"))
            names.add(path.stem)
    order = {"./profiles": 0, "config": 1, "built-in": 2}
    return sorted(entries, key=lambda e: (order.get(e.where, 1), e.name))


def profile_folders_stamp(cwd: Path | None = None) -> tuple[int | None, ...]:
    """The modification times of the folders profiles are found in: a file added, removed or
    renamed in one changes it (cheap enough to look at on every poll)."""
    cwd = cwd or Path.cwd()
    stamps: list[int | None] = []
    for folder in (cwd / "profiles", user_profiles_dir()):
        try:
            stamps.append(os.stat(folder).st_mtime_ns)
        except OSError:
            stamps.append(None)
    return tuple(stamps)
