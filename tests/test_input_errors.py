"""Bad input says one line naming the key and the fix, before launch where it can (issue 10,
items 6 and 11): GPUs listed that are not there, data files that cannot train, model configs that
cannot build, output folders that cannot be written, and what a rank says when only it can tell."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import cli, demo_profile_data
from tuitrain.hardware.devices import discover
from tuitrain.hardware.host import ProcessMeter
from tuitrain.hardware.preflight import check
from tuitrain.hardware.probe import Hardware, hardware_from
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.launch.plan import plan_launch
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import Problem, builtin_profile_path, load_profile, settings_with_defaults

NVML = Path(__file__).parent / "fixtures" / "nvml"


def box(name: str) -> Hardware:
    return hardware_from(discover(RecordedNvml(load_table(NVML / f"{name}.json")), ProcessMeter().identify), user="me")


def demo_settings(**sections: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(settings_with_defaults(load_profile(builtin_profile_path())))
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return data


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.is_error]


# ------------------------------------------------------------------ item 11: GPUs listed, none there


def test_auto_with_gpus_listed_on_a_machine_without_gpus_is_refused() -> None:
    settings = demo_settings(hardware={"accelerator": "auto", "gpus": [2, 0]})
    (problem,) = errors(check(settings, box("no_driver"), "p.toml"))
    assert problem.key == "hardware.gpus" and problem.file == "p.toml"
    assert "2, 0" in problem.message and "no NVIDIA GPU" in problem.message
    assert "remove hardware.gpus" in problem.fix


def test_the_plan_refuses_listed_gpus_that_are_not_there(tmp_path: Path) -> None:
    settings = demo_settings(hardware={"accelerator": "auto", "gpus": [2, 0]})
    plan = plan_launch(settings, box("no_driver"), tmp_path / "run", "p.toml", machine=MachineFacts())
    assert [p.key for p in plan.errors] == ["hardware.gpus"]
    unlisted = demo_settings(hardware={"accelerator": "auto"})  # no list: the CPU run it always was
    assert plan_launch(unlisted, box("no_driver"), tmp_path / "run", "p.toml", machine=MachineFacts()).errors == []
    hidden = demo_settings(hardware={"accelerator": "auto", "gpus": []})  # [] hides every GPU: fine anywhere
    assert plan_launch(hidden, box("no_driver"), tmp_path / "run", "p.toml", machine=MachineFacts()).errors == []


def test_run_refuses_listed_gpus_on_a_machine_without_them(tmp_path: Path, runs_dir: Path) -> None:
    env_table = str(NVML / "no_driver.json")
    os.environ["TUITRAIN_NVML_TABLE"] = env_table
    try:
        result = cli("run", "demo", "--set", "hardware.accelerator=auto", "--set", "hardware.gpus=[2, 0]",
                     runs_dir=runs_dir)
    finally:
        del os.environ["TUITRAIN_NVML_TABLE"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert "hardware.gpus" in result.stderr and "Traceback" not in result.stderr
    assert list(runs_dir.iterdir()) == []  # nothing started


# ------------------------------------------------------------------ item 6: caught by validate


def csv_profile(tmp_path: Path, train: str, validation: str | None = "text,label\nfine day,1\n",
                **sections: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "train.csv").write_text(train)
    files: dict[str, Any] = {"generate": None, "train_file": "train.csv"}
    if validation is not None:
        (tmp_path / "validation.csv").write_text(validation)
        files["validation_file"] = "validation.csv"
    return demo_profile_data(**{**sections, "data": {**files, **sections.get("data", {})}})


def problems_of(data: dict[str, Any], tmp_path: Path) -> list[Problem]:
    from tuitrain.profile import validate_profile

    return errors(validate_profile(data, "p.toml", tmp_path))


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def test_a_good_csv_profile_validates(tmp_path: Path) -> None:
    assert problems_of(csv_profile(tmp_path, "text,label\ngood film,1\nbad film,0\n"), tmp_path) == []


def test_an_empty_csv_is_refused(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, ""), tmp_path))
    assert problem.key == "data.train_file" and "is empty" in problem.message and problem.fix


def test_a_header_only_csv_is_refused(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, "text,label\n"), tmp_path))
    assert problem.key == "data.train_file" and "a header (text, label) but no rows" in problem.message


def test_string_labels_are_refused(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, "text,label\ngood film,positive\nbad film,negative\n"),
                               tmp_path))
    assert problem.key == "data.label_column" and '"positive" (row 1)' in problem.message
    assert "class number" in problem.fix


def test_a_label_past_num_labels_is_refused(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, "text,label\ngood,1\nbad,0\nmeh,4\n"), tmp_path))
    assert problem.key == "model.num_labels" and "label 4 (row 3)" in problem.message
    assert problem.fix == "set model.num_labels = 5"


def test_a_missing_column_is_named_with_the_columns_there(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, "sentence,label\ngood,1\n"), tmp_path))
    assert problem.key == "data.text_column" and "(it has: sentence, label)" in problem.message


def test_jsonl_labels_are_checked_too(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text('{"text": "good", "label": 1}\n{"text": "bad", "label": "neg"}\n')
    data = demo_profile_data(data={"generate": None, "train_file": "train.jsonl"},
                   training={"eval_strategy": "no", "save_strategy": "steps"})
    assert only(problems_of(data, tmp_path)).key == "data.label_column"


def test_eval_without_validation_data_is_refused(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, "text,label\ngood,1\n", validation=None), tmp_path))
    assert problem.key == "training.eval_strategy" and "no validation data" in problem.message
    assert "data.validation_file" in problem.fix and 'eval_strategy = "no"' in problem.fix
    no_eval = csv_profile(tmp_path, "text,label\ngood,1\n", validation=None, training={"eval_strategy": "no"})
    assert problems_of(no_eval, tmp_path) == []


def test_an_unknown_model_type_is_refused(tmp_path: Path) -> None:
    data = demo_profile_data()
    data["model"]["config"]["model_type"] = "bret"
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "model.config.model_type" and problem.fix == "did you mean 'bert'?"


def test_hidden_size_not_divisible_by_the_heads_is_refused(tmp_path: Path) -> None:
    data = demo_profile_data()
    data["model"]["config"]["num_attention_heads"] = 5
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "model.config.hidden_size" and "32 is not divisible by num_attention_heads = 5" \
        in problem.message
    assert problem.fix == "set num_attention_heads = 4, or hidden_size = 35"
    del data["model"]["config"]["num_attention_heads"]  # bert's default is 12 heads
    assert "(its default)" in only(problems_of(data, tmp_path)).message
    data["model"]["config"]["num_attention_heads"] = 0
    assert only(problems_of(data, tmp_path)).key == "model.config.num_attention_heads"


def test_the_heads_table_matches_transformers() -> None:
    """validate's DIVISIBLE_HEADS names each model type's own keys and defaults, and transformers
    really refuses those models with a hidden size the heads do not divide."""
    from transformers import AutoConfig, AutoModel

    from tuitrain.profile.rules.model import DIVISIBLE_HEADS

    for model_type, (hidden_names, head_names, hidden, heads) in DIVISIBLE_HEADS.items():
        config = AutoConfig.for_model(model_type)
        assert (getattr(config, hidden_names[0]), getattr(config, head_names[0])) == (hidden, heads), model_type
        with pytest.raises(Exception, match="divisible|multiple|divide"):  # llama: at config time
            small = {hidden_names[0]: 30, head_names[0]: 4, "vocab_size": 64}
            AutoModel.from_config(AutoConfig.for_model(model_type, **small))


def test_model_types_come_from_the_installed_transformers() -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from tuitrain.profile.training_args import installed_model_types

    assert installed_model_types() == frozenset(CONFIG_MAPPING_NAMES)


def test_output_dir_under_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    data = demo_profile_data(run={"output_dir": str(tmp_path / "afile" / "out")})
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "run.output_dir" and "is a file" in problem.message


def test_output_dir_on_a_read_only_filesystem_is_refused(tmp_path: Path) -> None:
    read_only = next((Path(p) for p in ("/proc/1", "/sys/kernel") if Path(p).is_dir()
                      and not os.access(p, os.W_OK)), None)
    if read_only is None:
        pytest.skip("no read-only folder on this machine")
    data = demo_profile_data(run={"output_dir": str(read_only / "tuitrain-out")})
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "run.output_dir" and "read-only" in problem.message


def test_fsdp_on_the_cpu_validate_says_what_run_says(tmp_path: Path, runs_dir: Path) -> None:
    profile = tmp_path / "fsdp_cpu.toml"
    profile.write_text(builtin_profile_path().read_text().replace(
        'strategy = "single"\nnum_processes = 1', 'strategy = "fsdp"\nnum_processes = 2'))
    validated = cli("validate", str(profile), runs_dir=runs_dir)
    ran = cli("run", str(profile), runs_dir=runs_dir)
    assert validated.returncode == 1 and ran.returncode == 2, validated.stderr + ran.stderr
    said = [line for line in validated.stderr.splitlines() if "distributed.strategy" in line]
    assert len(said) == 1 and "does not run on the CPU" in said[0]
    assert said[0] in ran.stderr
    assert list(runs_dir.iterdir()) == []


def test_validate_prints_one_line_per_data_problem(tmp_path: Path, runs_dir: Path) -> None:
    (tmp_path / "train.csv").write_text("text,label\ngood,positive\n")
    profile = tmp_path / "p.toml"
    profile.write_text(builtin_profile_path().read_text().replace(
        'generate = "sentiment-words"', 'train_file = "train.csv"').replace('eval_strategy = "steps"',
                                                                         'eval_strategy = "no"'))
    result = cli("validate", str(profile), runs_dir=runs_dir)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0].startswith(f"{profile}:") and "data.label_column" in result.stderr


# ------------------------------------------------------------------ item 6: what only a rank can tell


def test_the_engine_turns_bad_data_into_one_line(tmp_path: Path) -> None:
    import datasets

    from tuitrain.engine.data import DataError, _load_file, check_labels, check_splits

    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("text,label\n")
    for name in ("empty.csv", "header.csv"):
        with pytest.raises(DataError, match=rf"^data.train_file = '{name}': .* has no rows; give a file"):
            _load_file(name, "train_file", tmp_path)
    words = datasets.Dataset.from_dict({"text": ["a", "b"], "label": ["pos", "neg"]})
    with pytest.raises(DataError, match=r"^data.label_column = 'label': the training labels are string"):
        check_labels(words, "label", 2, "training")
    big = datasets.Dataset.from_dict({"text": ["a", "b"], "label": [0, 7]})
    with pytest.raises(DataError, match=r"^model.num_labels = 2: the training data has label 7; set model.num_labels = 8"):
        check_labels(big, "label", 2, "training")
    spec = {"text_column": "text", "label_column": "label", "train_file": "t.csv", "validation_split": "validation"}
    with pytest.raises(DataError, match=r"^training.eval_strategy = 'steps': there is no validation data"):
        check_splits(big, None, spec, {"task": "causal-lm", "num_labels": 2}, "steps")


def test_the_engine_turns_a_bad_model_config_into_one_line(tmp_path: Path) -> None:
    from tuitrain.engine.errors import EngineError
    from tuitrain.engine.main import make_output_dir
    from tuitrain.engine.model import build_model

    tokens = list(range(64))  # build_model asks the tokenizer only for its length before the model exists
    spec = {"task": "sequence-classification", "num_labels": 2, "name_or_path": ""}
    with pytest.raises(EngineError, match=r"^model.config.model_type = 'bret': not a model type"):
        build_model({**spec, "config": {"model_type": "bret"}}, tokens)
    bad_heads = {"model_type": "bert", "hidden_size": 32, "num_attention_heads": 5}
    with pytest.raises(EngineError, match=r"^\[model.config\] \(bert\): transformers refuses it: .*attention heads"):
        build_model({**spec, "config": bad_heads}, tokens)
    with pytest.raises(EngineError, match=r"^model.name_or_path = 'tuitrain-tests/no-such-model': not a local "
                                          r"folder, and not in the Hugging Face cache while offline"):
        build_model({**spec, "name_or_path": "tuitrain-tests/no-such-model"}, tokens)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(EngineError, match=r"^run.output_dir = .*: cannot be created"):
        make_output_dir(tmp_path / "afile" / "out")


@pytest.mark.slow
def test_e2e_a_hub_model_not_here_while_offline_fails_in_one_line(tmp_path: Path, runs_dir: Path) -> None:
    """What validate cannot know (the Hub cache): the rank says it in one line naming the key, in
    the foreground run and in status; the traceback stays in the rank log."""
    profile = tmp_path / "hub.toml"
    text = builtin_profile_path().read_text()
    start, end = text.index("[model.config]"), text.index("[data]")
    profile.write_text(text[:start].replace('num_labels = 2', 'num_labels = 2\nname_or_path = '
                                            '"tuitrain-tests/no-such-model"') + text[end:])
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 1, result.stdout + result.stderr
    said = "model.name_or_path = 'tuitrain-tests/no-such-model': not a local folder"
    lines = [line for line in result.stderr.splitlines() if line.startswith("rank 0 error: ") and said in line]
    assert len(lines) == 1 and "HF_HUB_OFFLINE=1" in lines[0], result.stderr  # the cause on stderr (issue 27)
    (run_dir,) = runs_dir.iterdir()
    status = cli("status", run_dir.name, runs_dir=runs_dir)
    assert any(said in line for line in status.stdout.splitlines() if line.startswith("error")), status.stdout
    assert "Traceback" in (run_dir / "logs" / "rank-0.log").read_text()  # a key away


# ------------------------------------------------------------------ issue 27: validate says what the rank would


def jsonl(count: int, broken: int | None = None, bad_text: str = '{"text": "broken, "label": 1}') -> str:
    lines = [json.dumps({"text": f"good film {i}", "label": i % 2}) for i in range(count)]
    if broken is not None:
        lines[broken - 1] = bad_text
    return "\n".join(lines) + "\n"


def test_a_broken_json_lines_line_is_named_as_an_editor_numbers_it(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text(jsonl(30, broken=18))
    data = demo_profile_data(data={"generate": None, "train_file": "train.jsonl"}, training={"eval_strategy": "no"})
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "data.train_file"
    assert problem.message == f"{tmp_path / 'train.jsonl'}: line 18 is not JSON (Expecting ',' delimiter, column 20)"
    assert problem.fix.startswith("fix that line: each line of a JSON Lines file is one JSON object")
    (tmp_path / "train.jsonl").write_text(jsonl(5, broken=3, bad_text="[1, 2]"))
    assert "line 3 holds a list, not a JSON object" in only(problems_of(data, tmp_path)).message


def test_a_broken_json_document_is_named_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "train.json").write_text('[\n  {"text": "a", "label": 0},\n  {"text": "b" "label": 1}\n]\n')
    data = demo_profile_data(data={"generate": None, "train_file": "train.json"}, training={"eval_strategy": "no"})
    problem = only(problems_of(data, tmp_path))
    assert "is not JSON (Expecting ',' delimiter, line 3 column" in problem.message
    (tmp_path / "train.json").write_text(jsonl(4, broken=2))  # JSON Lines in a .json file: its line
    assert "line 2 is not JSON" in only(problems_of(data, tmp_path)).message


def test_the_rank_names_the_same_line_as_validate(tmp_path: Path) -> None:
    from tuitrain.engine.data import DataError, _load_file

    (tmp_path / "train.jsonl").write_text(jsonl(30, broken=18))
    data = demo_profile_data(data={"generate": None, "train_file": "train.jsonl"}, training={"eval_strategy": "no"})
    said = only(problems_of(data, tmp_path))
    with pytest.raises(DataError) as caught:
        _load_file("train.jsonl", "train_file", tmp_path)
    assert str(caught.value) == f"data.train_file = 'train.jsonl': {said.message}; {said.fix}"
    assert "row 17" not in str(caught.value)


def test_a_csv_not_separated_by_commas_says_so(tmp_path: Path) -> None:
    problem = only(problems_of(csv_profile(tmp_path, "text;label\ngood film;1\n", validation=None,
                                           training={"eval_strategy": "no"}), tmp_path))
    assert problem.key == "data.train_file" and "did you mean" not in str(problem)
    assert problem.message == f'{tmp_path / "train.csv"} is separated by semicolons (;), not commas (its header reads ' \
                              '"text;label")'
    assert "save it with commas" in problem.fix and "sep=';'" in problem.fix
    tabs = only(problems_of(csv_profile(tmp_path, "text\tlabel\ngood film\t1\n", validation=None,
                                        training={"eval_strategy": "no"}), tmp_path))
    assert "is separated by tabs, not commas" in tabs.message
    one_column = csv_profile(tmp_path, "words\ngood;film\n", validation=None, training={"eval_strategy": "no"})
    assert all("is not a column" in p.message for p in problems_of(one_column, tmp_path))  # no ';' in its header


def test_the_rank_says_a_csv_is_not_separated_by_commas(tmp_path: Path) -> None:
    import datasets

    from tuitrain.engine.data import DataError, check_columns

    semi = datasets.Dataset.from_dict({"text;label": ["good film;1"]})
    data = {"text_column": "text", "label_column": "label", "train_file": str(tmp_path / "train.csv")}
    with pytest.raises(DataError, match=r"^data.train_file = '.*train.csv': .*train.csv is separated by semicolons"):
        check_columns(semi, data, "sequence-classification", "training")


def test_a_file_as_the_model_or_tokenizer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text("text,label\ngood,1\n")
    data = demo_profile_data(model={"config": None, "train_tokenizer": None, "name_or_path": "train.csv"})
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "model.name_or_path"
    assert problem.message == f"{tmp_path / 'train.csv'} is a file, not a model folder"
    assert "config.json" in problem.fix and "Hub id" in problem.fix
    data = demo_profile_data(model={"train_tokenizer": None, "tokenizer": "train.csv"})
    assert only(problems_of(data, tmp_path)).key == "model.tokenizer"
    hub = demo_profile_data(model={"config": None, "train_tokenizer": None, "name_or_path": "bert-base-uncased"})
    assert problems_of(hub, tmp_path) == []  # a Hub id is no path here


def test_model_config_values_of_the_wrong_type_are_refused(tmp_path: Path) -> None:
    data = demo_profile_data()
    data["model"]["config"]["hidden_size"] = "32"
    problem = only(problems_of(data, tmp_path))
    assert problem.key == "model.config.hidden_size"
    assert problem.message == 'expected a whole number (int), got the string "32"'
    assert problem.fix == "write it without quotes: hidden_size = 32"
    data["model"]["config"]["hidden_size"] = "abc"
    assert only(problems_of(data, tmp_path)).fix == "e.g. hidden_size = 768"  # bert's default
    data["model"]["config"]["hidden_size"] = 32.0
    assert only(problems_of(data, tmp_path)).message == "expected a whole number (int), got the number 32"
    data["model"]["config"].update(hidden_size=32, hidden_dropout_prob=0, vocab_size=128, use_cache=False)
    assert problems_of(data, tmp_path) == []  # a whole number is a dropout bert takes


def test_a_rank_that_meets_a_file_as_its_model_says_it_is_a_file(tmp_path: Path) -> None:
    """validate refuses a file as model.name_or_path first; a rank that meets one anyway (the file put there after
    the check) says the same, not that a folder holds nothing loadable."""
    from tuitrain.engine.errors import not_loadable

    data = tmp_path / "train.csv"
    data.write_text("text,label\n")
    said = not_loadable("model.name_or_path", str(data), "model", OSError("not a directory"))
    assert said.startswith(f"model.name_or_path: {data} is a file, not a model folder") and "holds no" not in said
