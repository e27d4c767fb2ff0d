"""The app with Slurm runs on a real one-node cluster (tests/slurm_cluster.py, 2 CPUs): Home's runs table shows each
job's state beside tuitrain's status, and `s` stops a Slurm run as `tuitrain stop` does (a pending job cancelled at
once, a running one saves a checkpoint and stops, and its job is gone)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import FAST, TWO_RANKS, cli, losses, record
from slurm_cluster import Cluster
from test_tui_app import press_and_confirm, until

QUIET = ["--set", "training.eval_steps=100000", "--set", "training.save_steps=100000",
         "--set", "training.max_steps=5000"]  # a long run that saves on request only


def submit(runs: Path, *args: str) -> tuple[Path, str]:
    result = cli("submit", "demo", *args, runs_dir=runs)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = runs / result.stdout.strip()
    return run_dir, str(record(run_dir)["slurm"]["job_id"])


def status_cell(app, run_id: str) -> str:
    table = app.screen.query_one("#runs")
    try:
        return str(table.get_cell(run_id, "STATUS"))
    except Exception:  # noqa: BLE001 - the row is not in the table yet
        return ""


def queued(cluster: Cluster) -> list[str]:
    return cluster.client("squeue", "-h", "-o", "%i", timeout=10).stdout.split()


def test_home_shows_job_states_and_stops_slurm_runs(slurm_cluster: Cluster, tmp_path: Path) -> None:
    from tuitrain.tui.app import TuitrainApp

    runs = tmp_path / "runs"
    runs.mkdir()
    two, job2 = submit(runs, *FAST, *TWO_RANKS, *QUIET, "--time", "10")  # takes the node's 2 CPUs
    one, job1 = submit(runs, *FAST, *QUIET, "--time", "10")  # waits for them
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3)

    async def main() -> None:
        async with app.run_test(size=(120, 30), notifications=True) as pilot:
            await until(pilot, lambda: status_cell(app, two.name) == "running · RUNNING", 90, "the 2-rank job running")
            await until(pilot, lambda: status_cell(app, one.name) == "planned · PENDING (Resources)", 30,
                        "the other job pending on resources")
            table = app.screen.query_one("#runs")

            table.move_cursor(row=table.get_row_index(one.name))
            await press_and_confirm(pilot, "s")  # pending: cancelled at once
            await until(pilot, lambda: record(one)["status"] == "cancelled", 30, "the pending job cancelled")
            assert "cancelled while pending" in record(one)["error"]
            await until(pilot, lambda: status_cell(app, one.name) == "cancelled · CANCELLED", 30, "CANCELLED shown")
            assert any(f"Slurm job {job1} was still pending" in n.message for n in app._notifications)

            await until(pilot, lambda: losses(two), 120, "training to start")
            table.move_cursor(row=table.get_row_index(two.name))
            await press_and_confirm(pilot, "s")  # running: saves a checkpoint and stops, then the job completes
            await until(pilot, lambda: record(two)["status"] == "stopped", 150, "the run stopped")
            await until(pilot, lambda: job2 not in queued(slurm_cluster), 30, "the job gone from squeue")
            await until(pilot, lambda: status_cell(app, two.name) == "stopped · COMPLETED", 30, "COMPLETED shown")
            await until(pilot, lambda: any(n.message.startswith(f"run {two.name} stopped on request") and n.title == "Stop"
                                           for n in app._notifications), 10, "the stop's end said")
            checkpoints = list((two / "output").glob("checkpoint-*"))
            assert len(checkpoints) == 1 and (checkpoints[0] / "tuitrain.json").exists()

    asyncio.run(main())
