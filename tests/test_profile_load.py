"""Reading profiles: files, syntax errors, migrations, overrides, path resolution."""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuitrain.profile import (
    Problem,
    Profile,
    ProfileError,
    apply_overrides,
    builtin_profile_path,
    load_profile,
    parse_override,
    resolve_profile_path,
    settings_with_defaults,
)

REPO = Path(__file__).resolve().parent.parent
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")


def demo_text() -> str:
    return builtin_profile_path().read_text(encoding="utf-8")


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_demo_loads_without_problems() -> None:
    profile = load_profile(builtin_profile_path())
    assert isinstance(profile, Profile)
    assert profile.name == "demo"
    assert profile.notes == []
    assert profile.data["model"]["config"]["model_type"] == "bert"


def test_import_pulls_in_no_heavy_library() -> None:
    code = ("import sys, tuitrain.profile; "
            "heavy = {'torch','transformers','datasets','evaluate','accelerate'} & set(sys.modules); "
            "assert not heavy, heavy")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr


def test_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '[run]\nname = "x"\nseed = 4 2\n')
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    [problem] = info.value.problems
    assert (problem.line, problem.column) == (3, 10)
    assert problem.file == str(path)
    assert str(problem).startswith(f"{path}:3:10: TOML syntax error")


def test_unquoted_string_gets_a_quoting_hint(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(write(tmp_path, "[run]\nname = my-run\n"))
    [problem] = info.value.problems
    assert problem.line == 2 and "quotes" in (problem.fix or "")


def test_missing_file_suggests_a_neighbour(tmp_path: Path) -> None:
    write(tmp_path, demo_text(), "small.toml")
    with pytest.raises(ProfileError) as info:
        load_profile(tmp_path / "smal.toml")
    [problem] = info.value.problems
    assert problem.message == "no such profile"
    assert "small.toml" in (problem.fix or "")


def test_every_error_is_listed_at_once_with_its_line(tmp_path: Path) -> None:
    text = demo_text().replace("learning_rate = 3e-3", 'learning_rat = 3e-3\nnum_train_epochs = "three"')
    text = text.replace('accelerator = "cpu"', 'accelerator = "cpux"')
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    keys = [p.key for p in info.value.problems]
    assert keys == ["training.learning_rat", "training.num_train_epochs", "hardware.accelerator"]
    lines = text.split("\n")
    first = info.value.problems[0]
    assert first.line is not None and lines[first.line - 1].startswith("learning_rat")
    assert len(str(info.value).splitlines()) == 3


@needs_transformers
def test_evaluation_strategy_migrates_with_a_note(tmp_path: Path) -> None:
    text = demo_text().replace('eval_strategy = "steps"', 'evaluation_strategy = "steps"')
    profile = load_profile(write(tmp_path, text))
    assert profile.data["training"]["eval_strategy"] == "steps"
    assert "evaluation_strategy" not in profile.data["training"]
    [note] = profile.notes
    assert note.severity == "note" and note.key == "training.evaluation_strategy"
    assert "eval_strategy" in str(note) and note.line is not None


@needs_transformers
def test_retired_keys_move_or_drop(tmp_path: Path) -> None:
    text = demo_text().replace(
        "report_to = \"none\"",
        'report_to = "none"\noverwrite_output_dir = true\nno_cuda = true\ntokenizer = "some/tok"')
    text = text.replace("[model.train_tokenizer]   # a WordLevel tokenizer trained on the training text\nvocab_size = 128\n", "")
    profile = load_profile(write(tmp_path, text))
    training = profile.data["training"]
    assert "overwrite_output_dir" not in training and "no_cuda" not in training
    assert training["use_cpu"] is True
    assert profile.data["model"]["tokenizer"] == "some/tok"
    assert {n.key for n in profile.notes} == {
        "training.overwrite_output_dir", "training.no_cuda", "training.tokenizer"}


@needs_transformers
def test_old_and_new_name_with_different_values_is_an_error(tmp_path: Path) -> None:
    text = demo_text().replace('eval_strategy = "steps"', 'eval_strategy = "steps"\nevaluation_strategy = "epoch"')
    with pytest.raises(ProfileError) as info:
        load_profile(write(tmp_path, text))
    assert [p.key for p in info.value.problems] == ["training.evaluation_strategy"]


@pytest.mark.parametrize("text, expected", [
    ("training.max_steps=40", (["training", "max_steps"], 40)),
    ("training.learning_rate=1e-4", (["training", "learning_rate"], 1e-4)),
    ("run.name=foo", (["run", "name"], "foo")),
    ('run.name="quoted name"', (["run", "name"], "quoted name")),
    ("run.name=two words", (["run", "name"], "two words")),
    ("hardware.mps_fallback=true", (["hardware", "mps_fallback"], True)),
    ("hardware.gpus=[0, 2]", (["hardware", "gpus"], [0, 2])),
    ('metrics.names=["f1"]', (["metrics", "names"], ["f1"])),
    ("model.config.hidden_size=64", (["model", "config", "hidden_size"], 64)),
    (" training.max_steps = 7 ", (["training", "max_steps"], 7)),
])
def test_parse_override(text: str, expected: tuple[list[str], object]) -> None:
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["training.max_steps", "max_steps=40", ".x=1", "training.=1"])
def test_parse_override_rejects_bad_forms(text: str) -> None:
    with pytest.raises(ProfileError) as info:
        parse_override(text)
    assert "section.key=value" in str(info.value)


def test_an_override_naming_only_a_section_says_so_once() -> None:
    with pytest.raises(ProfileError) as info:
        parse_override("training=3")
    assert str(info.value) == ("--set: 'training=3': names [training] but no key in it; expected section.key=value, "
                               "e.g. training.max_steps=40 or run.name=my-run")


def test_apply_overrides_returns_a_new_dict() -> None:
    data = {"training": {"max_steps": 10}, "model": {"config": {"model_type": "bert"}}}
    before = copy.deepcopy(data)
    new = apply_overrides(data, ["training.max_steps=40", "model.config.hidden_size=64", "run.name=x"])
    assert data == before
    assert new["training"]["max_steps"] == 40
    assert new["model"]["config"] == {"model_type": "bert", "hidden_size": 64}
    assert new["run"] == {"name": "x"}


def test_apply_overrides_into_a_non_table_is_an_error() -> None:
    with pytest.raises(ProfileError) as info:
        apply_overrides({"run": {"name": "x"}}, ["run.name.first=y"])
    assert "run.name" in str(info.value)


def test_overrides_are_validated_and_marked(tmp_path: Path) -> None:
    path = write(tmp_path, demo_text())
    profile = load_profile(path, ["training.max_steps=40", "run.name=short"])
    assert profile.data["training"]["max_steps"] == 40 and profile.name == "short"
    with pytest.raises(ProfileError) as info:
        load_profile(path, ["distributed.num_processes=2"])
    [problem] = info.value.problems
    assert problem.key == "distributed.num_processes" and "(from --set)" in problem.message
    assert "ddp" in (problem.fix or "")


def test_resolve_profile_path(tmp_path: Path) -> None:
    assert resolve_profile_path("demo", cwd=tmp_path) == builtin_profile_path()
    local = tmp_path / "profiles"
    local.mkdir()
    write(local, demo_text(), "demo.toml")
    assert resolve_profile_path("demo", cwd=tmp_path) == local / "demo.toml"
    other = write(tmp_path, demo_text(), "mine.toml")
    assert resolve_profile_path("mine.toml", cwd=tmp_path) == other
    assert resolve_profile_path(str(other)) == other
    with pytest.raises(ProfileError) as info:
        resolve_profile_path("dmeo", cwd=tmp_path)
    assert "did you mean 'demo'?" in str(info.value)


def test_problem_formatting() -> None:
    p = Problem("profiles/x.toml", "training.learning_rat", "unknown TrainingArguments key",
                "did you mean 'learning_rate'?", "error", 12, 1)
    assert str(p) == ("profiles/x.toml:12:1: training.learning_rat: unknown TrainingArguments key; "
                      "did you mean 'learning_rate'?")
    assert p.to_dict()["severity"] == "error"
    w = Problem("x.toml", "", "whole file", None, "warning", None, None)
    assert str(w) == "x.toml: warning: whole file"
    assert str(ProfileError([p, p])).count("\n") == 1


def test_profile_with_defaults_fills_every_section() -> None:
    full = settings_with_defaults(load_profile(builtin_profile_path()))
    assert full["run"]["name"] == "demo"
    assert full["distributed"]["num_processes"] == 1
    assert full["distributed"]["main_process_port"] is None
    assert full["metrics"]["names"] == ["accuracy", "f1"]
    assert full["model"]["train_tokenizer"] == {"vocab_size": 128, "kind": "wordlevel", "lowercase": True}
    assert full["hardware"]["device_order"] == "PCI_BUS_ID"
    bare = settings_with_defaults(Profile(Path("x/causal.toml"), {"model": {"task": "causal-lm"}}))
    assert bare["metrics"]["names"] == ["perplexity"]
    assert bare["run"]["name"] == "causal"
    assert bare["training"] == {} and bare["logging"]["log_level_replica"] == "warning"
