"""A small line plot in braille dots (2×4 dots a cell): a few series against step, y labels at the
left, a legend with each series' last value on top. Redrawn only when its data or size changes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual.widget import Widget

from tuitrain.humanize import number

BRAILLE_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] bits of a braille cell


@dataclass(frozen=True)
class Line:
    label: str
    steps: Sequence[float]
    values: Sequence[float]
    style: str


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]


def downsample(values: Sequence[float], buckets: int) -> list[int]:
    """The indices of `values` to draw when there are more than a plot can show: each of `buckets`
    runs of consecutive points keeps its lowest and its highest finite value (in their order), so a
    loss spike or dip is never dropped, and its first non-finite value (so a gap stays a gap).
    With fewer than two points a bucket, every index."""
    n = len(values)
    if buckets <= 0 or n < 2 * buckets:
        return list(range(n))
    kept: list[int] = []
    for b in range(buckets):
        start, end = b * n // buckets, (b + 1) * n // buckets
        low = high = gap = None
        for i in range(start, end):
            v = values[i]
            if not math.isfinite(v):
                if gap is None:
                    gap = i
            else:
                if low is None or v < values[low]:
                    low = i
                if high is None or v > values[high]:
                    high = i
        kept.extend(sorted({i for i in (low, high, gap) if i is not None}))
    return kept


class LinePlot(Widget):
    DEFAULT_CSS = """
    LinePlot { height: 1fr; min-height: 4; }
    """

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self.lines: list[Line] = []
        self._signature: tuple = ()
        self.note: str | None = None  # what to say instead of "waiting for values…" while there are none

    def set_note(self, note: str | None) -> None:
        """Say `note` (wrapped, under the title) while the plot has no values: why none will come, and what to do."""
        if note != self.note:
            self.note = note
            self.refresh()

    def set_title(self, title: str) -> None:
        if title != self.title:
            self.title = title
            self.refresh()

    def set_lines(self, lines: list[Line]) -> None:
        signature = tuple((line.label, len(line.values)) for line in lines)
        if signature != self._signature:
            self._signature = signature
            self.lines = lines
            self.refresh()

    def render(self) -> Text:
        width, height = self.size.width, self.size.height
        legend = Text(self.title, style="bold", no_wrap=True, overflow="ellipsis", end="")
        for line in self.lines:
            if len(line.values):
                legend.append("  ")
                legend.append("━ ", style=line.style)
                legend.append(f"{line.label} {number(line.values[-1])}")
        if height < 3 or width < 16:
            return legend
        all_values = [v for line in self.lines for v in _finite(line.values)]
        all_steps = [s for line in self.lines if len(line.values) for s in (line.steps[0], line.steps[-1])]
        body_rows = height - 2
        if not all_values and self.note:
            out = Text(self.title, style="bold", end="")
            out.append("\n" + self.note, style="dim")
            return out
        if not all_values:
            out = Text(no_wrap=True, end="")
            out.append_text(legend)
            out.append("\n" + "\n".join([""] * (body_rows // 2)) + "\n  waiting for values…", style="dim")
            return out
        low, high = min(all_values), max(all_values)
        if high == low:
            high, low = high + (abs(high) * 0.05 or 1.0), low - (abs(low) * 0.05 or 1.0)
        x0, x1 = min(all_steps), max(all_steps)
        if x1 == x0:
            x1 = x0 + 1
        labels = [number(high, 3), number((high + low) / 2, 3), number(low, 3)]
        label_width = max(len(label) for label in labels) + 1
        cols = max(1, width - label_width - 1)
        dots_w, dots_h = cols * 2, body_rows * 4
        cells: list[list[int]] = [[0] * cols for _ in range(body_rows)]
        owner: list[list[str | None]] = [[None] * cols for _ in range(body_rows)]

        def plot(dx: int, dy: int, style: str) -> None:
            if 0 <= dx < dots_w and 0 <= dy < dots_h:
                row, col = dy // 4, dx // 2
                cells[row][col] |= BRAILLE_DOTS[dy % 4][dx % 2]
                owner[row][col] = style

        for line in self.lines:
            previous: tuple[int, int] | None = None
            for i in downsample(line.values, dots_w * 2):  # at most ~4 points a dot column
                value, step = line.values[i], line.steps[i]
                if not math.isfinite(value):
                    previous = None
                    continue
                dx = round((step - x0) / (x1 - x0) * (dots_w - 1))
                dy = round((high - value) / (high - low) * (dots_h - 1))
                if previous is None:
                    plot(dx, dy, line.style)
                else:
                    px, py = previous
                    steps = max(abs(dx - px), abs(dy - py), 1)
                    for k in range(1, steps + 1):
                        plot(px + (dx - px) * k // steps, py + (dy - py) * k // steps, line.style)
                previous = (dx, dy)

        out = Text(no_wrap=True, end="")
        out.append_text(legend)
        label_rows = {0: labels[0], body_rows // 2: labels[1], body_rows - 1: labels[2]}
        for r in range(body_rows):
            out.append("\n")
            out.append(label_rows.get(r, "").rjust(label_width - 1) + " ", style="dim")
            out.append("┤" if r in label_rows else "│", style="dim")
            for c in range(cols):
                bits = cells[r][c]
                if bits:
                    out.append(chr(0x2800 + bits), style=owner[r][c] or "")
                else:
                    out.append(" ")
        axis = f"step {number(x0)}"
        right = number(x1)
        pad = max(1, cols - len(axis) - len(right))
        out.append("\n" + " " * label_width + "└" + axis + "─" * pad + right, style="dim")
        return out
