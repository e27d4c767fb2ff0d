"""tuitrain's engine trains what the plain `transformers.Trainer` script trains (issue 16): the real
pretrained MiniLM on real MRPC pairs, through `tuitrain run PROFILE` and through the course's plain
script (tests/fixtures/plain_trainer_mrpc.py) with the same arguments, collator and seed, logs the
same loss at every step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MRPC, cli, losses, minilm_dir, mrpc_minilm_sections, only_run

PLAIN = Path(__file__).resolve().parent / "fixtures" / "plain_trainer_mrpc.py"
STEPS, BATCH = 5, 8


def test_a_profile_run_logs_the_losses_of_the_plain_trainer_script(tmp_path, runs_dir):
    profile = tmp_path / "mrpc.toml"
    profile.write_text(f"""
[run]
name = "mrpc-equivalence"
seed = 42
{mrpc_minilm_sections(64)}[training]
max_steps = {STEPS}
per_device_train_batch_size = {BATCH}
learning_rate = 5e-5
logging_steps = 1
eval_strategy = "no"
save_strategy = "no"
[metrics]
names = ["accuracy"]
[hardware]
accelerator = "cpu"
""")
    # the plain script and the profile run are two processes that share nothing: they start together, so that
    # one's imports and model load overlap the other's
    out, said = tmp_path / "plain.json", tmp_path / "plain.stderr"
    with said.open("w") as stderr:
        plain = subprocess.Popen([sys.executable, str(PLAIN), "--model", str(minilm_dir()), "--data", str(MRPC), "--out",
                                  str(out), "--output-dir", str(tmp_path / "plain-output"), "--steps", str(STEPS),
                                  "--batch", str(BATCH), "--logging-steps", "1"],
                                 stdout=subprocess.DEVNULL, stderr=stderr, cwd=tmp_path)
    try:
        result = cli("run", str(profile), runs_dir=runs_dir, timeout=600)
        plain.wait(timeout=600)
    finally:
        plain.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    ours = losses(only_run(runs_dir))
    assert plain.returncode == 0, said.read_text()[-3000:]
    theirs = {int(step): loss for step, loss in json.loads(out.read_text())["losses"].items()}

    assert sorted(ours) == list(range(1, STEPS + 1)) == sorted(theirs)
    assert ours == pytest.approx(theirs, abs=1e-4)
