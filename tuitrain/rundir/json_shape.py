"""A JSON value checked against a type annotation: the one reading of a TypedDict's declared keys as checks.

`problem(value, hint)` walks the annotation (str, int, float, bool, None, unions, Literal, list, tuple (a JSON list of
exactly its items: `tuple[int, int]`, a pair; `tuple[str, ...]`, of any length), dict, TypedDict, a dataclass (an
object of its fields, as `dataclasses.asdict` writes it),
`Annotated[..., Within(...)]`, `Annotated[str, Matching(...)]`) and names the first part of `value` that does not fit, as a person reads it:
"started: '1795000000' is not a number". Keys a TypedDict does not declare are left alone (a newer version's);
its required keys must be there, and its keys are said in the order declared (a file's format, first, is said
first). Numbers are finite and fit in 64 bits, so that no reader meets an overflow.
`checked(data, hint)` reads a file's bytes as JSON and checks them: what every reader of a file another process,
version or host wrote asks, once, where it reads it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

LIMIT = 2**63  # every whole number a reader meets fits in 64 bits


@dataclass(frozen=True)
class Within:
    """`Annotated[int, Within(1, 2**22, "a process id")]`: the value's range and what it is, in words."""

    low: float
    high: float
    what: str


@dataclass(frozen=True)
class Matching:
    """`Annotated[str, Matching("[0-9]+", "a rank")]`: the whole text matches the pattern; what it is, in words."""

    pattern: str
    what: str


def shown(value: Any, width: int = 24) -> str:
    """A value as the problem quotes it, cut to `width` characters with '…'."""
    text = ascii(value) if isinstance(value, str) and not _unicode(value) else \
        repr(value) if isinstance(value, str) else _json_text(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _json_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "a list" if value else "[]"
    if isinstance(value, dict):
        return "an object" if value else "{}"
    return repr(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@cache
def _hints(typed_dict: Any) -> dict[str, Any]:
    return typing.get_type_hints(typed_dict, include_extras=True)


def describe(hint: Any) -> str:
    """What a value of `hint` is, in words: "a number or null", "one of planned, queued"."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        said = [m for m in hint.__metadata__ if isinstance(m, (Within, Matching))]
        return said[0].what if said else describe(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):  # null goes unsaid beside another kind: it means "not known"
        arms = [a for a in typing.get_args(hint) if a is not type(None)] or [type(None)]
        return " or ".join(describe(arm) for arm in arms)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(hint))
    if origin is list:
        return "a list"
    if origin is tuple:
        items = typing.get_args(hint)
        return "a list" if items[-1:] == (...,) else f"a list of {len(items)}"
    if origin is dict or typing.is_typeddict(hint) or dataclasses.is_dataclass(hint):
        return "an object"
    return {str: "text", int: "a whole number", float: "a number", bool: "true or false",
            type(None): "null"}.get(hint, "anything")


def decoded(data: bytes) -> tuple[Any, str | None]:
    """A file's bytes as a JSON value, or why they are none in a few words ("empty file", "not valid JSON: Expecting
    value at line 1 column 5")."""
    if not data.strip():
        return None, "empty file"
    try:
        return json.loads(data.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "not valid JSON: not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    except ValueError:  # Python reads no whole number of more than sys.get_int_max_str_digits() digits
        return None, "not valid JSON: a number too long to read"


def checked(data: bytes, hint: Any) -> tuple[Any, str | None]:
    """A file's bytes as a JSON value of `hint`: (the value, None), or (what was read, why it is not one)."""
    value, reason = decoded(data)
    return value, reason or problem(value, hint)


def problem(value: Any, hint: Any, where: str = "") -> str | None:
    """Why `value` is not a `hint`, naming the place (`pids.ranks.0`); None when it is one."""
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return None
    if origin is typing.Annotated:
        inner, *meta = typing.get_args(hint)
        found = problem(value, inner, where)
        if found is not None:
            return _said(where, value, describe(hint)) if _is_number(value) or value is None else found
        for within in (m for m in meta if isinstance(m, Within)):
            if value is not None and not within.low <= value <= within.high:
                return _said(where, value, within.what)
        for matching in (m for m in meta if isinstance(m, Matching)):
            if not re.fullmatch(matching.pattern, value):
                return _said(where, value, matching.what)
        return None
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(hint)
        said = [problem(value, arm, where) for arm in arms]
        if any(f is None for f in said):
            return None
        # the arm of the value's own kind says more (a list's bad item, not "is not a list")
        nested = [f for arm, f in zip(arms, said, strict=True) if f is not None and _takes(arm, value)]
        return nested[0] if nested else _said(where, value, describe(hint))
    if origin is typing.Literal:
        return None if any(value == a and type(value) is type(a) for a in typing.get_args(hint)) else \
            _said(where, value, describe(hint))
    if origin is list:
        if not isinstance(value, list):
            return _said(where, value, "a list")
        (item,) = typing.get_args(hint)
        return _first(problem(each, item, f"{where}[{index}]") for index, each in enumerate(value))
    if origin is tuple and typing.get_args(hint)[-1:] == (...,):  # tuple[X, ...]: a list of any length
        return problem(value, list[typing.get_args(hint)[0]], where)  # type: ignore[misc]
    if origin is tuple:
        items = typing.get_args(hint)
        if not isinstance(value, list) or len(value) != len(items):
            return _said(where, value, describe(hint))
        return _first(problem(each, item, f"{where}[{index}]") for index, (each, item) in enumerate(zip(value, items, strict=True)))
    if origin is dict:
        if not isinstance(value, dict):
            return _said(where, value, "an object")
        key, item = typing.get_args(hint)
        return _first(_key_problem(name, key, where) or problem(each, item, _key(where, name))
                      for name, each in value.items())
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return _said(where, value, "an object")
        hints = _hints(hint)
        return _first(problem(value[k], hints[k], _key(where, k)) if k in value else f"no {_key(where, k)}"
                      for k in hints if k in value or k in hint.__required_keys__)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):  # its fields as dataclasses.asdict writes them
        if not isinstance(value, dict):
            return _said(where, value, "an object")
        hints = _hints(hint)
        required = {f.name for f in dataclasses.fields(hint)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        return _first(problem(value[k], hints[k], _key(where, k)) if k in value else f"no {_key(where, k)}"
                      for k in hints if k in value or k in required)
    return _plain(value, hint, where)


def _plain(value: Any, hint: Any, where: str) -> str | None:
    if hint is type(None):
        return None if value is None else _said(where, value, "null")
    if hint is str:
        return None if isinstance(value, str) and _unicode(value) else _said(where, value, "text")
    if hint is bool:
        return None if isinstance(value, bool) else _said(where, value, "true or false")
    if hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and -LIMIT < value < LIMIT
        return None if ok else _said(where, value, "a whole number")
    if hint is float:
        ok = _is_number(value) and -LIMIT < value < LIMIT and not (isinstance(value, float) and math.isnan(value))
        return None if ok else _said(where, value, "a number")
    raise TypeError(f"json_shape cannot check {hint!r}")  # a type the record declares that this walker must learn


def _key_problem(name: str, hint: Any, where: str) -> str | None:
    found = problem(name, hint, "")
    return None if found is None else f"{where or 'the object'}: the key {shown(name)} is not {describe(hint)}"


def repaired(value: Any) -> Any:
    """`value` with each text a terminal cannot be sent (half a surrogate pair: how JSON's escapes and Python's
    surrogateescape spell a byte that is not UTF-8) made one it can, U+FFFD in place of the byte. What a reader of
    another machine's answer asks before `problem`: a process's or a file's name there is that machine's bytes, no
    damage to the answer."""
    if isinstance(value, str):
        return value if _unicode(value) else sendable(value)
    if isinstance(value, list):
        return [repaired(item) for item in value]
    if isinstance(value, dict):
        return {repaired(key): repaired(item) for key, item in value.items()}
    return value


def answered(value: Any, hint: Any) -> tuple[Any, str | None]:
    """Another machine's answer (`value`, decoded JSON) read against `hint`: its text `repaired`, then checked; the
    value, and why it does not fit (None when it does)."""
    value = repaired(value)
    return value, problem(value, hint)


def sendable(text: str) -> str:
    """`text` with each half of a surrogate pair as U+FFFD (one that stands for a byte, surrogateescape's, as that
    byte would read)."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a high surrogate, or a low one that stands for no byte
        raw = text.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def _unicode(text: str) -> bool:
    """Text a terminal can be sent: JSON's escapes can spell half a surrogate pair, which no encoding writes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _takes(arm: Any, value: Any) -> bool:
    """Whether `value` is of the kind `arm` holds (a list for a list, an object for a dict), so its own problem is
    the one to say."""
    origin = typing.get_origin(arm)
    if origin is typing.Annotated:
        return _takes(typing.get_args(arm)[0], value)
    if origin in (list, tuple):
        return isinstance(value, list)
    return (origin is dict or typing.is_typeddict(arm) or dataclasses.is_dataclass(arm)) and isinstance(value, dict)


def _first(found: typing.Iterable[str | None]) -> str | None:
    return next((f for f in found if f is not None), None)


def _key(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _said(where: str, value: Any, what: str) -> str:
    return f"{where or 'the value'}: {shown(value)} is not {what}"
