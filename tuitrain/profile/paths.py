"""The profile keys that hold local paths, and how such a path moves with its profile.

A relative path in a profile starts from the profile's folder (validate and load resolve it so).
"always" keys are paths whatever they hold; "if_exists" keys (a model or tokenizer) are a Hub id
unless they name something there, or are written as a path ("./…", "../…").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeGuard

Rule = Literal["always", "if_exists"]

PATH_KEYS: tuple[tuple[tuple[str, ...], Rule], ...] = (
    (("data", "train_file"), "always"),
    (("data", "validation_file"), "always"),
    (("model", "name_or_path"), "if_exists"),
    (("model", "tokenizer"), "if_exists"),
    (("distributed", "deepspeed", "config_file"), "always"),
    (("distributed", "deepspeed", "offload_optimizer_nvme_path"), "always"),
    (("distributed", "deepspeed", "offload_param_nvme_path"), "always"),
    (("training", "deepspeed"), "always"),
    (("script", "path"), "always"),
    (("script", "workdir"), "always"),
)


def is_relative_local(value: Any, rule: Rule, base_dir: Path) -> TypeGuard[str]:
    """Whether `value` is a relative local path from `base_dir` (not absolute, not ~, not a Hub id)."""
    if not isinstance(value, str) or not value or Path(value).expanduser().is_absolute():
        return False
    return rule == "always" or value.startswith(".") or (base_dir / value).exists()


def moved_path(value: str, old_dir: Path, new_dir: Path) -> str:
    """`value`, relative to `old_dir`, written relative to `new_dir` so that it names the same file
    (absolute where no relative path leads there, e.g. another drive)."""
    full = Path(old_dir).absolute() / Path(value).expanduser()
    # through the file system, as the loader will read it (".." after a symlinked folder); lexically
    # for what does not exist yet
    full = full.resolve() if full.exists() else Path(os.path.normpath(full)).resolve()
    try:
        return os.path.relpath(full, Path(new_dir).absolute().resolve())
    except ValueError:
        return str(full)


Moved = tuple[tuple[str, ...], str | None, str]


def moved_paths(data: dict[str, Any], old_dir: Path, new_dir: Path) -> list[Moved]:
    """The path keys of `data` that must change for the profile to move from `old_dir` to `new_dir`
    and still name the same files: (key, old value, new value) each. A [script] without a workdir
    runs in its profile's folder: it gets the old folder as its workdir (old value None), so it
    still runs there."""
    if Path(old_dir).absolute().resolve() == Path(new_dir).absolute().resolve():
        return []
    out: list[Moved] = []
    for keys, rule in PATH_KEYS:
        table: Any = data
        for key in keys[:-1]:
            table = table.get(key) if isinstance(table, dict) else None
        value = table.get(keys[-1]) if isinstance(table, dict) else None
        if is_relative_local(value, rule, old_dir):
            moved = moved_path(value, old_dir, new_dir)
            if moved != value:
                out.append((keys, value, moved))
    script = data.get("script")
    if isinstance(script, dict) and "workdir" not in script:
        out.append((("script", "workdir"), None, moved_path(".", old_dir, new_dir)))
    return out
