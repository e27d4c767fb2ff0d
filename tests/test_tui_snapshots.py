"""Screenshots of every screen at 80×24 and 120×40, on fixed run directories (fixed timestamps,
a frozen clock, UTC, a fixed hardware line) written under one fixed folder so paths never change
(held under a file lock, so two suites on one machine take turns).

Update after a deliberate change of the look: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from test_tui_app import BAD_PROFILE, make_app, until
from test_tui_fixtures import FAILED, FINISHED, fixed_time, make_runs

BASE = Path("/tmp/tuitrain-tui-snapshots")  # a fixed path: it shows in the launch plan
SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def training_args_as_shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The editor's help texts and choices come from the TrainingArguments table shipped with tuitrain, not from
    the installed transformers: a screenshot must not change with the version a machine has (5.17 words
    learning_rate's help otherwise than 5.24). The shipped table answers as the installed version's own, and a
    cache folder that cannot be made keeps a background probe from starting."""
    from tuitrain.profile import training_args

    shipped = training_args.snapshot_table()
    assert shipped is not None, "tuitrain/profile/training_args_snapshot.json is missing or damaged"
    monkeypatch.setattr(training_args, "transformers_version", lambda: shipped["version"])
    blocker = tmp_path / "no-cache-here"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))


@pytest.fixture
def base() -> Iterator[Path]:
    """The fixed folder, held under an exclusive lock: two suites running at once on one machine
    take turns instead of deleting each other's runs."""
    with open(f"{BASE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            fixed_time()
            shutil.rmtree(BASE, ignore_errors=True)
            make_runs(BASE / "runs")
            (BASE / "profiles").mkdir()
            (BASE / "profiles" / "mine.toml").write_text(BAD_PROFILE)
            yield BASE
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def ready(pilot) -> None:
    app = pilot.app
    await until(pilot, lambda: app.polls > 1 and app.screen.query_one("#runs").row_count == 3
                and len(app.screen.query_one("#runs").columns) == 6, what="runs")
    await until(pilot, lambda: app.screen.query_one("#profiles").option_count == 2, what="profiles")
    app.screen.query_one("#runs").focus()
    await pilot.pause(0.2)


async def open_run(pilot, run_id: str) -> None:
    app = pilot.app
    await ready(pilot)
    table = app.screen.query_one("#runs")
    ids = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]
    table.move_cursor(row=ids.index(run_id))
    await pilot.press("enter")
    await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen._landed, what="monitor")
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_home(snap_compare, base, size):
    assert snap_compare(make_app(base), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_failed_run_on_its_traceback(snap_compare, base, size):
    async def before(pilot):
        await open_run(pilot, FAILED)
        await until(pilot, lambda: pilot.app.screen.active_view().current is not None, what="the traceback")

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)


def test_monitor_all_ranks_merged(snap_compare, base):
    async def before(pilot):
        await open_run(pilot, FINISHED)

    assert snap_compare(make_app(base), terminal_size=(80, 24), run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_metrics(snap_compare, base, size):
    async def before(pilot):
        await open_run(pilot, FINISHED)
        await pilot.press("m")

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_checkpoints(snap_compare, base, size):
    async def before(pilot):
        await open_run(pilot, FAILED)
        await pilot.press("p")
        await until(pilot, lambda: pilot.app.screen.query_one("#checkpoints").row_count == 2, what="checkpoints")

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_editor_with_a_flagged_field(snap_compare, base, size):
    async def before(pilot):
        from textual.widgets import Input, TabbedContent

        app = pilot.app
        await ready(pilot)
        options = app.screen.query_one("#profiles")
        options.highlighted = [options.get_option_at_index(i).id for i in range(2)].index(str(base / "profiles" / "mine.toml"))
        await pilot.press("e")
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="editor")
        editor = app.screen
        editor.query_one("#sections", TabbedContent).active = "sec-training"
        await until(pilot, lambda: "training.learning_rate" in editor.rows and editor.rows["training.learning_rate"].error,
                    what="the flagged field")
        for box in editor.query(Input):
            box.cursor_blink = False
        editor.query_one("#sections Tabs").focus()
        await pilot.pause(0.3)

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help(snap_compare, base, size):
    async def before(pilot):
        await ready(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen", what="help")

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_launch_dialog_with_its_plan(snap_compare, base, size):
    async def before(pilot):
        from textual.widgets import Input

        app = pilot.app
        await ready(pilot)
        options = app.screen.query_one("#profiles")
        options.highlighted = [str(options.get_option_at_index(i).prompt) for i in range(2)].index(
            next(str(options.get_option_at_index(i).prompt) for i in range(2) if "demo" in str(options.get_option_at_index(i).prompt)))
        options.focus()
        await pilot.press("r")
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", what="the launch dialog")
        plan = app.screen.query_one("#plan")
        await until(pilot, lambda: "accelerate launch" in str(plan.content), what="the plan")
        app.screen.query_one(Input).cursor_blink = False
        await pilot.pause(0.3)

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)
