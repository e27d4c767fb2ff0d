"""A run's checkpoints: one row each, newest first (step, the best by the run's metric, complete or
why not, when written, size, metrics), and a hint while there are none. The monitor hands it the
run's watch; the cursor follows the newest checkpoint until the user moves it, then keeps that row across
refreshes, and it says which checkpoint is selected."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from tuitrain.humanize import number, size
from tuitrain.runs.view.live import is_metric
from tuitrain.tui.format import clock, short_metric
from tuitrain.tui.widgets.plain_table import PlainTable
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from tuitrain.runs.view.live import RunWatch

COLUMNS = ("STEP", "BEST", "STATE", "WRITTEN", "SIZE", "METRICS")


def best_checkpoint(watch: RunWatch) -> Path | None:
    """The run's best checkpoint (`rundir.best`, as its events tell it: the one rotation keeps and the header names),
    while it is on disk; None before any."""
    step = watch.events.best_step
    return next((c.path for c in watch.checkpoints if c.step == step), None) if step is not None else None


def checkpoint_rows(watch: RunWatch) -> list[tuple]:
    """(path, cells…) a checkpoint, newest first; the best by the run's metric is starred."""
    best = best_checkpoint(watch)
    rows = []
    for c in reversed(watch.checkpoints):
        shown = [(short_metric(k), v) for k, v in c.metrics.items() if k == "loss" or is_metric(k)]
        metrics = "  ".join(f"{k} {number(v)}" for k, v in shown[:4]) or "-"
        state = Text("complete", style="green") if c.complete else Text("INCOMPLETE", style="bold red")
        if not c.complete:
            metrics = c.why
        rows.append((str(c.path), str(c.step), Text("★", style="bold yellow") if c.path == best else "", state,
                     clock(watch.checkpoint_times.get(c.path.name), with_date=False), size(c.size_bytes), metrics))
    return rows


class CheckpointList(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[tuple] = []

    def compose(self) -> ComposeResult:
        yield PlainTable(id="checkpoints", cursor_type="row")
        yield Words("", id="checkpoints-empty", classes="hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)

    def show(self, watch: RunWatch, output_dir: str) -> None:
        """The run's checkpoints as they are now (`output_dir`: where they go, as the user reads it)."""
        rows = checkpoint_rows(watch)
        if rows == self._rows:
            return
        self._rows = rows
        table = self.query_one(DataTable)
        selected = self.selected()
        on_newest = table.cursor_row == 0  # untouched, or put back on top: it follows new checkpoints, as tail -f
        table.clear()
        for key, *cells in rows:
            table.add_row(*cells, key=key)
        keys = [r[0] for r in rows]
        if not on_newest and selected is not None and str(selected) in keys:
            table.move_cursor(row=keys.index(str(selected)), animate=False)
        else:
            table.move_cursor(row=0, animate=False)
        empty = self.query_one("#checkpoints-empty", Static)
        empty.update("" if rows else f"no checkpoints yet in {output_dir}")
        empty.display = not rows

    def selected(self) -> Path | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
            return Path(key) if key is not None else None
        except Exception:  # noqa: BLE001 - the table is being rebuilt
            return None

    def focus_table(self) -> None:
        self.query_one(DataTable).focus()
