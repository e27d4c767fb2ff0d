"""Damaged checkpoints are listed as such, with the reason, and never resumed from.

Each test damages a copy of a real run's checkpoints (the shared `finished_run`, 1 rank, saves at
steps 4 and 8) the way a disk, a kill or a hand does, then asks what `checkpoints` and `resume`
make of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import cli, record
from tuitrain.rundir.checkpoints import MARKER, inspect_checkpoint, run_checkpoints
from tuitrain.runs.start.from_profile import ResumeError, choose_checkpoint

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


def newest(run_dir: Path) -> Path:
    return run_dir / "output" / "checkpoint-8"


def listing(run_dir: Path) -> dict[int, dict]:
    result = cli("checkpoints", run_dir.name, "--json", runs_dir=run_dir.parent)
    assert result.returncode == 0, result.stderr
    return {c["step"]: c for c in json.loads(result.stdout)}


def test_a_real_checkpoint_is_sealed_with_every_file_and_its_size(run_copy):
    marker = json.loads((newest(run_copy) / MARKER).read_text())
    assert marker["run"] == run_copy.name and marker["step"] == 8 and marker["world_size"] == 1
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json"):
        assert marker["files"][name] == (newest(run_copy) / name).stat().st_size
    checkpoint = inspect_checkpoint(newest(run_copy))
    assert checkpoint.complete and checkpoint.verified and checkpoint.missing == ()


@pytest.mark.parametrize("damage, reason", [
    (lambda c: (c / "model.safetensors").write_bytes((c / "model.safetensors").read_bytes()[:5000]), "model.safetensors"),
    (lambda c: (c / "model.safetensors").write_bytes(b""), "model.safetensors"),
    (lambda c: (c / "scheduler.pt").unlink(), "scheduler.pt"),
    (lambda c: (c / "optimizer.pt").write_bytes((c / "optimizer.pt").read_bytes()[:-100]), "optimizer.pt"),
    (lambda c: (c / "rng_state.pth").unlink(), "rng_state.pth"),
], ids=["truncated-weights", "zero-byte-weights", "no-scheduler", "truncated-optimizer", "no-rng-state"])
def test_a_damaged_checkpoint_says_why_and_latest_skips_it(run_copy, damage, reason):
    damage(newest(run_copy))
    found = listing(run_copy)
    assert found[4]["complete"] is True
    assert found[8]["complete"] is False and any(reason in m for m in found[8]["missing"]), found[8]["missing"]
    text = cli("checkpoints", run_copy.name, runs_dir=run_copy.parent).stdout
    assert reason in text  # the table says why, not just "incomplete"
    rec = record(run_copy)
    assert choose_checkpoint(rec).step == 4  # `resume latest` never picks the damaged one
    with pytest.raises(ResumeError, match=reason.replace(".", r"\.")):
        choose_checkpoint(rec, "checkpoint-8")


def test_truncation_is_caught_without_the_marker_too(run_copy):
    """Another tool's checkpoint (or one whose marker was lost): the files' own headers decide."""
    (newest(run_copy) / MARKER).unlink()
    assert inspect_checkpoint(newest(run_copy)).complete  # whole files: complete, just not verified
    assert not inspect_checkpoint(newest(run_copy)).verified
    weights = newest(run_copy) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1])
    damaged = inspect_checkpoint(newest(run_copy))
    assert not damaged.complete and "model.safetensors is truncated" in damaged.missing[0]


def test_a_save_cut_short_before_its_marker_is_not_complete(run_copy):
    """The Trainer writes trainer_state.json late in a save; a kill before it leaves a folder
    that looks like a checkpoint by name."""
    (newest(run_copy) / "trainer_state.json").unlink()
    (newest(run_copy) / MARKER).unlink()
    checkpoint = inspect_checkpoint(newest(run_copy))
    assert not checkpoint.complete and "trainer_state.json" in checkpoint.missing[0]


def test_checkpoints_written_by_another_run_are_not_listed_under_this_one(run_copy):
    marker_file = newest(run_copy) / MARKER
    marker = json.loads(marker_file.read_text())
    marker["run"] = "20990101-000000-other"
    marker_file.write_text(json.dumps(marker))
    assert [c.step for c in run_checkpoints(record(run_copy))] == [4]


def test_a_save_cut_short_on_one_rank_of_two_is_judged_against_the_runs_world(run_copy):
    """A supervisor killed mid-save on a 2-rank run leaves rank 0's rng_state_0.pth and no
    marker: counting rng files would call it a whole 1-process checkpoint (CI caught a resume
    refused for that reason); the run's own listing knows it had 2 ranks."""
    rec = record(run_copy)
    rec["num_processes"] = 2
    (run_copy / "run.json").write_text(json.dumps(rec))
    (newest(run_copy) / MARKER).unlink()
    (newest(run_copy) / "rng_state.pth").rename(newest(run_copy) / "rng_state_0.pth")
    found = {c.step: c for c in run_checkpoints(rec)}
    assert not found[8].complete and "rng_state_1.pth" in found[8].why and found[8].world_size == 2
    assert choose_checkpoint(rec).step == 4
    assert inspect_checkpoint(newest(run_copy)).world_size == 1  # a bare folder is still judged by its contents
