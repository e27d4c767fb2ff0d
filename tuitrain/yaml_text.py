"""YAML text for the accelerate configs we write, without importing PyYAML (~25 ms of every
`tuitrain plan`).

The configs are mappings of str keys to None, bool, int, float, str, lists and nested mappings;
the writer emits block style with sorted keys, as `yaml.safe_dump(..., sort_keys=True)` does, and
quotes every string that PyYAML (YAML 1.1) could read as anything but that string. Reading stays
with PyYAML (`tuitrain.profile.accelerate_import`): only the writing is ours.
tests/test_yaml_text.py checks `yaml.safe_load(dump(x)) == x` on every config we generate.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

# Plain (unquoted) only when obviously a string to YAML 1.1: starts with a letter or '_' or '/',
# no spaces, no flow or comment characters, and not one of the words YAML 1.1 reads as a bool/null.
_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*\Z")
_SPECIAL_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def scalar(value: Any) -> str:
    """One scalar as YAML text that PyYAML reads back as the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        if _PLAIN.match(value) and value.lower() not in _SPECIAL_WORDS:
            return value
        return _quoted(value)
    raise TypeError(f"cannot write a {type(value).__name__} as YAML: {value!r}")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quoted(value: str) -> str:
    """A double-quoted scalar in plain ASCII: every other character escaped, those beyond the
    BMP as \\UXXXXXXXX (a JSON-style surrogate pair would read back as two broken characters)."""
    out = []
    for char in value:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:  # YAML 1.1 needs the dot: 1e-05 would read back as a string
        mantissa += ".0"
    if e and exponent[0] not in "+-":
        exponent = "+" + exponent
    return mantissa + (e + exponent if e else "")


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"YAML keys here are strings, not {key!r}")
    return scalar(key)


def _lines(value: Any, indent: str) -> list[str]:
    """The block lines of a mapping or list at `indent` (never empty: callers write {} / [] inline)."""
    out: list[str] = []
    if isinstance(value, Mapping):
        for key in sorted(value):
            text = _key(key)
            if len(text) > 1000:  # YAML's implicit keys stop at 1024 characters: say it is a key
                out.append(f"{indent}? {text}")
                text = ""
            out.extend(_entry(f"{indent}{text}:", value[key], indent + "  ", indent))
    else:
        for item in value:
            out.extend(_entry(f"{indent}-", item, indent + "  ", indent + "  ", inline_first=True))
    return out


def _entry(head: str, value: Any, child_indent: str, list_indent: str, inline_first: bool = False) -> list[str]:
    """`head` ("key:" or "-") and its value: inline when a scalar or empty, else the block under
    it; a list item's first line goes on the "-" line itself ("- key: value")."""
    if isinstance(value, (Mapping, list, tuple)) and value:
        # PyYAML puts a mapping's list items at the key's own indent
        body = _lines(value, child_indent if inline_first or isinstance(value, Mapping) else list_indent)
        return [f"{head} {body[0].lstrip()}", *body[1:]] if inline_first else [head, *body]
    if isinstance(value, Mapping):
        return [f"{head} {{}}"]
    if isinstance(value, (list, tuple)):
        return [f"{head} []"]
    return [f"{head} {scalar(value)}"]


def dump(mapping: Mapping[str, Any], header: list[str] | None = None) -> str:
    """YAML text of `mapping` (keys sorted), after `header` as # comment lines."""
    comments = [f"# {line}" if line else "#" for line in (header or [])]
    body = _lines(mapping, "") if mapping else ["{}"]
    return "\n".join([*comments, *body]) + "\n"
