"""`--set section.key=value` overrides: read one (a TOML value, or plain text), set it into a
profile's data (a new dict), and rewrite one that names a renamed [training] key."""

from __future__ import annotations

import copy
import tomllib
from typing import Any, Mapping, Sequence

from .problems import Problem, ProfileError
from .schema import SCHEMA
from .training_args import FieldSpec
from .training_migrations import applicable_migration
from .values import toml_literal

OVERRIDE_FORM = "expected section.key=value, e.g. training.max_steps=40 or run.name=my-run"


def parse_override(text: str) -> tuple[list[str], Any]:
    """"training.max_steps=40" -> (["training", "max_steps"], 40).

    The value is read as a TOML value (numbers, booleans, "strings", [lists], { tables });
    anything that is not valid TOML is taken as a plain string (run.name=foo -> "foo").
    Nothing after '=' removes the key (data.generate= → the profile's data.generate is gone);
    write "" for an empty string.
    """
    if "=" not in text:
        raise ProfileError([Problem("--set", "", f"{text!r}: no '='", OVERRIDE_FORM)])
    raw_key, raw_value = text.split("=", 1)
    parts = [p.strip() for p in raw_key.strip().split(".")]
    if len(parts) < 2 or not all(parts):
        what = (f"names [{parts[0]}] but no key in it" if len(parts) == 1 and parts[0] in SCHEMA
                else "the key needs a section")
        raise ProfileError([Problem("--set", "", f"{text!r}: {what}", OVERRIDE_FORM)])
    value: Any
    if not raw_value.strip():
        return parts, REMOVE
    try:
        parsed = tomllib.loads("v = " + raw_value)
        value = parsed["v"] if len(parsed) == 1 else raw_value.strip()
    except tomllib.TOMLDecodeError:
        value = raw_value.strip()
    return parts, value


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Remove()


def _set_path(data: dict[str, Any], path: Sequence[str], value: Any) -> Problem | None:
    node = data
    for i, part in enumerate(path[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            where = ".".join(path[: i + 1])
            return Problem("--set", ".".join(path), f"{where} is {toml_literal(child)}, not a table",
                           f"set {where} itself, e.g. {where}=...")
        node = child
    if value is REMOVE:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return None


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """A new dict with each "section.key=value" override set (the input is left untouched)."""
    new = copy.deepcopy(data)
    problems: list[Problem] = []
    for text in overrides:
        try:
            path, value = parse_override(text)
        except ProfileError as exc:
            problems.extend(exc.problems)
            continue
        problem = _set_path(new, path, value)
        if problem:
            problems.append(problem)
    if problems:
        raise ProfileError(problems)
    return new


def migrated_override(text: str, fields: Mapping[str, FieldSpec] | None) -> tuple[str | None, list[Problem]]:
    """An override of an old [training] name, rewritten to the new name (None: dropped)."""
    path, _ = parse_override(text)
    if len(path) == 2 and path[0] == "training" and (m := applicable_migration(path[1], fields)):
        raw_value = text.split("=", 1)[1]
        note = Problem("--set", ".".join(path), m.note,
                       f"use {m.new}" if m.new else "leave it out", severity="note")
        return (f"{m.new}={raw_value}" if m.new else None), [note]
    return text, []
