"""The checkpoints table's cursor follows the newest checkpoint as a running run writes them, until the user
moves it; then it keeps that row (a user's day: R in a monitor left open through a run resumed from a
checkpoint far down the list, the cursor having stayed on the row that was newest when the tab was opened)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from textual.app import App, ComposeResult

from test_tui_app import until
from tuitrain.rundir.checkpoints import Checkpoint
from tuitrain.tui.widgets.checkpoints import CheckpointList


def watch_with(steps: list[int], root: Path) -> SimpleNamespace:
    """What the list reads of a RunWatch: its checkpoints (oldest first), the metric, save times."""
    checkpoints = [Checkpoint(step=s, path=root / f"checkpoint-{s}", complete=True, missing=(), size_bytes=10)
                   for s in steps]
    return SimpleNamespace(checkpoints=checkpoints, checkpoint_times={},
                           events=SimpleNamespace(metric="eval_loss", best_step=None))


class OneList(App[None]):
    def compose(self) -> ComposeResult:
        yield CheckpointList(id="list")


def test_the_cursor_follows_new_checkpoints_until_the_user_moves_it(tmp_path: Path) -> None:
    app = OneList()

    async def main() -> None:
        async with app.run_test(size=(100, 20)) as pilot:
            widget = app.query_one(CheckpointList)
            widget.show(watch_with([10, 20], tmp_path), "out")
            await pilot.pause()
            assert widget.selected() == tmp_path / "checkpoint-20"
            for newest in (30, 40, 50):  # written while the tab is open, the cursor untouched
                widget.show(watch_with(list(range(10, newest + 1, 10)), tmp_path), "out")
                await pilot.pause()
                assert widget.selected() == tmp_path / f"checkpoint-{newest}"

            widget.focus_table()
            await pilot.press("down", "down")  # the user picks checkpoint-30
            await until(pilot, lambda: widget.selected() == tmp_path / "checkpoint-30", what="the user's row")
            widget.show(watch_with([10, 20, 30, 40, 50, 60], tmp_path), "out")
            await pilot.pause()
            assert widget.selected() == tmp_path / "checkpoint-30"  # kept, though a newer one arrived

            await pilot.press("up", "up", "up")  # back on top: following the newest again
            await until(pilot, lambda: widget.selected() == tmp_path / "checkpoint-60", what="the top row")
            widget.show(watch_with([10, 20, 30, 40, 50, 60, 70], tmp_path), "out")
            await pilot.pause()
            assert widget.selected() == tmp_path / "checkpoint-70"

    asyncio.run(main())
