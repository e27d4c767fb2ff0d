"""Runs outlive the terminal that started them, and runs side by side never collide."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import FAST, TWO_RANKS, as_in_a_terminal, cli, events, losses, record, wait_for, wait_until_ended

pytestmark = pytest.mark.slow


def test_closing_the_terminal_leaves_the_run_going_and_sigterm_stops_it_gracefully(runs_dir):
    env = {**os.environ, "TUITRAIN_RUNS_DIR": str(runs_dir)}
    argv = [sys.executable, "-m", "tuitrain", "run", "demo", "--set", "training.max_steps=100000",
            "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no"]
    # The CLI in the foreground of a "terminal": its own process group, which we hang up.
    follower = subprocess.Popen(argv, env=env, cwd=runs_dir.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=as_in_a_terminal)
    run_dir = wait_for(lambda: next(iter(runs_dir.iterdir()), None), 30, "the run directory")
    wait_for(lambda: losses(run_dir), 120, "a logged step")
    os.killpg(follower.pid, signal.SIGHUP)
    follower.wait(timeout=120)  # generous: the suite runs beside CPU-heavy work
    before = max(losses(run_dir))
    wait_for(lambda: max(losses(run_dir)) >= before + 3, 180, "training to go on after the hang-up")
    assert record(run_dir)["status"] == "running"

    os.kill(record(run_dir)["pids"]["supervisor"], signal.SIGTERM)
    rec = wait_until_ended(run_dir, 180)
    assert rec["status"] == "stopped"
    saves = [e for e in events(run_dir) if e["event"] == "save"]
    assert saves and saves[-1]["step"] == events(run_dir)[-1]["step"]


def test_two_runs_side_by_side_pick_their_own_ports(runs_dir):
    ids = []
    for _ in range(2):
        started = cli("run", "demo", "--detach", *FAST, *TWO_RANKS, runs_dir=runs_dir)
        assert started.returncode == 0, started.stderr
        ids.append(started.stdout.strip())
    records = [wait_until_ended(runs_dir / run_id, 300) for run_id in ids]
    assert [r["status"] for r in records] == ["finished", "finished"], [r.get("exit_codes") for r in records]
    ports = [r["main_process_port"] for r in records]
    assert all(ports) and ports[0] != ports[1]
    assert records[0]["output_dir"] != records[1]["output_dir"]

    listing = json.loads(cli("runs", "--json", runs_dir=runs_dir).stdout)
    assert sorted(r["id"] for r in listing) == sorted(ids)
    assert all(r["progress"]["step"] == 8 and r["progress"]["max_steps"] == 8 for r in listing)
    table = cli("runs", runs_dir=runs_dir).stdout
    assert "8/8" in table and "finished" in table

    merged = cli("logs", ids[0], runs_dir=runs_dir).stdout
    assert "[rank 0] [tuitrain] rank 0/2" in merged and "[rank 1] [tuitrain] rank 1/2" in merged
    one = cli("logs", ids[0], "--rank", "1", runs_dir=runs_dir).stdout
    assert one.startswith("[tuitrain] rank 1/2")
    missing = cli("logs", ids[0], "--rank", "5", runs_dir=runs_dir)
    assert missing.returncode == 2 and "ranks: 0, 1" in missing.stderr
