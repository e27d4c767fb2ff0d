"""Sequence to sequence: a tiny from-config T5 under Seq2SeqTrainer, generating at evaluation
(predict_with_generate), scored by the shipped ROUGE (rouge_score) and BLEU (sacrebleu) modules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli, events, only_run, record
from tuitrain.profile import validate_profile

pytest.importorskip("rouge_score")
pytest.importorskip("sacrebleu")

REVERSE = """
[run]
name = "reverse"
[model]
task = "seq2seq"
[model.config]
model_type = "t5"
d_model = 32
d_ff = 64
d_kv = 16
num_layers = 2
num_heads = 2
[model.train_tokenizer]
vocab_size = 128
[data]
generate = "reverse-words"
num_train = 400
num_validation = 24
max_length = 16
max_target_length = 12
[training]
max_steps = 40
per_device_train_batch_size = 16
per_device_eval_batch_size = 8
logging_steps = 10
eval_strategy = "steps"
eval_steps = 40
save_steps = 40
learning_rate = 1e-2
[metrics]
names = ["rouge", "bleu", "perplexity"]
[hardware]
accelerator = "cpu"
"""


def test_rouge_and_bleu_modules() -> None:
    from tuitrain.engine.metrics import METRICS

    rouge = METRICS["rouge"].load("rouge")
    bleu = METRICS["bleu"].load("bleu")
    same = ["the cat sat on the mat today", "a dog ran in the park"]
    assert rouge.compute(predictions=same, references=same) == pytest.approx({"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0})
    assert bleu.compute(predictions=same, references=same)["bleu"] == pytest.approx(100.0)
    # 2 of 3 words, 1 of 2 bigrams, a common subsequence of 2
    partial = rouge.compute(predictions=["the cat ran"], references=["the cat sat"])
    assert partial == pytest.approx({"rouge1": 2 / 3, "rouge2": 1 / 2, "rougeL": 2 / 3})
    assert bleu.compute(predictions=["zebra quantum"], references=["the cat sat on the mat"])["bleu"] == pytest.approx(0.0)


def test_seq2seq_training_keys_belong_to_the_task() -> None:
    def problems(task: str) -> list[str]:
        data = {"model": {"task": task, "name_or_path": "x"}, "data": {"dataset": "x"},
                "training": {"predict_with_generate": True, "generation_num_beams": 2}}
        return [str(p) for p in validate_profile(data, "p.toml", None, model_types=None) if p.severity == "error"]

    assert problems("seq2seq") == []
    found = problems("sequence-classification")
    assert len(found) == 2 and all('for model.task = "seq2seq" only' in line for line in found), found


@pytest.mark.slow
def test_t5_from_scratch_generates_at_evaluation_and_is_scored_on_what_it_generated(tmp_path, runs_dir):
    profile = tmp_path / "reverse.toml"
    profile.write_text(REVERSE)
    plan = cli("plan", str(profile), runs_dir=runs_dir)
    assert "training.predict_with_generate = True (not set in the profile)" in plan.stdout + plan.stderr
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    args = json.loads((run_dir / "training_args.json").read_text())
    assert args["predict_with_generate"] is True and args["generation_max_length"] == 12
    evaluation = [e for e in events(run_dir) if e["event"] == "evaluate"][-1]
    assert {"eval_rouge1", "eval_rouge2", "eval_rougeL", "eval_bleu", "eval_perplexity"} <= set(evaluation)
    assert 0 <= evaluation["eval_rougeL"] <= 1 and 0 <= evaluation["eval_bleu"] <= 100

    # The same scores again from the checkpoint's own generations: the metrics read generated text,
    # decoded without padding or -100, against the targets.
    import torch
    from rouge_score import rouge_scorer
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from tuitrain.profile.generated import reverse_words

    checkpoint = Path(record(run_dir)["output_dir"]) / "checkpoint-40"
    model = AutoModelForSeq2SeqLM.from_pretrained(str(checkpoint)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    rows = reverse_words(24, 42 + 1)  # the validation split: seed + 1
    generated: list[str] = []
    for start in range(0, 24, 8):
        batch = tokenizer(rows["source"][start:start + 8], return_tensors="pt", padding=True, truncation=True, max_length=16)
        with torch.no_grad():
            out = model.generate(**batch, max_length=12, num_beams=1, do_sample=False)
        generated += [t.strip() for t in tokenizer.batch_decode(out, skip_special_tokens=True)]
    assert any(generated)
    scorer = rouge_scorer.RougeScorer(["rouge1"])
    rouge1 = sum(scorer.score(ref, gen)["rouge1"].fmeasure for ref, gen in zip(rows["target"], generated, strict=True)) / 24
    assert evaluation["eval_rouge1"] == pytest.approx(rouge1, abs=1e-6)
