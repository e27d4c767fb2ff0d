"""The launch and resume dialogs, as a new user meets them (issue 21, item 11): ctrl+y copies the command the
launch dialog would run, and the resume dialog's example is a value resume accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tui_app import make_app, run, until
from test_tui_fixtures import FINISHED, make_runs
from tuitrain.profile.lookup import BUILTIN_DIR


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    return tmp_path


def test_ctrl_y_in_the_launch_dialog_copies_the_command_with_its_overrides(base: Path) -> None:
    from tuitrain.tui.screens.launch import LaunchScreen

    app = make_app(base)
    before = sorted((base / "runs").iterdir())

    async def script(pilot):
        app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml", ["training.max_steps=40"]))
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#sbatch"),
                    what="the launch dialog")
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard, what="the copy")
        assert app.clipboard == f"tuitrain run {BUILTIN_DIR / 'demo.toml'} --set training.max_steps=40"
        app.screen.query_one("#sbatch").value = "--partition gpu --time 2:00:00"
        await pilot.press("ctrl+y")
        await until(pilot, lambda: "submit" in app.clipboard, what="the submit command")
        assert app.clipboard == (f"tuitrain submit {BUILTIN_DIR / 'demo.toml'} --set training.max_steps=40 "
                                 "--partition gpu --time 2:00:00")
        assert sorted((base / "runs").iterdir()) == before  # copying starts nothing

    run(script, app, size=(120, 40))


def test_the_resume_dialogs_example_is_a_value_resume_accepts(base: Path) -> None:
    """The example used to be training.max_steps=200 whatever the checkpoint: past step 200 resume refuses it."""
    from tuitrain.rundir.checkpoints import latest_complete, run_checkpoints
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.rundir.record import read_record
    from tuitrain.runs.start.from_profile import nothing_left
    from tuitrain.tui.screens.resume import ResumeScreen

    run_dir = base / "runs" / FINISHED
    latest = latest_complete(run_checkpoints(read_record(RunPaths(run_dir))))
    assert latest is not None
    app = make_app(base)

    async def script(pilot):
        app.push_screen(ResumeScreen(run_dir, "latest"))
        await until(pilot, lambda: type(app.screen).__name__ == "ResumeScreen" and app.screen.chosen is not None,
                    20, "the checkpoint")
        example = app.screen.query_one("#resume-set").placeholder
        assert example == f"training.max_steps={latest.step * 2}"
        key, value = example.split("=")
        assert nothing_left({"training": {"max_steps": int(value)}}, latest) is None

    run(script, app, size=(120, 40))
