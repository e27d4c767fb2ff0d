"""Validation: each rule names its key and a fix."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from typing import Any

import pytest

from conftest import demo_profile_data
from tuitrain.profile import Problem, builtin_profile_path, validate_profile

HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")
DEMO: dict[str, Any] = tomllib.loads(builtin_profile_path().read_text(encoding="utf-8"))


demo = demo_profile_data  # the demo profile with sections merged in (None removes a key)


def errors(data: dict[str, Any], base_dir: Path | None = None, **kw: Any) -> list[Problem]:
    return [p for p in validate_profile(data, "p.toml", base_dir, **kw) if p.severity == "error"]


def only(data: dict[str, Any], base_dir: Path | None = None, **kw: Any) -> Problem:
    found = errors(data, base_dir, **kw)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]


def test_demo_is_clean() -> None:
    assert validate_profile(DEMO, "demo.toml", None) == []


@needs_transformers
def test_unknown_training_key_did_you_mean() -> None:
    data = demo(training={"learning_rat": 1e-3, "learning_rate": None})
    p = only(data)
    assert str(p) == "p.toml: training.learning_rat: unknown TrainingArguments key; did you mean 'learning_rate'?"


@needs_transformers
def test_training_type_error_names_key_and_form() -> None:
    p = only(demo(training={"num_train_epochs": "three"}))
    assert p.key == "training.num_train_epochs"
    assert str(p) == ('p.toml: training.num_train_epochs: expected a number (float), got the string "three"; '
                      "e.g. num_train_epochs = 3")


@needs_transformers
def test_training_types_ints_for_floats_but_bools_are_not_ints() -> None:
    assert errors(demo(training={"num_train_epochs": 2, "max_steps": None})) == []
    p = only(demo(training={"max_steps": True}))
    assert "whole number" in p.message and "boolean true" in p.message
    p = only(demo(training={"fp16": 1}))
    assert p.key == "training.fp16" and "true or false" in p.message


@needs_transformers
def test_training_choices_did_you_mean() -> None:
    p = only(demo(training={"eval_strategy": "step"}))
    assert p.fix == "did you mean 'steps'?"
    p = only(demo(training={"lr_scheduler_type": "cosin"}))
    assert "'cosine'" in (p.fix or "")
    p = only(demo(training={"report_to": ["tensorbord"]}))
    assert "'tensorboard'" in (p.fix or "")


@needs_transformers
@pytest.mark.parametrize("key, value", [
    ("learning_rate", 0), ("per_device_train_batch_size", 0), ("gradient_accumulation_steps", 0),
    ("logging_steps", 0), ("eval_steps", -5), ("save_steps", 0), ("max_steps", 0),
])
def test_training_ranges(key: str, value: Any) -> None:
    assert only(demo(training={key: value})).key == f"training.{key}"


@needs_transformers
def test_training_output_dir_points_to_run() -> None:
    p = only(demo(training={"output_dir": "out"}))
    assert p.key == "training.output_dir" and "[run] output_dir" in (p.fix or "")


def test_without_transformers_training_keys_pass_with_a_warning() -> None:
    found = validate_profile(demo(training={"anything_goes": 1}), "p.toml", None, training_fields=None)
    assert [(p.key, p.severity) for p in found] == [("training", "warning")]


def test_unknown_section_did_you_mean() -> None:
    data = demo()
    data["trainig"] = {"max_steps": 3}
    p = only(data)
    assert p.key == "trainig" and p.fix == "did you mean [training]?"


def test_unknown_key_in_a_section() -> None:
    p = only(demo(model={"num_label": 2}))
    assert p.key == "model.num_label" and p.fix == "did you mean 'num_labels'?"
    p = only(demo(model={"train_tokenizer": {"vocab_size": 128, "kinds": "wordpiece"}}))
    assert p.key == "model.train_tokenizer.kinds"


def test_key_in_the_wrong_section_points_to_its_home() -> None:
    p = only(demo(run={"mixed_precision": "bf16"}))
    assert "hardware.mixed_precision" in (p.fix or "")
    p = only(demo(model={"quantize": "nf4"}))
    assert p.key == "model.quantize" and p.fix == "did you mean model.lora.quantize?"


def test_section_types_and_ranges() -> None:
    assert only(demo(run={"seed": -1})).key == "run.seed"
    assert only(demo(distributed={"main_process_port": 70000})).key == "distributed.main_process_port"
    assert only(demo(hardware={"accelerator": "gpu"})).key == "hardware.accelerator"
    p = only(demo(model={"num_labels": "two"}))
    assert p.message == 'expected a whole number (int), got the string "two"'
    p = only(demo(hardware={"gpus": [0, 0]}))
    assert p.key == "hardware.gpus[1]"


def test_both_model_sources_is_an_error_naming_both() -> None:
    p = only(demo(model={"name_or_path": "bert-base-uncased"}))
    assert "model.name_or_path" in p.message and "[model.config]" in p.message


def test_no_model_source_is_an_error() -> None:
    data = demo()
    del data["model"]["config"]
    p = only(data)
    assert p.key == "model" and "name_or_path" in (p.fix or "")


def test_config_without_a_tokenizer_is_an_error_with_the_fix() -> None:
    data = demo()
    del data["model"]["train_tokenizer"]
    p = only(data)
    assert p.key == "model.tokenizer" and "[model.train_tokenizer]" in (p.fix or "")
    data["model"]["tokenizer"] = "bert-base-uncased"
    assert errors(data) == []


def test_config_needs_model_type() -> None:
    data = demo()
    del data["model"]["config"]["model_type"]
    assert only(data).key == "model.config.model_type"


def test_max_length_beyond_positions() -> None:
    p = only(demo(data={"max_length": 65}))
    assert p.key == "data.max_length" and "64" in p.message


def test_class_weights_length_must_match_labels() -> None:
    assert errors(demo(model={"class_weights": [1.0, 3]})) == []
    p = only(demo(model={"class_weights": [1.0, 2.0, 3.0]}))
    assert p.key == "model.class_weights" and "3 weights for 2 labels" in p.message
    assert only(demo(model={"class_weights": [1.0, -1.0]})).key == "model.class_weights[1]"


def test_exactly_one_data_source() -> None:
    p = only(demo(data={"dataset": "imdb"}))
    assert p.key == "data" and "data.generate" in p.message and "data.dataset" in p.message
    p = only(demo(data={"generate": None}))
    assert p.key == "data" and p.message == "no data source"


def test_missing_data_file_is_named_with_its_path(tmp_path: Path) -> None:
    data = demo(data={"generate": None, "train_file": "data/train.csv"}, training={"eval_strategy": "no"})
    p = only(data, tmp_path)
    assert p.key == "data.train_file" and str(tmp_path / "data" / "train.csv") in p.message


def test_data_files_resolve_against_the_profile_folder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"text": "a", "label": 0}\n')
    (tmp_path / "data" / "val.json").write_text('{"text": "b", "label": 1}\n')
    data = demo(data={"generate": None, "train_file": "data/train.jsonl", "validation_file": "data/val.json"})
    assert errors(data, tmp_path) == []
    (tmp_path / "data" / "train.txt").write_text("x")
    p = only(demo(data={"generate": None, "train_file": "data/train.txt", "validation_file": "data/val.json"}),
             tmp_path)
    assert "unknown file type" in p.message


def test_single_strategy_with_many_processes() -> None:
    p = only(demo(distributed={"num_processes": 2}))
    assert p.key == "distributed.num_processes" and '"ddp"' in (p.fix or "")
    assert errors(demo(distributed={"num_processes": 2, "strategy": "ddp"})) == []


def test_machine_rank_below_num_machines() -> None:
    found = errors(demo(distributed={"strategy": "ddp", "num_machines": 2, "machine_rank": 2,
                                     "main_process_ip": "10.0.0.1"}))
    assert [p.key for p in found] == ["distributed.machine_rank"]


def test_strategy_tables_are_free_form_but_warn_when_unused() -> None:
    found = validate_profile(demo(distributed={"fsdp": {"anything": [1, 2]}}), "p.toml", None)
    assert [(p.key, p.severity) for p in found] == [("distributed.fsdp", "warning")]


@needs_transformers
def test_early_stopping_needs_evaluation() -> None:
    assert errors(demo(metrics={"early_stopping_patience": 3})) == []
    p = only(demo(metrics={"early_stopping_patience": 3}, training={"eval_strategy": None}))
    assert p.key == "metrics.early_stopping_patience"


def test_fp16_on_cpu() -> None:
    assert only(demo(hardware={"mixed_precision": "fp16"})).key == "hardware.mixed_precision"


# ------------------------------------------------------------------ names from accelerate, torchrun, transformers

@pytest.mark.parametrize("leaf, value, pointer", [
    ("mixed_precision", "bf16", "hardware.mixed_precision"),
    ("gpu_ids", "0,1", "hardware.gpus"),
    ("use_cpu", True, 'hardware.accelerator = "cpu"'),
    ("distributed_type", "MULTI_GPU", "distributed.strategy"),
    ("fsdp_config", {"fsdp_sharding_strategy": "FULL_SHARD"}, "the [distributed.fsdp] table"),
    ("deepspeed_config", {"zero_stage": 2}, "the [distributed.deepspeed] table"),
    ("fsdp_sharding_strategy", "FULL_SHARD", "distributed.fsdp.sharding_strategy"),
    ("zero_stage", 3, "distributed.deepspeed.zero_stage"),
    ("nproc_per_node", 2, "distributed.num_processes"),
    ("master_port", 29500, "distributed.main_process_port"),
])
def test_foreign_names_in_distributed_point_to_their_home(leaf: str, value: Any, pointer: str) -> None:
    p = only(demo(distributed={leaf: value}))
    assert p.key == f"distributed.{leaf}" and p.message == "unknown key in [distributed]"
    assert (p.fix or "").startswith(f"did you mean {pointer}")


def test_accelerate_names_in_hardware() -> None:
    assert (only(demo(hardware={"gpu_ids": [0]})).fix or "").startswith("did you mean 'gpus'?")
    assert 'accelerator = "cpu"' in (only(demo(hardware={"use_cpu": True})).fix or "")


def fsdp(**table: Any) -> dict[str, Any]:
    return demo(hardware={"accelerator": "cuda"}, distributed={"strategy": "fsdp", "fsdp": table})


@pytest.mark.parametrize("leaf, value, fix", [
    ("cpu_offload", True, "did you mean 'offload_params'?"),
    ("fsdp_cpu_offload", True, "did you mean 'offload_params'?"),
    ("fsdp_offload_params", True, "did you mean 'offload_params'?"),
    ("backward_prefetch_policy", "backward_pre", "did you mean 'backward_prefetch'?"),
    ("fsdp_backward_prefetch_policy", "backward_pre", "did you mean 'backward_prefetch'?"),
    ("fsdp_reshard_after_forward", False, "did you mean 'sharding_strategy'?"),
    ("fsdp_min_num_params", 1000, "did you mean 'min_num_params'?"),
    ("limit_all_gathers", True, "tuitrain has no such setting"),
    ("xla", True, "tuitrain has no such setting"),
    ("xla_fsdp_grad_ckpt", True, "tuitrain has no such setting"),
])
def test_fsdp_aliases_point_to_the_key(leaf: str, value: Any, fix: str) -> None:
    p = only(fsdp(**{leaf: value}))
    assert p.key == f"distributed.fsdp.{leaf}" and (p.fix or "").startswith(fix)


def test_transformers_fsdp_config_names_that_are_ours_are_accepted() -> None:
    assert errors(fsdp(auto_wrap_policy="size", min_num_params=1000, backward_prefetch="backward_post",
                       forward_prefetch=True, activation_checkpointing=True, cpu_ram_efficient_loading=True)) == []
    assert errors(fsdp(transformer_layer_cls_to_wrap=["BertLayer"])) == []


@pytest.mark.parametrize("leaf, value, fix", [
    ("deepspeed_config_file", "ds.json", "did you mean 'config_file'?"),
    ("zero3_init_flag", True, "did you mean 'zero3_init'?"),
    ("bf16", {"enabled": True}, "did you mean hardware.mixed_precision?"),
])
def test_deepspeed_aliases_point_to_the_key(leaf: str, value: Any, fix: str) -> None:
    data = demo(hardware={"accelerator": "cuda"}, distributed={"strategy": "deepspeed", "deepspeed": {leaf: value}})
    p = only(data)
    assert p.key == f"distributed.deepspeed.{leaf}" and (p.fix or "").startswith(fix)


def test_a_quoted_key_holding_a_newline_or_an_escape_is_still_one_line() -> None:
    data = demo_profile_data()
    data["training"]["learning\nrate"] = 1
    data["run"]["\x1b[2Jname"] = "x"
    found = [str(p) for p in errors(data)]
    assert any("training.learning\\nrate: unknown TrainingArguments key" in line for line in found), found
    assert any("run.\\x1b[2Jname" in line for line in found), found
    assert all("\n" not in line and "\x1b" not in line for line in found)


# ------------------------------------------------------------------ issue 27: a task name that is not one


def pairs(**model: Any) -> dict[str, Any]:
    """Sentence pairs with labels, read from a Hub data set (no file to scan)."""
    return demo(model=model, data={"generate": None, "dataset": "glue", "dataset_config": "mrpc",
                                   "text_column": "sentence1", "text_pair_column": "sentence2"})


def test_a_task_name_suggests_the_task_the_data_fits() -> None:
    problem = only(pairs(task="classification"))
    assert problem.key == "model.task"
    assert problem.fix == ("did you mean 'sequence-classification'? "
                           "(the data is sentence pairs with labels (data.text_pair_column))")
    tags = demo(model={"task": "classification", "labels": ["O", "B-X"], "num_labels": None},
                data={"generate": "word-tags"})
    assert "did you mean 'token-classification'?" in only(tags).fix
    assert only(pairs(task="text-classification")).fix.startswith("did you mean 'sequence-classification'?")


def test_a_task_typo_and_a_known_alias_keep_their_plain_hint() -> None:
    assert only(pairs(task="token-clasification")).fix == "did you mean 'token-classification'?"
    assert only(demo(model={"task": "summarization"})).fix == \
        "did you mean 'seq2seq'? (tuitrain's name for \"summarization\")"


# ------------------------------------------------------------------ issue 27: a folder where a profile is wanted


def test_a_folder_lists_its_profiles(tmp_path: Path) -> None:
    from tuitrain.profile import ProfileError, resolve_profile_path

    (tmp_path / "b.toml").write_text("")
    (tmp_path / "a.toml").write_text("")
    with pytest.raises(ProfileError) as caught:
        resolve_profile_path(".", cwd=tmp_path)
    (problem,) = caught.value.problems
    assert str(problem) == ".: is a folder, not a profile; profiles in it: a.toml, b.toml; give one of them"
    (tmp_path / "sub" / "profiles").mkdir(parents=True)
    (tmp_path / "sub" / "profiles" / "x.toml").write_text("")
    with pytest.raises(ProfileError, match=r"^sub/: is a folder, not a profile; profiles in it: sub/profiles/x.toml"):
        resolve_profile_path("sub/", cwd=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProfileError, match="is a folder, not a profile, and holds no .toml file"):
        resolve_profile_path("empty", cwd=tmp_path)


def test_a_folder_named_like_a_known_profile_does_not_hide_it(tmp_path: Path) -> None:
    from tuitrain.profile import resolve_profile_path

    (tmp_path / "demo").mkdir()
    assert resolve_profile_path("demo", cwd=tmp_path) == builtin_profile_path()
