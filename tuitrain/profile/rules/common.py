"""What the rules between keys share: a section's table, a key's value (or its default from the schema),
and paths from the profile's folder, probed without raising."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, cast

from ..schema import SCHEMA, KeySpec, TableSpec
from ..settings import SectionName, SettingKey
from ..values import is_kind


def table_of(data: Mapping[str, Any], name: SectionName) -> dict[str, Any]:
    """The table at `name` ({} when it is absent or no table)."""
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def value_of(table: Mapping[str, Any], leaf: str, kind: str, default: Any = None) -> Any:
    """The value if present and of the right kind (type errors are reported elsewhere)."""
    value = table.get(leaf, default)
    return value if value is not None and is_kind(value, kind) else default


def section_of(dotted: SettingKey) -> SectionName:
    """The section a key is in ("distributed" for "distributed.fsdp.version")."""
    return cast(SectionName, dotted.split(".", 1)[0])  # every SettingKey starts with one (tests/test_settings_types)


def key_spec(dotted: SettingKey) -> KeySpec:
    """The schema's spec of a plain key ("distributed.strategy", "distributed.fsdp.version")."""
    section, *tables, leaf = dotted.split(".")
    keys: Mapping[str, Any] = SCHEMA[section]
    for name in tables:
        table = keys[name]
        assert isinstance(table, TableSpec), dotted
        keys = table.keys
    spec = keys[leaf]
    assert isinstance(spec, KeySpec), dotted
    return spec


def value_or_default(table: Mapping[str, Any], dotted: SettingKey) -> Any:
    """`value_of` a key of `table` (the section or sub-table `dotted` names), with the schema's kind and default."""
    spec = key_spec(dotted)
    return value_of(table, dotted.rsplit(".", 1)[-1], spec.kind, spec.default)


def task_of(data: Mapping[str, Any]) -> str:
    """model.task, or its default."""
    task: str = value_or_default(table_of(data, "model"), "model.task")
    return task


def resolve_path(raw: str, base_dir: Path | None) -> Path:
    """A profile's path as the launch reads it: relative ones start from the profile's folder."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        base = base_dir or Path.cwd()
        path = base / path
        if not base.exists():  # a profile not saved yet into a folder to be made: "../data" means from there
            path = Path(os.path.normpath(path))
    return path


def path_exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def relative_fix(base_dir: Path | None) -> str:
    """The fix for a local path that is not there."""
    return "relative paths start from the profile's folder" + (f" ({base_dir})" if base_dir else "")
