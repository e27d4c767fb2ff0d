"""The engine's tasks and extras, each through a real (short) run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FAST, cli, events, losses, mrpc_minilm_sections, only_run, record

pytestmark = pytest.mark.slow



def test_causal_lm_from_scratch_reports_perplexity(tmp_path, runs_dir):
    profile = tmp_path / "clm.toml"
    profile.write_text(
        """
[run]
name = "tiny-clm"
[model]
task = "causal-lm"
[model.config]
model_type = "gpt2"
n_embd = 32
n_layer = 2
n_head = 2
n_positions = 64
vocab_size = 128
[model.train_tokenizer]
vocab_size = 128
[data]
generate = "sentiment-words"
num_train = 400
num_validation = 50
block_size = 32
[training]
max_steps = 6
per_device_train_batch_size = 8
logging_steps = 2
eval_strategy = "steps"
eval_steps = 3
save_steps = 3
learning_rate = 1e-3
[metrics]
names = ["perplexity"]
[hardware]
accelerator = "cpu"
"""
    )
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    evaluation = [e for e in events(run_dir) if e["event"] == "evaluate"]
    assert len(evaluation) == 2
    assert evaluation[-1]["eval_perplexity"] == pytest.approx(2.718281828 ** evaluation[-1]["eval_loss"], rel=1e-6)
    assert (Path(record(run_dir)["output_dir"]) / "tokenizer" / "tokenizer.json").is_file()


def test_sentence_pairs_with_a_pretrained_model_from_csv(tmp_path, runs_dir):
    profile = tmp_path / "mrpc.toml"
    profile.write_text(
        f"""
[run]
name = "mrpc-minilm"
{mrpc_minilm_sections(64)}[training]
max_steps = 4
per_device_train_batch_size = 8
per_device_eval_batch_size = 64
eval_strategy = "steps"
eval_steps = 4
save_strategy = "no"
logging_steps = 1
evaluation_strategy = "steps"
[metrics]
names = ["accuracy", "f1"]
[hardware]
accelerator = "cpu"
"""
    )
    result = cli("run", str(profile), runs_dir=runs_dir, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "evaluation_strategy" in result.stderr and "eval_strategy" in result.stderr  # the migration note
    run_dir = only_run(runs_dir)
    evaluation = [e for e in events(run_dir) if e["event"] == "evaluate"][-1]
    assert 0.0 <= evaluation["eval_accuracy"] <= 1.0 and "eval_f1" in evaluation
    assert evaluation["eval_samples_per_second"] > 0
    assert json.loads((run_dir / "training_args.json").read_text())["eval_strategy"] == "steps"


def test_class_weights_early_stopping_and_passthrough_keys(finished_run, runs_dir):
    result = cli(
        "run", "demo", *FAST,
        "--set", "training.max_steps=20",
        "--set", "training.eval_steps=2",
        "--set", "training.save_steps=2",
        "--set", "model.class_weights=[1.0, 3.0]",
        "--set", "metrics.early_stopping_patience=1",
        "--set", "metrics.early_stopping_threshold=10.0",
        "--set", "training.neftune_noise_alpha=5.0",
        runs_dir=runs_dir,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    # The first evaluation (step 2) sets the best; the next cannot beat it by 10: stop at step 4 of 20.
    assert events(run_dir)[-1]["event"] == "train_end" and events(run_dir)[-1]["step"] == 4
    # Same seed, same data, same first batch: only the weighted loss makes step 1 differ.
    assert losses(run_dir)[1] != pytest.approx(losses(finished_run)[1], abs=1e-4)
    args = json.loads((run_dir / "training_args.json").read_text())
    assert args["neftune_noise_alpha"] == 5.0 and args["load_best_model_at_end"] is True
