"""The run lifecycle on a bad day: a supervisor or launcher killed, a resume into a shared folder,
a recorded pid reused by a stranger. Real runs, real signals; nothing is lost and nothing waits
for ever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from conftest import TWO_RANKS, cli, events, losses, record, small_tmpfs, wait_for, wait_until_ended

pytestmark = pytest.mark.slow

LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no"]


def run_processes(rec: dict) -> list[psutil.Process]:
    """The run's recorded processes that are still the same processes (pid and start time)."""
    found = []
    for entry in (rec.get("processes") or {}).values():
        try:
            proc = psutil.Process(entry["pid"])
            if abs(proc.create_time() - entry["started"]) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.NoSuchProcess:
            pass
    return found


def start_long(runs_dir: Path, *extra: str) -> Path:
    started = cli("run", "demo", "--detach", *LONG, *extra, runs_dir=runs_dir)
    assert started.returncode == 0, started.stderr
    return runs_dir / started.stdout.strip()


def test_a_killed_supervisor_takes_its_ranks_with_it_and_the_run_is_lost_then_resumable(runs_dir):
    run_dir = start_long(runs_dir, *TWO_RANKS, "--set", "training.save_steps=2")
    wait_for(lambda: any(e["event"] == "save" for e in events(run_dir)), 180, "a first checkpoint")
    rec = record(run_dir)
    assert set(rec["processes"]) == {"supervisor", "launcher", "rank 0", "rank 1"}
    os.kill(rec["processes"]["supervisor"]["pid"], signal.SIGKILL)
    killed_at = time.monotonic()
    wait_for(lambda: not run_processes(rec), 10, "every process of the run to end with its supervisor")
    assert time.monotonic() - killed_at < 10

    status = cli("status", run_dir.name, runs_dir=runs_dir)
    assert status.returncode == 0 and "lost" in status.stdout and "supervisor" in status.stdout
    rec = record(run_dir)
    assert rec["status"] == "lost" and rec["ended"] is not None and "supervisor" in rec["error"]
    ended = rec["ended"]
    time.sleep(1.1)
    again = json.loads(cli("status", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    assert again["ended"] == ended  # a lost run's duration stops growing

    stop = cli("stop", run_dir.name, runs_dir=runs_dir)
    assert stop.returncode != 0 and "already ended (lost)" in stop.stderr and "Traceback" not in stop.stderr
    follow = cli("logs", run_dir.name, "--follow", runs_dir=runs_dir, timeout=30)  # returns: nothing is alive
    assert "Traceback" not in follow.stderr

    resumed = cli("resume", run_dir.name, "--detach", "--set", "training.max_steps=100000", runs_dir=runs_dir)
    assert resumed.returncode == 0, resumed.stderr
    child = runs_dir / resumed.stdout.strip()
    wait_for(lambda: losses(child), 180, "the resumed run's first step")
    assert cli("stop", child.name, "--now", runs_dir=runs_dir).returncode == 0
    assert wait_until_ended(child, 30)["status"] == "killed"


def test_a_killed_launcher_is_named_as_the_cause_not_rank_0(runs_dir):
    run_dir = start_long(runs_dir, *TWO_RANKS, "--set", "training.save_strategy=no")
    wait_for(lambda: max(losses(run_dir), default=0) >= 2, 180, "two logged steps")
    rec = record(run_dir)
    os.kill(rec["processes"]["launcher"]["pid"], signal.SIGKILL)
    rec = wait_until_ended(run_dir, 30)
    assert rec["status"] == "failed" and rec["failed_rank"] is None
    assert "accelerate launch" in rec["error"] and "SIGKILL" in rec["error"], rec["error"]
    wait_for(lambda: not run_processes(rec), 10, "the orphaned ranks to be ended")


def test_a_resume_into_a_shared_folder_never_deletes_a_checkpoint_it_did_not_write(runs_dir, tmp_path):
    """The parent keeps at most 2 checkpoints and its best; the child shares its output folder
    (run.output_dir set), keeps at most 1, and ends: transformers' rotation would delete the
    parent's checkpoints, its best among them (transformers #15089, #35070)."""
    shared = tmp_path / "shared-output"
    keys = ["--set", f"run.output_dir={shared}", "--set", "training.save_steps=3", "--set", "training.eval_strategy=steps",
            "--set", "training.eval_steps=3", "--set", "training.load_best_model_at_end=true",
            "--set", "training.metric_for_best_model=eval_loss", "--set", "training.logging_steps=1"]
    run_dir = start_long(runs_dir, *keys, "--set", "training.save_total_limit=2")
    wait_for(lambda: len([e for e in events(run_dir) if e["event"] == "save"]) >= 3, 240, "three checkpoints")
    assert cli("stop", run_dir.name, runs_dir=runs_dir).returncode == 0
    parent = wait_until_ended(run_dir, 120)
    assert parent["status"] == "stopped"
    before = json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    assert before and all(c["complete"] and c["run"] == run_dir.name for c in before)
    stop_step = before[-1]["step"]
    assert parent["error"] == (f"stopped on request (`tuitrain stop`, or the app) after saving checkpoint-{stop_step}; "
                               f"`tuitrain resume {run_dir.name}` continues from it"), parent["error"]

    child_run = cli("resume", run_dir.name, "--set", f"training.max_steps={stop_step + 7}",
                    "--set", "training.save_total_limit=1", runs_dir=runs_dir)
    assert child_run.returncode == 0, child_run.stdout + child_run.stderr
    child = next(p for p in runs_dir.iterdir() if p.name != run_dir.name)
    assert record(child)["output_dir"] == str(shared)

    after = json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    assert [(c["step"], c["size_bytes"]) for c in after] == [(c["step"], c["size_bytes"]) for c in before]
    assert all(c["complete"] for c in after)
    theirs = json.loads(cli("checkpoints", child.name, "--json", runs_dir=runs_dir).stdout)
    assert theirs and all(c["run"] == child.name and c["step"] > stop_step for c in theirs)
    assert len(theirs) <= 2  # its limit of 1, plus its best when the best is not its newest


def fabricate_lost_run(runs_dir: Path, supervisor_pid: int, rank_pid: int, rank_started: float,
                       **extra: Any) -> Path:
    """A one-rank demo run recorded as running, written by hand: its supervisor (`supervisor_pid`,
    recorded as started at 1.0) is gone, and its rank 0 is `rank_pid` started at `rank_started`.
    `extra`: more keys for run.json (such as the `pids` table the supervisor also keeps)."""
    run_dir = runs_dir / "20260101-000000-demo"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({
        "id": run_dir.name, "profile": "demo", "status": "running", "created": time.time(), "started": time.time(),
        "ended": None, "num_processes": 1, "output_dir": str(run_dir / "output"),
        **extra,
        "processes": {"supervisor": {"pid": supervisor_pid, "started": 1.0},
                      "rank 0": {"pid": rank_pid, "started": rank_started}},
    }))
    return run_dir


def test_a_recorded_pid_now_owned_by_a_stranger_is_never_signalled(runs_dir):
    """A run whose supervisor is gone, whose recorded rank pid was reused by an unrelated process
    (same pid, another start time): `stop --now` must not touch the stranger, and records the end."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        started = psutil.Process(stranger.pid).create_time()
        run_dir = fabricate_lost_run(runs_dir, gone.pid, stranger.pid, started - 1000,
                                     pids={"supervisor": gone.pid, "ranks": {"0": stranger.pid}})
        listed = cli("runs", "--json", runs_dir=runs_dir)
        assert json.loads(listed.stdout)[0]["status"] == "lost"
        stop = cli("stop", run_dir.name, "--now", runs_dir=runs_dir)
        assert stop.returncode != 0 and "already ended (lost)" in stop.stderr
        assert stranger.poll() is None  # untouched
        assert record(run_dir)["status"] == "lost"
    finally:
        stranger.kill()
        stranger.wait()


def test_stop_now_ends_the_processes_of_a_run_whose_supervisor_is_gone(runs_dir):
    """The supervisor died and one of the run's processes is still there (a rank stuck in a
    collective, say): `stop` says what to do, `stop --now` ends it from the record."""
    straggler = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        run_dir = fabricate_lost_run(runs_dir, gone.pid, straggler.pid, psutil.Process(straggler.pid).create_time())
        stop = cli("stop", run_dir.name, runs_dir=runs_dir)
        assert stop.returncode != 0 and "lost its supervisor" in stop.stderr and "stop --now" in stop.stderr
        assert straggler.poll() is None
        resume = cli("resume", run_dir.name, runs_dir=runs_dir)
        assert resume.returncode != 0 and "stop --now" in resume.stderr and "Traceback" not in resume.stderr
        now = cli("stop", run_dir.name, "--now", runs_dir=runs_dir)
        assert now.returncode == 0, now.stderr
        assert straggler.wait(timeout=10) is not None
        rec = record(run_dir)
        assert rec["status"] == "killed" and "supervisor was lost" in rec["error"]
    finally:
        straggler.kill()
        straggler.wait()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 800 KiB tmpfs: room for the demo's run directory and one checkpoint, not two."""
    with small_tmpfs(tmp_path / "small-disk", "800k") as mount:
        yield mount


def test_a_full_disk_during_a_save_fails_the_run_with_its_cause_and_keeps_the_checkpoint_before(small_disk):
    runs = small_disk / "runs"
    result = cli("run", "demo", "--set", "training.max_steps=12", "--set", "training.save_steps=4",
                 "--set", "training.eval_strategy=no", runs_dir=runs, cwd=small_disk.parent, timeout=240)
    assert result.returncode == 1, result.stdout + result.stderr
    (run_dir,) = list(runs.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "failed" and rec["failed_rank"] == 0
    assert "is full" in rec["error"], rec["error"]
    assert not run_processes(rec)
    listing = {c["step"]: c for c in json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs).stdout)}
    assert listing[4]["complete"] and not listing[8]["complete"]


def test_a_full_output_disk_is_named_as_the_cause_not_torchs_position_in_its_file(tmp_path: Path, runs_dir: Path):
    """The run directory on a roomy disk (so the rank's error is written), its output folder on a full one: torch's
    zip writer then says only "unexpected pos 90432 vs 90320"; the cause must say the disk is full, and which."""
    with small_tmpfs(tmp_path / "small-output", "600k") as mount:
        result = cli("run", "demo", "--set", "training.max_steps=12", "--set", "training.save_steps=4",
                     "--set", "training.eval_strategy=no", "--set", f"run.output_dir={mount / 'out'}",
                     runs_dir=runs_dir, timeout=240)
        assert result.returncode == 1, result.stdout + result.stderr
        rec = record(next(runs_dir.iterdir()))
        assert rec["status"] == "failed" and rec["failed_rank"] == 0
        assert "was not saved: the disk holding " + str(mount / "out") in rec["error"], rec["error"]
        assert "is full" in rec["error"] and "resume" in rec["error"], rec["error"]
        assert rec["error"] in result.stdout + result.stderr  # the foreground run's last word says it too
        listing = json.loads(cli("checkpoints", rec["id"], "--json", runs_dir=runs_dir).stdout)
        assert listing[0]["step"] == 4 and listing[0]["complete"]
        assert all(not c["complete"] for c in listing[1:])
