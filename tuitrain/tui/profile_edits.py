"""The profile as the editor's form edits it (a plain dict, as written): where a field's value
lives (a path of keys; one machine of [[distributed.machines]] by its index), setting and removing
keys, and the `--set` overrides that turn one version into another."""

from __future__ import annotations

import re
from typing import Any

from tuitrain.tui.fields import REMOVE


def get_path(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set (or, with REMOVE, drop) a key; tables a removal leaves empty are dropped too."""
    if value is REMOVE:
        trail = [data]
        for part in path[:-1]:
            child = trail[-1].get(part)
            if not isinstance(child, dict):
                return
            trail.append(child)
        trail[-1].pop(path[-1], None)
        for depth in range(len(path) - 1, 0, -1):
            if trail[depth] == {}:
                trail[depth - 1].pop(path[depth - 1], None)
        return
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value


MACHINES = ("distributed", "machines")
_MACHINE_PART = re.compile(r"machines\[(\d+)\]")


def machine_path(index: int, key: str) -> tuple[str, ...]:
    """The form's path of one machine's key: its dotted form is the validator's key
    ("distributed.machines[1].host"), so the validator's words land beside the field."""
    return ("distributed", f"machines[{index}]", key)


def machine_of(path: tuple[str, ...]) -> tuple[int, str] | None:
    """(machine index, key) of a `machine_path`, or None for any other path."""
    if len(path) == 3 and path[0] == "distributed":
        found = _MACHINE_PART.fullmatch(path[1])
        if found:
            return int(found.group(1)), path[2]
    return None


def in_schema_order(machine: dict[str, Any]) -> None:
    """A machine's keys in the schema's order (host first), whatever order they were typed in."""
    from tuitrain.profile.schema import MACHINE_KEYS

    ordered = {k: machine[k] for k in MACHINE_KEYS if k in machine}
    ordered.update((k, v) for k, v in machine.items() if k not in ordered)
    machine.clear()
    machine.update(ordered)


def override_value(value: Any) -> str:
    """A value as `--set key=VALUE` reads it back: text bare where it reads back the same, else TOML."""
    from tuitrain.profile.values import toml_literal
    from tuitrain.tui.fields import reads_back_bare

    if isinstance(value, str) and reads_back_bare(value):
        return value
    if isinstance(value, float):
        return repr(value)
    return toml_literal(value)


def overrides_between(old: dict[str, Any], new: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[str]:
    """The `--set` overrides that turn `old` into `new`: a changed or added key as key=value, a removed
    one as key= (nothing after '=' removes it); a whole section is spelled key by key."""
    out: list[str] = []
    for key, value in new.items():
        path = (*prefix, key)
        before = old.get(key)
        if isinstance(value, dict) and (isinstance(before, dict) or not prefix):
            out += overrides_between(before if isinstance(before, dict) else {}, value, path)
        elif key not in old or before != value or type(before) is not type(value):
            out.append(f"{'.'.join(path)}={override_value(value)}")
    for key, value in old.items():
        if key not in new:
            if not prefix and isinstance(value, dict):
                out += overrides_between(value, {}, (key,))
            else:
                out.append(f"{'.'.join((*prefix, key))}=")
    return out
