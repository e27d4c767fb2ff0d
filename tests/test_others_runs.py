"""Another user's runs, as a shared workstation's runs root holds them: every verb that changes a run (stop,
stop --now, save, evaluate, cancel, queue move, resume into its folder) refuses it in the same one line, and
nothing reaches the run. Real demo runs on the CPU, given away to another uid as root can (CI runs as root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import check_clean, cli, record, wait_for, wait_until_ended

STRANGER = 12345
LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="giving a run to another user (chown) needs root, as CI has")


@pytest.fixture(autouse=True)
def own_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))


def steps(run_dir: Path) -> int:
    return len([line for line in (run_dir / "events.jsonl").read_text().splitlines() if '"step"' in line]) \
        if (run_dir / "events.jsonl").exists() else 0


def refused(runs_dir: Path, run_dir: Path, verb: str, *args: str) -> None:
    before = sorted(p.name for p in (run_dir / "control").iterdir()) if (run_dir / "control").exists() else []
    check_clean(cli(*args, runs_dir=runs_dir), f"run {run_dir.name} is uid {STRANGER}'s; only they can {verb} it")
    after = sorted(p.name for p in (run_dir / "control").iterdir()) if (run_dir / "control").exists() else []
    assert after == before, f"`tuitrain {' '.join(args)}` left a request for another user's run: {after}"


@pytest.mark.slow
def test_every_verb_that_changes_a_run_refuses_another_users_run(runs_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = runs_dir / cli("run", "demo", "--detach", *LONG, "--set", f"run.output_dir={out}", runs_dir=runs_dir).stdout.strip()
    second = runs_dir / cli("run", "demo", "--after", first.name, runs_dir=runs_dir).stdout.strip()
    wait_for(lambda: steps(first) >= 2, 240, "the first run's second step")
    assert record(second)["status"] == "queued"
    for run_dir in (first, second):
        os.chown(run_dir, STRANGER, -1)
    for verb, args in [("stop", ("stop", first.name)), ("stop", ("stop", "--now", first.name)),
                       ("save", ("save", first.name)), ("evaluate", ("evaluate", first.name)),
                       ("stop", ("stop", second.name)), ("cancel", ("cancel", second.name)),
                       ("move", ("queue", "move", second.name, "--top"))]:
        refused(runs_dir, first if first.name in args else second, verb, *args)
    assert record(first)["status"] == "running" and record(second)["status"] == "queued"

    for run_dir in (first, second):  # its own user again: a stop saves a checkpoint, the queued run is dropped
        os.chown(run_dir, 0, -1)
    assert cli("stop", first.name, runs_dir=runs_dir).returncode == 0
    assert wait_until_ended(first)["status"] == "stopped"
    assert cli("stop", "--now", second.name, runs_dir=runs_dir).returncode == 0  # queued or just started after first
    wait_until_ended(second, 60)
    os.chown(first, STRANGER, -1)
    text = check_clean(cli("resume", first.name, runs_dir=runs_dir),
                       f"run {first.name} is uid {STRANGER}'s; only they can resume it into its folder")
    assert "--set run.output_dir=" in text, text
    # Continuing from its checkpoint into a folder of one's own is no business of theirs.
    mine = cli("resume", first.name, "--detach", "--set", f"run.output_dir={tmp_path / 'mine'}", runs_dir=runs_dir)
    assert mine.returncode == 0, mine.stdout + mine.stderr
    resumed = runs_dir / mine.stdout.strip()
    assert cli("stop", "--now", resumed.name, runs_dir=runs_dir).returncode == 0
    wait_until_ended(resumed)
