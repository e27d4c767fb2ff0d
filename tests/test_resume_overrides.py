"""An override on resume of a setting the checkpoint restores (`runs.start.resume_rule`): trained with, from the
checkpoint's step, and said in one line; or refused in one line that says why and what to do. Never accepted,
recorded and ignored (the Trainer restores the optimizer's and the scheduler's state over the profile's values)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from conftest import check_clean, cli, events, record
from tuitrain.rundir.checkpoints import inspect_checkpoint
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.start.from_profile import ResumeError, check_resume, resume_inputs
from tuitrain.tui.screens.resume import override_problems

pytestmark = pytest.mark.slow  # uses the shared finished run


def parent_copy(finished_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(runs root, parent): the shared finished demo run (8 steps, checkpoints 4 and 8, learning_rate 3e-3,
    weight_decay 0.01, a linear schedule without warmup), copied so a resume may write beside it."""
    runs = tmp_path / "runs"
    runs.mkdir()
    parent = runs / finished_run.name
    shutil.copytree(finished_run, parent)
    rec = record(parent)
    rec["output_dir"] = str(parent / "output")
    (parent / "run.json").write_text(json.dumps(rec))
    return runs, parent


def learning_rates(run_dir: Path) -> dict[int, float]:
    return {e["step"]: e["learning_rate"] for e in events(run_dir) if e["event"] == "log" and "learning_rate" in e}


def test_a_learning_rate_override_on_resume_is_trained_with_from_the_checkpoints_step(finished_run: Path,
                                                                                      tmp_path: Path) -> None:
    runs, parent = parent_copy(finished_run, tmp_path)
    result = cli("resume", parent.name, "--checkpoint", "checkpoint-4", "--set", "training.learning_rate=1e-3",
                 "--set", "training.weight_decay=0.1", runs_dir=runs)
    assert result.returncode == 0, result.stdout + result.stderr
    said = ("from step 4, the profile's optimizer settings, not checkpoint-4's: learning_rate 0.003 -> 0.001, "
            "weight_decay 0.01 -> 0.1 (the schedule goes on from there with the new base rate)")
    assert said in result.stderr, result.stderr
    (child,) = [p for p in runs.iterdir() if p != parent]
    assert record(child)["status"] == "finished"
    assert json.loads((child / "training_args.json").read_text())["learning_rate"] == 0.001

    before, after = learning_rates(parent), learning_rates(child)
    assert sorted(after) == [5, 6, 7, 8]
    for step, rate in after.items():  # the same linear schedule, a third of the base: 1e-3 where 3e-3 was
        assert math.isclose(rate, before[step] / 3, rel_tol=1e-6, abs_tol=1e-12), (step, rate, before[step])
    log = (child / "logs" / "rank-0.log").read_text()
    assert ("[tuitrain] resume: the profile's optimizer settings, not the checkpoint's: learning_rate 0.003 -> 0.001, "
            "weight_decay 0.01 -> 0.1 (from step 4 on)") in log


@pytest.mark.parametrize(("override", "needles"), [
    ("training.per_device_train_batch_size=16",
     ["training.per_device_train_batch_size = 16: checkpoint-4 was trained with 32", "skipping the batches",
      "--set training.per_device_train_batch_size=32"]),
    ("training.gradient_accumulation_steps=2", ["--set training.gradient_accumulation_steps=1"]),
    ("run.seed=7", ["run.seed = 7: checkpoint-4 was trained with 42", "--set run.seed=42"]),
    ("training.optim=sgd", ["training.optim = 'sgd': checkpoint-4's optimizer state is", "--set training.optim="]),
    ("training.lr_scheduler_type=reduce_lr_on_plateau", ["scheduler's state", "--set training.lr_scheduler_type=linear"]),
])
def test_an_override_a_resume_could_not_honour_is_refused_in_one_line(finished_run: Path, tmp_path: Path,
                                                                      override: str, needles: list[str]) -> None:
    runs, parent = parent_copy(finished_run, tmp_path)
    result = cli("resume", parent.name, "--checkpoint", "checkpoint-4", "--set", override, runs_dir=runs)
    text = check_clean(result, *needles)
    assert len([line for line in text.splitlines() if "checkpoint-4" in line]) == 1, text
    assert [p.name for p in runs.iterdir()] == [parent.name]  # nothing started

    # the app's resume dialog and Slurm's resume (check_resume) ask the same rule, and say the same line
    checkpoint = inspect_checkpoint(parent / "output" / "checkpoint-4")
    problems = override_problems(RunPaths(parent).profile, [override], checkpoint)
    assert len(problems) == 1 and all(needle in problems[0] for needle in needles), problems
    _chosen, profile = resume_inputs(RunPaths(parent), record(parent), "checkpoint-4", [override])
    with pytest.raises(ResumeError) as refused:
        check_resume(RunPaths(parent), profile, checkpoint, 1, 1)
    assert str(refused.value) == problems[0]


def test_a_schedule_override_is_the_profiles_already_and_is_not_refused(finished_run: Path, tmp_path: Path) -> None:
    """The Trainer keeps the schedule function it builds from the profile and restores only its position: a new
    shape (another kind, warmup, more steps) needs no word and no refusal."""
    _runs, parent = parent_copy(finished_run, tmp_path)
    checkpoint = inspect_checkpoint(parent / "output" / "checkpoint-4")
    overrides = ["training.lr_scheduler_type=cosine", "training.warmup_steps=2", "training.max_steps=12"]
    assert override_problems(RunPaths(parent).profile, overrides, checkpoint) == []
