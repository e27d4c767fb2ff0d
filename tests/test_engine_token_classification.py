"""Token classification: word tags aligned to the first sub-token, entity precision/recall/F1
through the shipped seqeval module, on the generated word-tags set and on JSON Lines / CSV files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli, events, only_run, record
from tuitrain.engine.errors import DataError
from tuitrain.profile import validate_profile

pytest.importorskip("seqeval")

FIXTURES = Path(__file__).parent / "fixtures" / "tags"
DATA = {"text_column": "words", "label_column": "ner", "max_length": 32}

TAGGER = """
[run]
name = "tags"
[model]
task = "token-classification"
[model.config]
model_type = "bert"
hidden_size = 32
num_hidden_layers = 2
num_attention_heads = 2
intermediate_size = 64
max_position_embeddings = 64
[model.train_tokenizer]
vocab_size = 200
kind = "wordpiece"
[data]
max_length = 48
{data}
[training]
max_steps = 30
per_device_train_batch_size = 16
logging_steps = 10
eval_strategy = "steps"
eval_steps = 30
save_steps = 30
learning_rate = 5e-3
[hardware]
accelerator = "cpu"
"""


def wordpiece(texts: list[str], vocab_size: int = 45):
    from tuitrain.engine.tokenizer import train_tokenizer

    return train_tokenizer(texts, {"vocab_size": vocab_size, "kind": "wordpiece"}, "token-classification")


def test_each_word_tag_lands_on_its_first_sub_token_only() -> None:
    import datasets

    from tuitrain.engine.data import tokenize_for_token_classification

    rows = {"words": [["snow", "leopard", "seen", "in", "buenos", "aires"], ["the", "owl"]],
            "ner": [["B-ANIMAL", "I-ANIMAL", "O", "O", "B-CITY", "I-CITY"], ["O", "B-ANIMAL"]]}
    labels = ["O", "B-ANIMAL", "I-ANIMAL", "B-CITY", "I-CITY"]
    tokenizer = wordpiece([" ".join(w) for w in rows["words"]] * 3)
    encoded = tokenize_for_token_classification(datasets.Dataset.from_dict(rows), tokenizer, DATA, labels, "training")
    first = encoded[0]
    pieces = tokenizer.convert_ids_to_tokens(first["input_ids"])
    assert any(p.startswith("##") for p in pieces), pieces  # some word is split, or the test proves nothing
    expected = []
    for piece in pieces:
        if piece in ("[CLS]", "[SEP]") or piece.startswith("##"):
            expected.append(-100)
        else:
            expected.append(labels.index(rows["ner"][0][len([e for e in expected if e != -100])]))
    assert first["labels"] == expected
    assert [x for x in first["labels"] if x != -100] == [1, 2, 0, 0, 3, 4]
    assert encoded[1]["labels"][0] == -100 and [x for x in encoded[1]["labels"] if x != -100] == [0, 1]


def test_tags_from_files_named_in_order_and_refused_in_one_line(tmp_path) -> None:
    import datasets

    from tuitrain.engine.data import raw_splits, tag_ids, tag_names

    train, validation = raw_splits({"train_file": str(FIXTURES / "small.csv"), "validation_file": str(FIXTURES / "small.csv")},
                                   0, tmp_path)
    assert isinstance(train["words"][0], str)  # a CSV cell: words split on white space
    assert tag_names([train, validation], DATA, None, None) == ["O", "B-ANIMAL", "B-CITY", "I-ANIMAL", "I-CITY"]
    assert tag_names([train], DATA, ["O", "B-X"], None) == ["O", "B-X"]
    with pytest.raises(DataError, match=r"model.labels: training row 0 has tag 'B-CITY', which is not among the labels"):
        tag_ids(train, DATA, ["O", "B-ANIMAL", "I-ANIMAL"], "training")
    uneven = datasets.Dataset.from_dict({"words": [["a", "b"]], "ner": [["O"]]})
    with pytest.raises(DataError, match="validation row 0 has 2 words and 1 tags; give one tag per word"):
        tag_ids(uneven, DATA, ["O"], "validation")
    ids = datasets.Dataset.from_dict({"words": [["a", "b"]], "ner": [[0, 1]]})
    with pytest.raises(DataError, match=r"the tags are class ids, and nothing names them; set model.labels"):
        tag_names([ids], DATA, None, None)


def test_seqeval_module_scores_entities_by_span_and_type() -> None:
    from tuitrain.engine.metrics import METRICS

    seqeval = METRICS["seqeval"].load("seqeval")
    references = [["B-CITY", "I-CITY", "O", "B-ANIMAL"], ["O", "B-ANIMAL", "I-ANIMAL"]]
    predictions = [["B-CITY", "O", "O", "B-ANIMAL"], ["O", "B-ANIMAL", "I-ANIMAL"]]
    # entities: CITY 0-1, ANIMAL 3, ANIMAL 1-2; predicted CITY 0 (span wrong), ANIMAL 3, ANIMAL 1-2
    scores = seqeval.compute(predictions=predictions, references=references)
    assert scores == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "accuracy": 6 / 7})


def test_profile_rules_for_token_classification() -> None:
    data = {"model": {"task": "token-classification", "name_or_path": "x", "labels": ["O", "B-X", "O"]},
            "data": {"generate": "sentiment-words"}, "metrics": {"names": ["accuracy"]}}
    found = {p.key: p for p in validate_profile(data, "p.toml", None, training_fields=None, model_types=None)}
    assert "names \"O\" more than once" in found["model.labels"].message
    assert found["data.generate"].fix == 'use data.generate = "word-tags"'
    assert found["metrics.names[0]"].severity == "warning" and "seqeval" in found["metrics.names[0]"].fix


@pytest.mark.slow
def test_tagger_learns_the_generated_set(tmp_path, runs_dir):
    profile = tmp_path / "tags.toml"
    profile.write_text(TAGGER.format(data='generate = "word-tags"\nnum_train = 400\nnum_validation = 50'))
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    evaluation = [e for e in events(run_dir) if e["event"] == "evaluate"][-1]
    assert evaluation["eval_f1"] > 0.5 and 0 <= evaluation["eval_precision"] <= 1 and 0 <= evaluation["eval_recall"] <= 1
    config = json.loads((Path(record(run_dir)["output_dir"]) / "checkpoint-30" / "config.json").read_text())
    assert config["id2label"] == {"0": "O", "1": "B-ANIMAL", "2": "I-ANIMAL", "3": "B-CITY", "4": "I-CITY"}

    # export: the checkpoint without its training state, a tagger that loads and tags
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    out = tmp_path / "tagger"
    result = cli("export", run_dir.name, str(out), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "without the training state" in result.stdout and not (out / "optimizer.pt").exists()
    model = AutoModelForTokenClassification.from_pretrained(str(out)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    words = ["the", "polar", "bear", "was", "in", "oslo"]
    encoded = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        predicted = model(**encoded).logits.argmax(-1)[0].tolist()
    first = {}
    for position, word in enumerate(encoded.word_ids(0)):
        if word is not None and word not in first:
            first[word] = model.config.id2label[predicted[position]]
    tags = [first[i] for i in range(len(words))]
    assert sum(a == b for a, b in zip(tags, ["O", "B-ANIMAL", "I-ANIMAL", "O", "O", "B-CITY"], strict=True)) >= 4, tags


@pytest.mark.slow
def test_tagger_from_json_lines_files_with_lora(tmp_path, runs_dir):
    pytest.importorskip("peft")
    files = (f'train_file = "{FIXTURES / "train.jsonl"}"\nvalidation_file = "{FIXTURES / "validation.jsonl"}"\n'
             'text_column = "words"\nlabel_column = "ner"\n[model.lora]\nr = 4\ntarget_modules = ["query", "value"]')
    profile = tmp_path / "tags.toml"
    profile.write_text(TAGGER.format(data=files))
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    evaluation = [e for e in events(run_dir) if e["event"] == "evaluate"][-1]
    assert {"eval_f1", "eval_precision", "eval_recall", "eval_accuracy"} <= set(evaluation)
    checkpoint = Path(record(run_dir)["output_dir"]) / "checkpoint-30"
    assert (checkpoint / "adapter_model.safetensors").is_file()
    base = json.loads((checkpoint.parent / "lora-base" / "config.json").read_text())
    assert base["id2label"] == {"0": "O", "1": "B-ANIMAL", "2": "B-CITY", "3": "I-ANIMAL", "4": "I-CITY"}  # from the data
