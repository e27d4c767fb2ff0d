"""Values in messages: a TOML rendering, a description, a kind test, and the type, choice and range
problems worded one way for every check (the shape check, the rules between keys, the editor's fields)."""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

from .problems import Problem, did_you_mean


def whole_number(text: str) -> int | None:
    """`text` as an int when it is ASCII digits with an optional sign (" -3 "), as a CSV or YAML reader takes one;
    None otherwise: "²" is a digit to `str.isdigit` that `int` refuses, "1_000" and "٣" are ones `int` takes and
    those readers do not, "--5" a sign too many."""
    body = text.strip()
    digits = body[1:] if body[:1] in ("+", "-") else body
    return int(body) if digits.isascii() and digits.isdecimal() else None

_KIND_WORDS = {
    "int": "a whole number (int)",
    "float": "a number (float)",
    "bool": "true or false (bool)",
    "str": "a string (str)",
    "list": "a list",
    "dict": "a table",
    "list[float]": "a list of numbers",
    "list[str]": "a list of strings",
    "gpus": "a list of GPU indices or UUIDs",
}


def toml_literal(value: Any) -> str:
    """A short TOML rendering of a value, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_literal(v)}" for k, v in value.items()) + " }"
    return str(value)


def describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {toml_literal(value)}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {toml_literal(value)}"
    if isinstance(value, str):
        return f"the string {toml_literal(value)}"
    if isinstance(value, list):
        return f"the list {_clip(toml_literal(value))}"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__} ({value})"


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def is_kind(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind in ("list", "list[float]", "list[str]", "gpus"):
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    return True


def _choices_text(choices: Iterable[Any], limit: int = 12) -> str:
    items = [toml_literal(c) for c in choices]
    if len(items) > limit:
        items = items[:limit] + [f"… ({len(items) - limit} more)"]
    return ", ".join(items)


def choice_problem(file: str, key: str, value: Any, choices: tuple[Any, ...]) -> Problem:
    many = len(choices) > 12
    hint = did_you_mean(str(value), [str(c) for c in choices], n=3 if many else 1) \
        if isinstance(value, str) else None
    example = f"e.g. {key.rsplit('.', 1)[-1]} = {toml_literal(choices[0])}" if choices else None
    return Problem(file, key, f"{toml_literal(value)} is not one of {_choices_text(choices)}", hint or example)


def range_problem(file: str, key: str, leaf: str, value: Any,
                  low: float | None, low_excl: bool, high: float | None) -> Problem | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isnan(value):
        return Problem(file, key, "nan is not a usable value", f"e.g. {leaf} = {toml_literal(low or 1)}")
    too_low = low is not None and (value <= low if low_excl else value < low)
    too_high = high is not None and value > high
    if not (too_low or too_high):
        return None
    if low is not None and high is not None:
        want = f"between {toml_literal(low)} and {toml_literal(high)}"
    elif low is not None:
        want = f"{'greater than' if low_excl else 'at least'} {toml_literal(low)}"
    else:
        want = f"at most {toml_literal(high)}"
    return Problem(file, key, f"must be {want}, got {toml_literal(value)}")


def type_problem(file: str, key: str, value: Any, kinds: Iterable[str], example: str) -> Problem:
    words = " or ".join(_KIND_WORDS.get(k, k) for k in kinds)
    return Problem(file, key, f"expected {words}, got {describe_value(value)}", f"e.g. {example}")

