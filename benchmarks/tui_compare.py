"""Compare screen: overlaying 5 runs × 10,000 points (target: a draw in < 100 ms).

A draw is what the compare screen does on a key (smoothing, log scale, x axis) or when a run writes
more: each run's curve smoothed (EMA), put on its axis, reduced per dot column and rasterised
(`overlay_plot.render_overlay`), then turned into segments as Textual paints them. The plot is the
size it gets in a 120×40 terminal (95×37 cells) and in 80×24 (55×21). Baseline in the same run: the
same rasteriser joining every point to the next (no reduction per dot column). Reading the five
events.jsonl (done once, then incrementally) is timed apart.

    .venv/bin/python benchmarks/tui_compare.py [--runs 5] [--points 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from _common import QuietGate, machine_line
from tuitrain.tui.curves import RunCurves, ema, log10_values, x_values
from tuitrain.tui.widgets.overlay_plot import Curve, render_overlay
from tuitrain.tui.widgets.plot import BRAILLE_DOTS

STYLES = ("cyan", "magenta", "green", "yellow", "blue")
SIZES = ((95, 37), (55, 21))


def make_events(folder: Path, runs: int, points: int) -> list[Path]:
    paths = []
    for r in range(runs):
        path = folder / f"run-{r}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        t0 = 1_767_225_600.0 + r * 100
        lines = [json.dumps({"event": "train_begin", "time": t0, "step": 0, "max_steps": points})]
        for step in range(1, points + 1):
            loss = 2.0 * math.exp(-step / (points / (3 + r))) + 0.05 * math.sin(step * 0.37 + r) + 0.1
            lines.append(json.dumps({"event": "log", "time": t0 + step * (0.1 + 0.01 * r), "step": step,
                                     "loss": round(loss, 5), "learning_rate": 3e-4, "epoch": step / 1000}))
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def prepared(runs: list[RunCurves], smoothing: float, log_y: bool, axis: str) -> list[Curve]:
    out = []
    for i, run in enumerate(runs):
        curve = run.curves["loss"]
        ys = ema(curve.values, smoothing)
        if log_y:
            ys = log10_values(ys)
        out.append(Curve(f"run-{i} · bench", x_values(curve, axis, run.begin), ys, STYLES[i % len(STYLES)]))
    return out


def naive_raster(curves: list[Curve], width: int, height: int) -> list[bytearray]:
    """The baseline: every point joined to the next (what a plot without reduction draws)."""
    ys = [y for c in curves for y in c.ys if math.isfinite(y)]
    xs = [x for c in curves for x in c.xs]
    low, high, x0, x1 = min(ys), max(ys), min(xs), max(xs)
    rows, cols = height - len(curves) - 1, width - 8
    cells = [bytearray(cols) for _ in range(rows)]
    dots_w, dots_h = cols * 2, rows * 4
    for c in curves:
        previous = None
        for x, y in zip(c.xs, c.ys, strict=True):
            dx = round((x - x0) / (x1 - x0) * (dots_w - 1))
            dy = round((high - y) / (high - low) * (dots_h - 1))
            if previous is not None:
                px, py = previous
                n = max(abs(dx - px), abs(dy - py), 1)
                for k in range(1, n + 1):
                    qx, qy = px + (dx - px) * k // n, py + (dy - py) * k // n
                    cells[qy >> 2][qx >> 1] |= BRAILLE_DOTS[qy & 3][qx & 1]
            previous = (dx, dy)
    return cells


def timed(fn, repeat: int, gate: QuietGate) -> list[float]:
    out = []
    for _ in range(repeat):
        gate.wait()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def measure(runs: list[RunCurves], console: Console, width: int, height: int, repeat: int, gate: QuietGate) -> str:
    options = console.options.update(width=width, height=height)

    def draw(smoothing: float, log_y: bool, axis: str) -> None:
        text = render_overlay(prepared(runs, smoothing, log_y, axis), width, height, x_label=axis)
        list(console.render(text, options))

    curves = prepared(runs, 0.0, False, "step")
    figures = [timed(lambda: draw(0.0, False, "step"), repeat, gate),
               timed(lambda: draw(0.9, True, "step"), repeat, gate),
               timed(lambda: draw(0.0, False, "time"), repeat, gate),
               timed(lambda: list(console.render(render_overlay(curves, width, height), options)), repeat, gate),
               timed(lambda: naive_raster(curves, width, height), max(3, repeat // 4), gate)]
    return " | ".join(f"**{statistics.median(f) * 1000:.1f}** ({min(f) * 1000:.1f}–{max(f) * 1000:.1f})"
                      for f in figures)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    gate = QuietGate(max_wait=5.0, budget=60.0)
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_events(Path(tmp), args.runs, args.points)
        gate.wait()
        start = time.perf_counter()
        runs = [RunCurves(p) for p in paths]
        for run in runs:
            run.poll()
        read = time.perf_counter() - start
    print(f"read {args.runs} events.jsonl of {args.points:,} training logs each: {read * 1000:.0f} ms (once; "
          "then only appended lines)")
    console = Console(file=io.StringIO(), width=200, color_system="truecolor", force_terminal=True)
    print(f"\n{args.runs} runs × {args.points:,} points, median of {args.repeat} (min–max), ms")
    print("| plot size | draw: step, no smoothing | draw: smoothing 0.9, log y | draw: x as time | "
          "of which rasterise + paint | baseline: every point joined |")
    print("|---|---|---|---|---|---|")
    for width, height in SIZES:
        print(f"| {width}×{height} | {measure(runs, console, width, height, args.repeat, gate)} |")
    print(f"\n{gate.waits - gate.busy_runs}/{gate.waits} measurements started on a quiet machine")


if __name__ == "__main__":
    main()
