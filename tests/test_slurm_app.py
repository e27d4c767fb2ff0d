"""The app's launch dialog submits to a real Slurm (tests/slurm_cluster.py) as `tuitrain submit` does: the
Slurm options as that command takes them, a mistake or sbatch's refusal in one line with nothing left behind,
then the submitted run's monitor."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import FAST, record, wait_until_ended
from slurm_cluster import PARTITION, Cluster
from test_tui_app import until


def test_the_launch_dialog_submits_the_profile_to_slurm(slurm_cluster: Cluster, tmp_path: Path) -> None:
    from tuitrain.profile.lookup import BUILTIN_DIR
    from tuitrain.tui.app import TuitrainApp
    from tuitrain.tui.screens.launch import LaunchScreen

    runs = tmp_path / "runs"
    runs.mkdir()
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3, monitor_interval=0.2)
    overrides = [word for word in FAST if word != "--set"]

    async def main() -> Path:
        async with app.run_test(size=(120, 40)) as pilot:
            app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml", overrides))
            await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#problems"),
                        what="the launch dialog")
            dialog = app.screen
            problems = dialog.query_one("#problems")

            dialog.query_one("#sbatch").value = "--warning soon"
            await pilot.press("ctrl+b")
            await until(pilot, lambda: "Slurm options: argument --warning" in str(problems.content), 20,
                        "the options' mistake")
            dialog.query_one("#sbatch").value = "--partition nope"
            await pilot.press("ctrl+b")
            await until(pilot, lambda: "sbatch refused the job" in str(problems.content), 30, "sbatch's refusal")
            assert "nope" in str(problems.content) and len(str(problems.content).strip().splitlines()) == 1
            assert list(runs.iterdir()) == []  # nothing submitted, nothing left

            dialog.query_one("#sbatch").value = f"--partition {PARTITION} --time 10"
            await pilot.press("ctrl+b")
            await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", 60, "the submitted run's monitor")
            return app.screen.run_watch.paths.root

    run = asyncio.run(main())
    rec = record(run)
    assert rec["slurm"]["job_id"] and rec["slurm"]["partition"] == PARTITION and rec["slurm"]["time"] == "10"
    assert rec["max_steps"] == 8
    assert wait_until_ended(run, 180)["status"] == "finished"
