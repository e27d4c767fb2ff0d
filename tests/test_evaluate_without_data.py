"""`e` (evaluate now) on a run without validation data: the Trainer would raise "evaluation requires an
eval_dataset" at the next step end and the run would die with it. The rank says why nothing was evaluated
and trains on."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import tomli_w

from conftest import DEMO_PROFILE, MRPC, cli, losses, record, wait_for, wait_until_ended
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.control import request

pytestmark = pytest.mark.slow


def profile_without_validation(folder: Path) -> Path:
    data = tomllib.loads(tomli_w.dumps(DEMO_PROFILE))
    data["data"] = {"train_file": str(MRPC / "train.csv"), "text_column": "sentence1", "label_column": "label",
                    "max_length": 24}
    data["training"].update(max_steps=100000, logging_steps=1, eval_strategy="no", save_strategy="no")
    path = folder / "no-validation.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def test_evaluate_now_without_validation_data_is_refused_and_the_run_goes_on(runs_dir):
    profile = profile_without_validation(runs_dir.parent)
    started = cli("run", str(profile), "--detach", runs_dir=runs_dir)
    assert started.returncode == 0, started.stdout + started.stderr
    run_dir = runs_dir / started.stdout.strip()
    try:
        wait_for(lambda: losses(run_dir), 300, "a logged step")
        request(RunPaths(run_dir), "evaluate")
        log = run_dir / "logs" / "rank-0.log"
        wait_for(lambda: "evaluate-now asked, but this run has no validation data" in log.read_text(errors="replace"),
                 300, "the rank's word on the evaluate request")
        after = max(losses(run_dir))
        wait_for(lambda: max(losses(run_dir)) >= after + 2, 300, "training to go on")
        assert record(run_dir)["status"] == "running"
        assert not re.search(r"requires an eval_dataset", log.read_text(errors="replace"))
    finally:
        cli("stop", run_dir.name, runs_dir=runs_dir)
        assert wait_until_ended(run_dir, 300)["status"] == "stopped"
