"""One live run per output folder (a user's day: two runs started into one `run.output_dir` at once interleaved
their checkpoint-N folders, and the second's lora-base/ replaced the first's, before either had saved)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import check_clean, cli, losses, record, wait_for, wait_until_ended
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record
from tuitrain.runs.start.output_claim import claim_output_dir, claim_paths, holder_problem

LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_steps=100000"]


def fake_run(root: Path, name: str, **fields) -> RunPaths:
    """A run directory with a record (no process: a record without a supervisor entry reads as alive)."""
    paths = RunPaths(root / name)
    paths.root.mkdir(parents=True)
    write_record(paths, new_record(name, "demo", **fields))
    return paths


def test_of_two_claims_on_one_folder_the_second_is_refused_until_the_first_ends(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert claim_paths(out)[0] == tmp_path / ".out.tuitrain-run"  # beside the folder it guards, not in it
    first, second = fake_run(tmp_path, "run-a", status="running"), fake_run(tmp_path, "run-b")
    assert claim_output_dir(out, first) is None
    assert claim_output_dir(out, first) is None  # claiming again for itself is fine
    refused = claim_output_dir(out, second)
    assert refused is not None and refused.startswith(f"{out} is the output folder of run run-a, which is running")
    assert "--set run.output_dir=" in refused and "\n" not in refused
    assert json.loads(claim_paths(out)[0].read_text())["run"] == "run-a"

    write_record(first, {**json.loads(first.record.read_text()), "status": "stopped"})
    assert claim_output_dir(out, second) is None  # an ended run's claim is taken over
    assert json.loads(claim_paths(out)[0].read_text())["run"] == "run-b"


def test_a_lost_holder_a_removed_run_and_a_damaged_claim_hold_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lost = fake_run(tmp_path, "lost", status="running",
                    processes={"supervisor": {"pid": int(dead.stdout), "started": 1.0}})
    me = fake_run(tmp_path, "me")
    assert claim_output_dir(out, lost) is None
    assert holder_problem(out, me) is None  # its supervisor is gone: the run is lost

    starting = RunPaths(tmp_path / "starting")
    starting.root.mkdir()  # a run directory whose record is not written yet: a run being started
    claim_paths(out)[0].write_text(json.dumps({"run_dir": str(starting.root)}))
    assert "which is starting" in (holder_problem(out, me) or "")
    starting.root.rmdir()  # its start failed and removed it
    assert holder_problem(out, me) is None

    claim_paths(out)[0].write_text("{not json")
    assert holder_problem(out, me) is None and claim_output_dir(out, me) is None


@pytest.mark.slow
def test_a_second_run_into_a_live_runs_folder_is_refused_before_any_checkpoint(runs_dir: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    into = ["--set", f'run.output_dir="{shared}"']
    started = cli("run", "demo", "--detach", *LONG, *into, runs_dir=runs_dir)
    assert started.returncode == 0, started.stderr
    first = runs_dir / started.stdout.strip()
    wait_for(lambda: losses(first), 120, "a first logged step")
    assert not list(shared.glob("checkpoint-*"))  # nothing saved yet: the checkpoint guard alone would let it in

    check_clean(cli("run", "demo", "--detach", *LONG, *into, runs_dir=runs_dir),
                f"{shared} is the output folder of run {first.name}, which is running")
    assert [p.name for p in runs_dir.iterdir()] == [first.name]  # the refused run left no directory

    assert cli("stop", first.name, "--now", runs_dir=runs_dir).returncode == 0  # ended, nothing saved
    assert wait_until_ended(first, 60)["status"] == "killed"
    again = cli("run", "demo", "--detach", *LONG, *into, runs_dir=runs_dir)
    assert again.returncode == 0, again.stderr
    second = runs_dir / again.stdout.strip()
    assert json.loads(claim_paths(shared)[0].read_text())["run"] == second.name
    assert record(second)["output_dir"] == str(shared)

    shutil.rmtree(shared)  # by hand, or a cleanup job, while the run goes on
    wait_for(lambda: record(second).get("output_removed"), 60, "the supervisor to find its output folder removed")
    assert shared.is_dir(), "the folder is made again, with its claim"
    check_clean(cli("run", "demo", "--detach", *LONG, *into, runs_dir=runs_dir),
                f"{shared} is the output folder of run {second.name}, which is running")
    said = cli("status", second.name, runs_dir=runs_dir).stdout
    assert "while the run went on (made again): the checkpoints written before then are gone" in said, said
    assert cli("stop", second.name, "--now", runs_dir=runs_dir).returncode == 0
    wait_until_ended(second, 60)
