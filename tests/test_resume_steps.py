"""A resume trains with the profile's logging, eval and save steps, `--set` ones included: the
Trainer would take them from the checkpoint's trainer_state.json and say so only deep in the rank log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import cli, events, record

pytestmark = pytest.mark.slow  # uses the shared finished run


def test_resume_saves_and_evaluates_at_the_steps_it_was_given(finished_run: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    parent = runs / finished_run.name
    shutil.copytree(finished_run, parent)
    rec = record(parent)
    rec["output_dir"] = str(parent / "output")
    (parent / "run.json").write_text(json.dumps(rec))

    result = cli("resume", parent.name, "--checkpoint", "checkpoint-4", "--set", "training.max_steps=9",
                 "--set", "training.save_steps=3", "--set", "training.eval_steps=3", runs_dir=runs)
    assert result.returncode == 0, result.stdout + result.stderr
    (child,) = [p for p in runs.iterdir() if p != parent]
    assert record(child)["status"] == "finished"
    saved = [e["step"] for e in events(child) if e["event"] == "save"]
    evaluated = [e["step"] for e in events(child) if e["event"] == "evaluate"]
    assert saved == [6, 9] and evaluated == [6, 9], (saved, evaluated)  # the checkpoint's 4 would give 8
    log = (child / "logs" / "rank-0.log").read_text()
    assert "[tuitrain] resume: the profile's steps, not the checkpoint's: eval_steps 4 -> 3, save_steps 4 -> 3" in log
