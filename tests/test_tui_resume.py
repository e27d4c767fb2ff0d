"""The monitor's resume dialog (R): any checkpoint, `--set` overrides checked as the CLI checks
them, and the new run started through `tuitrain resume`'s own function. On a copy of the shared
real demo run (checkpoints at steps 4 and 8)."""

from __future__ import annotations

import asyncio
import json
import shutil
import tomllib
from pathlib import Path

import pytest

from conftest import events, record, wait_until_ended
from test_tui_app import until

pytestmark = pytest.mark.slow  # uses the shared finished run


@pytest.fixture
def run_copy(finished_run: Path, tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    copy = runs / finished_run.name
    shutil.copytree(finished_run, copy)
    rec = record(copy)
    rec["output_dir"] = str(copy / "output")
    (copy / "run.json").write_text(json.dumps(rec))
    return copy


def app_on(run_dir: Path):
    from tuitrain.tui.app import TuitrainApp

    return TuitrainApp(run_dir.parent, cwd=run_dir.parent.parent, open_run=run_dir, poll_interval=0.3,
                       monitor_interval=0.2)


async def open_resume_dialog(pilot, row: int):
    """The monitor's Checkpoints tab, the checkpoint on `row` (newest first), then R."""
    app = pilot.app
    await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", 20, "the monitor")
    monitor = app.screen
    await pilot.press("p")
    table = monitor.query_one("#checkpoints")
    await until(pilot, lambda: table.row_count == 2, 20, "both checkpoints")
    table.move_cursor(row=row)
    await pilot.press("R")
    await until(pilot, lambda: type(app.screen).__name__ == "ResumeScreen", 10, "the resume dialog")
    dialog = app.screen
    await until(pilot, lambda: "step" in str(dialog.query_one("#checkpoint").content), 20, "the checkpoint line")
    return monitor, dialog


def test_resume_from_the_older_checkpoint_with_an_override(run_copy: Path):
    app = app_on(run_copy)

    async def main() -> Path:
        async with app.run_test(size=(110, 32)) as pilot:
            monitor, dialog = await open_resume_dialog(pilot, row=1)
            shown = str(dialog.query_one("#checkpoint").content)
            assert "checkpoint-4" in shown and "step 5" in shown, shown
            field = dialog.query_one("#resume-set")
            field.value = "training.max_steps=6"
            await until(pilot, lambda: dialog._checks and dialog.problems == [] and
                        not str(dialog.query_one("#resume-problems").content), 20, "the overrides checked")
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen is not monitor,
                        120, "the resumed run's monitor")
            assert monitor not in app.screen_stack  # the resumed run took its parent's place, not a second layer
            child = app.screen.run_watch.paths.root
            await pilot.press("escape")
            await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", 10, "home after one escape")
            return child

    child = asyncio.run(main())
    rec = wait_until_ended(child, 300)
    assert rec["status"] == "finished", rec
    assert rec["parent"] == run_copy.name and rec["resume_from"].endswith("checkpoint-4")
    frozen = tomllib.loads((child / "profile.toml").read_text())
    assert frozen["training"]["max_steps"] == 6
    steps = [e["step"] for e in events(child) if e["event"] == "log" and "loss" in e]
    assert steps[0] == 5 and steps[-1] == 6, steps


def test_a_bad_override_shows_its_line_and_starts_nothing(run_copy: Path):
    app = app_on(run_copy)
    before = sorted(p.name for p in run_copy.parent.iterdir())

    async def main() -> list[str]:
        async with app.run_test(size=(110, 32)) as pilot:
            _monitor, dialog = await open_resume_dialog(pilot, row=0)
            assert "checkpoint-8" in str(dialog.query_one("#checkpoint").content)
            dialog.query_one("#resume-set").value = "training.max_steps=abc trainig.seed=1"
            problems = dialog.query_one("#resume-problems")
            await until(pilot, lambda: len(dialog.problems) == 2, 20, "the two problems")
            shown = str(problems.content).splitlines()
            await pilot.press("enter")
            await until(pilot, lambda: "not started" in str(problems.content), 20, "the refusal")
            await pilot.pause(1.0)
            assert type(app.screen).__name__ == "ResumeScreen"
            return shown

    shown = asyncio.run(main())
    assert len(shown) == 2, shown
    assert "training.max_steps" in shown[0] and "whole number" in shown[0], shown
    assert "unknown section [trainig]" in shown[1] and "did you mean [training]" in shown[1], shown
    assert sorted(p.name for p in run_copy.parent.iterdir()) == before  # no new run


def test_home_R_opens_the_same_dialog_on_the_latest_checkpoint_and_escape_starts_nothing(run_copy: Path):
    from tuitrain.tui.app import TuitrainApp

    app = TuitrainApp(run_copy.parent, cwd=run_copy.parent.parent, poll_interval=0.3)

    async def main() -> None:
        async with app.run_test(size=(110, 32)) as pilot:
            await until(pilot, lambda: app.screen.query_one("#runs").row_count == 1, 20, "the run listed")
            await pilot.press("R")
            await until(pilot, lambda: type(app.screen).__name__ == "ResumeScreen", 10, "the resume dialog")
            dialog = app.screen
            await until(pilot, lambda: "step" in str(dialog.query_one("#checkpoint").content), 20, "the checkpoint line")
            shown = str(dialog.query_one("#checkpoint").content)
            assert "checkpoint-8" in shown and "step 9" in shown, shown
            await pilot.press("escape")
            await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", 10, "Home again")

    asyncio.run(main())
    assert [p.name for p in run_copy.parent.iterdir()] == [run_copy.name]  # nothing was started


def test_the_dialog_says_as_you_type_what_resume_would_refuse_against_the_checkpoint(run_copy: Path):
    """The run finished at its max_steps = 8: from checkpoint-8 there is nothing left to train until the overrides
    ask for more steps; LoRA adapters on a checkpoint of a whole model are refused the same way."""
    app = app_on(run_copy)

    async def main() -> None:
        async with app.run_test(size=(110, 32)) as pilot:
            _monitor, dialog = await open_resume_dialog(pilot, row=0)
            problems = dialog.query_one("#resume-problems")
            await until(pilot, lambda: "nothing is left to train" in str(problems.content), 20, "the refusal, untyped")
            assert "checkpoint-8 is at step 8 and training.max_steps is 8" in str(problems.content)
            dialog.query_one("#resume-set").value = "training.max_steps=12"
            await until(pilot, lambda: dialog.problems == [] and not str(problems.content), 20, "no problem left")
            dialog.query_one("#resume-set").value = "training.max_steps=12 model.lora.quantize=nf4"
            await until(pilot, lambda: "would train LoRA adapters" in str(problems.content), 20, "another model refused")
            assert type(app.screen).__name__ == "ResumeScreen"

    asyncio.run(main())
    assert [p.name for p in run_copy.parent.iterdir()] == [run_copy.name]  # nothing was started
