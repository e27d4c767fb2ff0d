"""The app with real runs: launched from it, watched live, saved, stopped and resumed from it;
and the app in a real terminal (tmux), quit while its run goes on."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FAST, events, patient, record, wait_until_ended
from test_tui_app import press_and_confirm, until

pytestmark = pytest.mark.slow

SETS = [FAST[i + 1] for i in range(0, len(FAST), 2)]  # conftest's --set pairs as plain overrides
LONG = ["training.max_steps=100000", "training.logging_steps=1", "training.eval_strategy=no",
        "training.save_strategy=no", "training.warmup_steps=0"]


def real_app(base: Path, overrides: list[str]):
    from tuitrain.tui.app import TuitrainApp

    return TuitrainApp(base / "runs", cwd=base, launch_overrides=overrides, poll_interval=0.3, monitor_interval=0.2)


async def launch_demo(pilot):
    """Home → r (the highlighted profile: the built-in demo) → the launch dialog → enter → the monitor."""
    app = pilot.app
    await until(pilot, lambda: app.polls > 0 and app.screen.query_one("#profiles").option_count > 0, what="home")
    await pilot.press("r")
    await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", what="the launch dialog")
    await until(pilot, lambda: "accelerate launch" in str(app.screen.query_one("#plan").content), 60, "the plan")
    await pilot.press("enter")
    await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", 60, "the monitor of the new run")
    return app.screen


def test_launch_the_demo_and_watch_logs_and_curves_fill(tmp_path):
    app = real_app(tmp_path, SETS)

    async def main():
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            monitor = await launch_demo(pilot)
            await pilot.press("right_square_bracket")  # the Rank 0 tab
            rank0 = monitor.query_one("#log-rank-0")
            assert monitor.active_view() is rank0
            await until(pilot, lambda: rank0.line_count > 5, 120, "rank 0's log")
            await until(pilot, lambda: len(monitor.run_watch.events.series.get("loss", [])) >= 3, 180, "the loss curve")
            await pilot.press("m")
            await until(pilot, lambda: len(monitor.query_one("#plot-loss").lines[0].values) >= 3, 10, "the plot")
            # one toast a poll: "checkpoint-4 written", or both at once when the run saves them within one poll
            await until(pilot, lambda: any(n.title == "Checkpoint" and ("checkpoint-4 written" in n.message or
                                                                         "2 checkpoints written" in n.message)
                                           for n in app._notifications), 240, "a toast for the checkpoint")
            await until(pilot, lambda: monitor.run_watch.status == "finished", 240, "the end of the run")
            await until(pilot, lambda: any("finished" in n.message for n in app._notifications), 10, "a toast")
            assert "[tuitrain] rank 0/1" in rank0.line_text(0).plain
            await pilot.press("m", "left_square_bracket", "left_square_bracket", "left_square_bracket")  # Metrics, then back to All ranks
            merged = monitor.query_one("#log-all")
            await until(pilot, lambda: merged.line_count > 5, 10, "the merged view")
            assert merged.line_text(0).plain.startswith("0│")
            return monitor.run_watch.paths.root

    run_dir = asyncio.run(main())
    assert record(run_dir)["status"] == "finished"


def test_a_run_launched_from_the_app_leaves_no_zombie_under_it(tmp_path):
    """The supervisor the app started is reaped when it ends, while the app goes on (issue 13, defect 5)."""
    import psutil

    app = real_app(tmp_path, SETS)

    def zombies() -> list[int]:
        return [p.pid for p in psutil.Process().children(recursive=True) if p.status() == psutil.STATUS_ZOMBIE]

    async def main():
        async with app.run_test(size=(100, 30)) as pilot:
            monitor = await launch_demo(pilot)
            supervisor = monitor.run_watch.record["pids"]["supervisor"]
            await until(pilot, lambda: monitor.run_watch.status in ("finished", "failed"), 240, "the end of the run")
            # the supervisor outlives the recorded end a moment (it reaps accelerate launch); then the app reaps it
            await until(pilot, lambda: not psutil.pid_exists(supervisor), 120, "the supervisor ended and reaped")
            assert zombies() == []

    asyncio.run(main())


def test_save_now_stop_then_resume_from_the_checkpoints_tab(tmp_path):
    app = real_app(tmp_path, LONG)

    async def main():
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            monitor = await launch_demo(pilot)
            first = monitor.run_watch.paths.root
            await until(pilot, lambda: monitor.run_watch.events.progress["step"] >= 2, 180, "training steps")
            await pilot.press("c")
            table = monitor.query_one("#checkpoints")
            await until(pilot, lambda: table.row_count >= 1, 60, "the saved-now checkpoint")
            saved_now = monitor.run_watch.checkpoints[0].step
            await press_and_confirm(pilot, "s")
            await until(pilot, lambda: monitor.run_watch.status == "stopped", 120, "the run to stop")
            await until(pilot, lambda: table.row_count == 2, 30, "the stop's checkpoint")
            last = max(c.step for c in monitor.run_watch.checkpoints)
            assert last > saved_now

            await pilot.press("p")
            # The older one: the resumed run writes into its own folder, so branching from an
            # earlier checkpoint overwrites nothing and is allowed.
            table.move_cursor(row=1)
            await pilot.press("R")
            await until(pilot, lambda: type(app.screen).__name__ == "ResumeScreen", 10, "the resume dialog")
            await pilot.press("enter")  # the app's own overrides, as the dialog offers them
            await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen is not monitor,
                        120, "the resumed run's monitor")
            resumed = app.screen
            rec = resumed.run_watch.record
            assert rec["parent"] == first.name and rec["resume_from"].endswith(f"checkpoint-{saved_now}")
            await until(pilot, lambda: resumed.run_watch.events.series.get("loss"), 180, "the resumed run's first step")
            assert resumed.run_watch.events.series["loss"].steps[0] == saved_now + 1
            await press_and_confirm(pilot, "s")
            await until(pilot, lambda: resumed.run_watch.status == "stopped", 120, "the resumed run to stop")
            return first, resumed.run_watch.paths.root

    first, second = asyncio.run(main())
    saves = [e for e in events(first) if e["event"] == "save"]
    assert len(saves) == 2
    assert record(second)["status"] == "stopped"
    parents = {p.name for p in (first / "output").glob("checkpoint-*")}
    assert parents == {Path(e["checkpoint"]).name for e in saves}  # the parent's are untouched


def test_in_a_real_terminal_launch_the_demo_and_quit_leaving_the_run_going(tmp_path):
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed")
    runs = tmp_path / "runs"
    socket = f"tuitrain-test-{os.getpid()}"
    env_line = f"HF_HUB_OFFLINE=1 TUITRAIN_RUNS_DIR={runs}"
    command = f"cd {tmp_path} && {env_line} {sys.executable} -m tuitrain; echo APP-EXITED-$?; sleep 600"

    def tm(*args: str) -> str:
        return subprocess.run([tmux, "-L", socket, *args], capture_output=True, text=True, timeout=20).stdout

    def screen() -> str:
        return tm("capture-pane", "-p", "-t", "app")

    def wait_screen(text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + patient(timeout)
        while time.monotonic() < deadline:
            shown = screen()
            if text in shown:
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never shown; the screen:\n{screen()}")

    tm("new-session", "-d", "-s", "app", "-x", "100", "-y", "30", command)
    try:
        wait_screen("built-in", 30)  # the profiles are listed
        tm("send-keys", "-t", "app", "r")
        wait_screen("Launch demo", 20)
        tm("send-keys", "-t", "app", "-l", " ".join(SETS))
        wait_screen("accelerate launch", 60)
        tm("send-keys", "-t", "app", "Enter")
        shown = wait_screen("profile demo", 60)
        assert "All ranks" in shown and "Rank 0" in shown
        (run_dir,) = list(runs.iterdir())
        tm("send-keys", "-t", "app", "q")
        wait_screen("APP-EXITED-0", 20)
        assert record(run_dir)["status"] in ("starting", "running")
        assert wait_until_ended(run_dir, 300)["status"] == "finished"
        assert json.loads((run_dir / "run.json").read_text())["exit_codes"]["launcher"] == 0
    finally:
        tm("kill-session", "-t", "app")
