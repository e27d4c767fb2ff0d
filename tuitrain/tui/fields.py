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


NO_EXAMPLE: Any = object()


def example_value(field: FieldDef) -> Any:
    """The value in a key's example when its help is that example (a key without help is shown by its
    schema example, a TOML line: 'train_file = "data/train.csv"' → "data/train.csv"); NO_EXAMPLE otherwise."""
    name, equals, _value = field.doc.partition(" = ")
    if not equals or name != field.path[-1]:
        return NO_EXAMPLE
    try:
        parsed = tomllib.loads(field.doc)
    except tomllib.TOMLDecodeError:
        return NO_EXAMPLE
    return parsed[name] if list(parsed) == [name] else NO_EXAMPLE


def parse_value(kind: str, text: str) -> Any:
    """The value an Input's text stands for; text that does not parse stays text (the validator
    then says what is wrong, in its words)."""
    text = text.strip()
    if text == "":
        return REMOVE
    if kind == "str":
        return unquoted(text)
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


def unquoted(text: str) -> str:
    """Text typed with TOML quotes ("none", 'none') is the text inside them; any other text is itself."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            parsed = tomllib.loads("v = " + text)
        except tomllib.TOMLDecodeError:
            return text
        if isinstance(parsed.get("v"), str) and len(parsed) == 1:
            return parsed["v"]
    return text


def reads_back_bare(text: str) -> bool:
    """Whether `text`, shown without quotes in a field that takes any TOML value, is read back as that
    same text (none, wandb, bert: yes; 10, true, [a], "" or text with outer spaces: they need quotes)."""
    return text != "" and parse_value("literal", text) == text and unquoted(text) == text


def list_item_kind(kind: str) -> str | None:
    """"str" for a "list[str]" field, "float" for "list[float]"; None for any other kind."""
    return {"list[str]": "str", "list[float]": "float"}.get(kind)
