"""Proofs that stay in the suite: a stop and a resume train exactly as an uninterrupted run, with
one and two ranks (save-now and evaluate-now on the way, through the per-step broadcast of control
requests); a kill in the middle of a save never leaves `latest` pointing at a torn checkpoint."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import FAST, TWO_RANKS, cli, events, losses, record, wait_for, wait_until_ended

pytestmark = pytest.mark.slow

STEPS = 100  # past an epoch's end after the stop: the demo's 2000 rows are 63 steps of one rank, 32 of two
EXACT = [*FAST, "--set", f"training.max_steps={STEPS}", "--set", "training.save_strategy=no",
         "--set", "training.eval_strategy=no"]


def kinds(run_dir: Path, kind: str) -> list[dict]:
    return [e for e in events(run_dir) if e["event"] == kind]


@pytest.mark.parametrize("ranks", [1, 2], ids=["1-rank", "2-ranks"])
def test_stop_then_resume_trains_exactly_as_an_uninterrupted_run(runs_dir, tmp_path, ranks):
    world = TWO_RANKS if ranks == 2 else []
    straight_root = tmp_path / "straight"
    straight_root.mkdir()
    straight = cli("run", "demo", *EXACT, *world, runs_dir=straight_root)
    assert straight.returncode == 0, straight.stdout + straight.stderr
    (straight_dir,) = list(straight_root.iterdir())
    expected = losses(straight_dir)
    assert sorted(expected) == list(range(1, STEPS + 1))

    # Asked as soon as the run is started (its ranks are still importing), the requests land at its first step
    # ends, far from its last: nothing races the run's end.
    started = cli("run", "demo", "--detach", *EXACT, *world, runs_dir=runs_dir)
    run_dir = runs_dir / started.stdout.strip()
    if ranks == 2:  # save-now and evaluate-now reach both ranks at the same step, or the run hangs
        assert cli("save", run_dir.name, runs_dir=runs_dir).returncode == 0
        assert cli("evaluate", run_dir.name, runs_dir=runs_dir).returncode == 0
    assert cli("stop", run_dir.name, runs_dir=runs_dir).returncode == 0
    parent = wait_until_ended(run_dir, 120)
    assert parent["status"] == "stopped", parent
    stop_step = kinds(run_dir, "save")[-1]["step"]
    if stop_step >= STEPS - 1:
        pytest.skip(f"the run reached step {stop_step} before the stop landed; nothing left to compare")
    if ranks == 2:
        assert {e["request"] for e in kinds(run_dir, "control")} == {"save-now", "evaluate-now", "stop"}
        assert kinds(run_dir, "evaluate"), events(run_dir)
        listing = json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs_dir).stdout)
        assert listing[-1]["world_size"] == 2 and listing[-1]["complete"]
        assert {"rng_state_0.pth", "rng_state_1.pth"} <= {p.name for p in Path(listing[-1]["path"]).iterdir()}

    resumed = cli("resume", run_dir.name, runs_dir=runs_dir)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    child = next(p for p in runs_dir.iterdir() if p.name != run_dir.name)
    got = losses(child)
    assert sorted(got) == list(range(stop_step + 1, STEPS + 1))
    # bit-exact on the CPU after the first logged step (whose window may straddle the stop)
    assert got[stop_step + 1] == pytest.approx(expected[stop_step + 1], abs=1e-4)
    for step in range(stop_step + 2, STEPS + 1):
        assert got[step] == expected[step], (step, got[step], expected[step])


def _kill_during_a_save(output_dir: Path, pid: int, after_step: int, timeout: float = 180) -> int:
    """Wait for a checkpoint folder past `after_step` to appear and SIGKILL `pid` at once, while
    the Trainer is still writing into it. Returns the step of that folder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            steps = [int(n.rsplit("-", 1)[1]) for n in os.listdir(output_dir) if n.startswith("checkpoint-")]
        except FileNotFoundError:
            steps = []
        fresh = [s for s in steps if s > after_step]
        if fresh:
            os.kill(pid, signal.SIGKILL)
            return max(fresh)
        time.sleep(0.002)
    raise AssertionError("no checkpoint was started in time")


@pytest.mark.parametrize("ranks, victim", [(1, 0), (2, 0)], ids=["1-rank", "2-ranks-rank-0"])
def test_a_kill_during_a_save_never_leaves_latest_torn(runs_dir, ranks, victim):
    world = TWO_RANKS if ranks == 2 else []
    started = cli("run", "demo", "--detach", "--set", "training.max_steps=100000", "--set", "training.save_steps=2",
                  "--set", "training.eval_strategy=no", "--set", "training.logging_steps=1", *world, runs_dir=runs_dir)
    run_dir = runs_dir / started.stdout.strip()
    wait_for(lambda: len(kinds(run_dir, "save")) >= 1, 180, "a first whole checkpoint")
    rec = record(run_dir)
    torn_step = _kill_during_a_save(Path(rec["output_dir"]), rec["processes"][f"rank {victim}"]["pid"],
                                    kinds(run_dir, "save")[-1]["step"])
    rec = wait_until_ended(run_dir, 30)
    assert rec["status"] == "failed" and rec["failed_rank"] == victim
    assert f"rank {victim}" in rec["error"] and "SIGKILL" in rec["error"], rec["error"]

    listing = {c["step"]: c for c in json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs_dir).stdout)}
    latest = max(s for s, c in listing.items() if c["complete"])
    assert latest < torn_step or listing[torn_step]["complete"]  # the kill may land just after the save
    resumed = cli("resume", run_dir.name, "--set", f"training.max_steps={torn_step + 1}", runs_dir=runs_dir)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"checkpoint-{latest} " in resumed.stderr  # resumed from the newest whole one
    child = next(p for p in runs_dir.iterdir() if p.name != run_dir.name)
    rewritten = {c["step"]: c for c in json.loads(cli("checkpoints", child.name, "--json", runs_dir=runs_dir).stdout)}
    if latest < torn_step:  # the torn step is trained and saved again, whole; else it was whole already (resumed from)
        assert rewritten[torn_step]["complete"] and rewritten[torn_step]["verified"], rewritten
    assert rewritten[torn_step + 1]["complete"] and rewritten[torn_step + 1]["verified"], rewritten
