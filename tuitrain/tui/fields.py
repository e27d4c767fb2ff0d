"""The editor's fields without a widget: what a form field edits (a key's path, kind, choices, default
and help) and how typed text becomes a value. No Textual here: the editor model and its tests use it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

REMOVE: Any = object()


@dataclass(frozen=True)
class FieldDef:
    path: tuple[str, ...]
    kind: str
    choices: tuple[Any, ...] | None = None
    default: Any = None
    doc: str = ""

    @property
    def key(self) -> str:
        return ".".join(self.path)


def parse_value(kind: str, text: str) -> Any:
    """The value an Input's text stands for; text that does not parse stays text (the validator
    then says what is wrong, in its words)."""
    text = text.strip()
    if text == "":
        return REMOVE
    if kind == "str":
        return text
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            return text
    if kind == "float":
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return text
    try:
        parsed = tomllib.loads("v = " + text)
        if len(parsed) == 1:
            return parsed["v"]
    except tomllib.TOMLDecodeError:
        pass
    return text
