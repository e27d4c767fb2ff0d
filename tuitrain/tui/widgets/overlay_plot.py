"""Several runs' curves overlaid in braille dots (2×4 dots a cell), a legend line a run on top.

Each curve is reduced to what a dot column can show before anything is drawn: per dot column its
first, lowest, highest and last value, joined to the next column. So 10,000 points cost one pass
over them and the drawing costs the plot's width, whatever the number of points; a spike or dip
is never dropped and a non-finite value leaves a gap."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from rich.text import Text
from textual.widget import Widget

from tuitrain.humanize import number
from tuitrain.tui.widgets.plot import BRAILLE_DOTS


@dataclass(frozen=True)
class Curve:
    """What the plot draws of one run: x and y already transformed (smoothed, log10)."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    style: str
    last: str = ""  # the legend's figure (the raw last value, as the user reads it)


def _columns(xs: Sequence[float], ys: Sequence[float], x0: float, sx: float, y_hi: float, sy: float,
             width: int) -> list[tuple[int, int, int, int, int] | None]:
    """The runs of one curve, reduced per dot column: (dx, first dy, lowest dy, highest dy, last dy),
    None where a gap breaks the line."""
    out: list[tuple[int, int, int, int, int] | None] = []
    isfinite = math.isfinite
    cx = -1
    first = low = high = last = 0
    for x, y in zip(xs, ys, strict=True):
        if not (isfinite(x) and isfinite(y)):
            if cx >= 0:
                out.append((cx, first, low, high, last))
                out.append(None)
                cx = -1
            continue
        dx = int((x - x0) * sx + 0.5)
        dy = int((y_hi - y) * sy + 0.5)
        if dx != cx:
            if cx >= 0:
                out.append((cx, first, low, high, last))
            if not 0 <= dx < width:
                cx = -1
                continue
            cx, first, low, high, last = dx, dy, dy, dy, dy
        else:
            if dy < low:
                low = dy
            elif dy > high:
                high = dy
            last = dy
    if cx >= 0:
        out.append((cx, first, low, high, last))
    return out


def render_overlay(curves: Sequence[Curve], width: int, height: int, *, x_label: str = "step",
                   x_format: Callable[[float], str] = number, y_format: Callable[[float], str] = number,
                   empty: str = "no points") -> Text:
    """The legend (one line a curve) and the plot of `curves` in `width`×`height` cells."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, curve in enumerate(curves):
        if i:
            out.append("\n")
        out.append("━━ ", style=curve.style)
        out.append(curve.label)
        if curve.last:
            out.append(f"  {curve.last}", style="dim")
    body_rows = height - len(curves) - 1
    if body_rows < 2 or width < 16:
        return out
    finite_x = [x for c in curves for x in (min(c.xs, default=math.nan), max(c.xs, default=math.nan))
                if math.isfinite(x)]
    ys = [y for c in curves for y in c.ys if math.isfinite(y)]
    if not ys or not finite_x:
        out.append("\n" * (body_rows // 2 + 1) + f"  {empty}", style="dim")
        return out
    low, high = min(ys), max(ys)
    if high == low:
        high, low = high + (abs(high) * 0.05 or 1.0), low - (abs(low) * 0.05 or 1.0)
    x0, x1 = min(finite_x), max(finite_x)
    if x1 == x0:
        x1 = x0 + 1
    labels = [y_format(high), y_format((high + low) / 2), y_format(low)]
    label_width = max(len(label) for label in labels) + 1
    cols = max(1, width - label_width - 1)
    dots_w, dots_h = cols * 2, body_rows * 4
    cells = [bytearray(cols) for _ in range(body_rows)]
    owner: list[list[str | None]] = [[None] * cols for _ in range(body_rows)]
    sx, sy = (dots_w - 1) / (x1 - x0), (dots_h - 1) / (high - low)

    def plot(dx: int, dy: int, style: str) -> None:
        if 0 <= dy < dots_h:
            row, col = dy >> 2, dx >> 1
            cells[row][col] |= BRAILLE_DOTS[dy & 3][dx & 1]
            owner[row][col] = style

    for curve in curves:
        style = curve.style
        previous: tuple[int, int] | None = None
        for column in _columns(curve.xs, curve.ys, x0, sx, high, sy, dots_w):
            if column is None:
                previous = None
                continue
            dx, first, lo, hi, last = column
            if previous is not None:  # join the last column's last value to this one's first
                px, py = previous
                n = max(abs(dx - px), abs(first - py), 1)
                for k in range(1, n):
                    plot(px + (dx - px) * k // n, py + (first - py) * k // n, style)
            for dy in range(lo, hi + 1):
                plot(dx, dy, style)
            previous = (dx, last)

    label_rows = {0: labels[0], body_rows // 2: labels[1], body_rows - 1: labels[2]}
    for r in range(body_rows):
        out.append("\n")
        out.append(label_rows.get(r, "").rjust(label_width - 1) + " ", style="dim")
        out.append("┤" if r in label_rows else "│", style="dim")
        row_cells, row_owner = cells[r], owner[r]
        c = 0
        while c < cols:  # runs of cells of one style become one span
            style_here = row_owner[c] if row_cells[c] else None
            start = c
            while c < cols and (row_owner[c] if row_cells[c] else None) == style_here:
                c += 1
            chunk = "".join(chr(0x2800 + b) if b else " " for b in row_cells[start:c])
            out.append(chunk, style=style_here or "")
    axis = f"{x_label} {x_format(x0)}"
    right = x_format(x1)
    pad = max(1, cols - len(axis) - len(right))
    out.append("\n" + " " * label_width + "└" + axis + "─" * pad + right, style="dim")
    return out


class OverlayPlot(Widget):
    DEFAULT_CSS = """
    OverlayPlot { height: 1fr; min-height: 6; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.curves: list[Curve] = []
        self.x_label = "step"
        self.x_format: Callable[[float], str] = number
        self.y_format: Callable[[float], str] = number
        self.empty = "no points"

    def show(self, curves: list[Curve], *, x_label: str, x_format: Callable[[float], str] = number,
             y_format: Callable[[float], str] = number, empty: str = "no points") -> None:
        self.curves = curves
        self.x_label, self.x_format, self.y_format, self.empty = x_label, x_format, y_format, empty
        self.refresh()

    def render(self) -> Text:
        return render_overlay(self.curves, self.size.width, self.size.height, x_label=self.x_label,
                              x_format=self.x_format, y_format=self.y_format, empty=self.empty)
