"""A usage figure as a bar that reads without colour, the way nvitop draws a GPU's utilisation and memory:
'util ██████▍·········  52%' (the bar in eighths of a cell, its figure after it; colour only adds to it)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tuitrain.humanize import percent
from tuitrain.tui.format import bar

FIGURE = 4  # '100%', ' 52%', ' N/A'
LEVELS = ((0.9, "red"), (0.7, "yellow"), (0.0, "green"))  # the bar's colour from this fraction up


def _fraction(value: Any) -> float | None:
    known = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not N/A, not nan
    return min(max(float(value), 0.0), 1.0) if known else None


def usage_bar(fraction: Any, width: int, label: str = "") -> Text:
    """`label`, a bar and its percentage in `width` cells (the bar gets what the label and figure leave, at least
    one cell); `fraction` 0..1, or N/A (None, NA), which draws an empty bar and 'N/A'."""
    known = _fraction(fraction)
    head = f"{label} " if label else ""
    cells = max(1, width - len(head) - FIGURE - 1)
    style = next(style for level, style in LEVELS if known is None or known >= level)
    out = Text(head, end="")
    out.append(bar(known, cells), style if known is not None else "dim")
    out.append(" " + percent(known * 100 if known is not None else None, FIGURE - 1))
    return out


def least_width(label: str = "", cells: int = 4) -> int:
    """The width of a usage bar of `cells` cells with `label`."""
    return (len(label) + 1 if label else 0) + cells + 1 + FIGURE
