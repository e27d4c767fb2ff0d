"""NA: the value of a field the driver could not give (not supported, no permission, GPU lost).

Like nvitop's ``NA``: a ``str`` equal to ``'N/A'`` (so it prints as itself), falsy (so ``x or 0``
works), ``nan`` in arithmetic and ``float()``, never ordered before or after a number, and
formatted as ``'N/A'`` whatever the format spec (``f"{NA:>6.1f}"`` → ``'   N/A'``). Display code
therefore needs no branches; JSON output turns it into ``null`` (see `plain`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

_NAN = float("nan")
_WIDTH = re.compile(r"^(?:(.)?([<>^=]))?[+\- ]?#?0?(\d+)?")


class NaType(str):
    """The one N/A value (a singleton: ``NaType() is NA``)."""

    _instance: "NaType | None" = None

    def __new__(cls) -> "NaType":
        if cls._instance is None:
            cls._instance = super().__new__(cls, "N/A")
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NA"

    def __reduce__(self) -> str:
        return "NA"

    def __float__(self) -> float:
        return _NAN

    def __format__(self, spec: str) -> str:
        match = _WIDTH.match(spec)
        fill, align, width = (match.group(1), match.group(2), match.group(3)) if match else (None, None, None)
        text = "N/A"
        if width:
            text = format(text, f"{fill or ' '}{align or '>'}{width}")
        return text

    def __add__(self, other: Any) -> Any:
        return str(self) + other if isinstance(other, str) else _NAN

    def __radd__(self, other: Any) -> Any:
        return other + str(self) if isinstance(other, str) else _NAN

    def _nan(self, other: Any) -> float:
        return _NAN

    # str's * repeats the text; NA's is nan like the rest of its arithmetic
    __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _nan  # type: ignore[assignment]
    __floordiv__ = __rfloordiv__ = __pow__ = __rpow__ = _nan

    def __mod__(self, other: Any) -> Any:
        return _NAN

    def __neg__(self) -> float:
        return _NAN

    def __abs__(self) -> float:
        return _NAN

    def _compare(self, other: Any, op: str) -> bool:
        if isinstance(other, str):
            return getattr(str, op)(str(self), other)
        return False

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> bool:
        return self is other or self._compare(other, "__le__")

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, "__gt__")

    def __ge__(self, other: Any) -> bool:
        return self is other or self._compare(other, "__ge__")

    __hash__ = str.__hash__
    __eq__ = str.__eq__  # NA == "N/A", as in nvitop


NA = NaType()


def plain(value: Any) -> Any:
    """Dataclasses, tuples and mappings as JSON-ready data, NA as None."""
    if value is NA:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
