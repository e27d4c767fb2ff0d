"""The profile editor's model without Textual: loading, editing, checking, planning, saving, launching
decisions. Real files and the real validator and planner; the screen only draws this (tests/test_tui_app.py)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tuitrain.hardware import Hardware
from tuitrain.profile.lookup import BUILTIN_DIR
from tuitrain.tui.editor_model import EditorModel, LoadError
from tuitrain.tui.fields import REMOVE, parse_value
from tuitrain.tui.profile_edits import get_path, machine_path, set_path

DEMO = (BUILTIN_DIR / "demo.toml").read_text()


def loaded(path: Path | None, cwd: Path, **kwargs) -> EditorModel:
    model = EditorModel(path, cwd, **kwargs)
    model.take(model.read())
    return model


def checked(model: EditorModel, runs_root: Path):
    data, number = model.begin_check()
    check = model.check(data, number, runs_root, Hardware())
    assert model.take_check(check)
    return check


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    (tmp_path / "profiles").mkdir()
    path = tmp_path / "profiles" / "mine.toml"
    path.write_text(DEMO.replace("learning_rate = 3e-3", "learning_rate = -1"))
    return path


def test_the_model_imports_no_textual():
    code = ("import sys, tuitrain.tui.editor_model, tuitrain.tui.fields\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_new_profile_starts_from_the_demo_and_asks_where_to_save(tmp_path):
    model = loaded(None, tmp_path)
    assert model.path is None and model.template is None and not model.dirty and model.loaded
    assert model.data["run"]["name"] == "my-profile"
    assert "new profile, starting from the built-in demo" in model.notice
    assert model.planned_path == tmp_path / "profiles" / "new.toml"
    assert model.save_as_default() == str(Path("profiles") / "my-profile.toml")


def test_a_built_in_profile_is_a_template(tmp_path):
    model = loaded(BUILTIN_DIR / "demo.toml", tmp_path)
    assert model.path is None and model.template == BUILTIN_DIR / "demo.toml"
    assert model.data["run"]["name"] == "demo"  # kept: a copy of it
    assert model.notice.startswith("a copy of the built-in demo profile")


def test_editing_marks_the_profile_modified_and_removal_drops_empty_tables(tmp_path):
    model = loaded(None, tmp_path)
    model.set(("distributed", "fsdp", "sharding_strategy"), "no_shard")
    assert model.dirty and model.get(("distributed", "fsdp")) == {"sharding_strategy": "no_shard"}
    model.set(("distributed", "fsdp", "sharding_strategy"), REMOVE)
    assert "fsdp" not in model.data["distributed"]
    data = {"a": {"b": {"c": 1}}}
    set_path(data, ("a", "b", "c"), REMOVE)
    assert data == {} and get_path(data, ("a", "b", "c")) is None


def test_a_flagged_key_is_checked_shown_beside_its_field_and_refuses_to_launch(profile, tmp_path):
    model = loaded(profile, tmp_path)
    assert model.has_comments and model.notice == ""  # saving keeps them: nothing to warn about
    check = checked(model, tmp_path / "runs")
    assert check.plan is None and model.command == ""
    assert [p.key for p in model.errors] == ["training.learning_rate"]
    assert model.problems_by_field({"training.learning_rate"})["training.learning_rate"] == [
        "must be greater than 0, got -1"]
    # a key with no field of its own goes to its nearest parent field; none: left to the summary
    assert "training" in model.problems_by_field({"training"})
    assert model.problems_by_field({"run.name"}) == {}
    assert "1 error(s) to fix first" in model.launch_refusal()
    model.set(("training", "learning_rate"), parse_value("float", "0.001"))
    check = checked(model, tmp_path / "runs")
    assert check.plan is not None and not model.errors and model.launch_refusal() is None
    assert "accelerate launch" in model.command


def test_only_the_latest_check_is_taken(tmp_path):
    model = loaded(None, tmp_path)
    first = model.check(*model.begin_check(), tmp_path / "runs", Hardware())
    model.set(("training", "learning_rate"), -1)
    second = model.check(*model.begin_check(), tmp_path / "runs", Hardware())
    assert model.take_check(second) and model.errors
    assert not model.take_check(first) and model.errors  # an older check arriving late changes nothing


def test_save_as_names_a_toml_under_the_working_folder_and_saving_clears_modified(tmp_path):
    model = loaded(None, tmp_path)
    assert model.save_as_target("") is None and model.save_as_target(None) is None
    target = model.save_as_target("profiles/sub/other")
    assert target == tmp_path / "profiles" / "sub" / "other.toml"
    assert model.save_as_target(str(tmp_path / "x.toml")) == tmp_path / "x.toml"
    # a bare name goes where profiles are looked up by name; a path with a folder, ./ included, is a path
    assert model.save_as_target("csvcopy") == model.save_as_target(" csvcopy.toml ") == tmp_path / "profiles" / "csvcopy.toml"
    assert model.save_as_target("./csvcopy") == tmp_path / "csvcopy.toml"
    assert model.save_as_outcome("sub/x") == f"writes {Path('sub', 'x.toml')} (makes the folder sub)"
    assert model.save_as_outcome("") == "give a name (saved in profiles/) or a .toml path"
    model.set(("training", "max_steps"), 7)
    assert model.save(target, new_path=True) == []
    note = model.saved(target)
    assert note == f"saved {target}" and model.path == target and not model.dirty
    assert tomllib.loads(target.read_text())["training"]["max_steps"] == 7
    again = loaded(target, tmp_path)
    assert again.data == model.data and not again.has_comments


def test_saving_a_commented_file_keeps_its_comments(profile, tmp_path):
    model = loaded(profile, tmp_path)
    checked(model, tmp_path / "runs")
    before = profile.read_text()
    model.set(("training", "max_steps"), 7)
    assert model.save(profile) == []
    assert profile.read_text() == before.replace("max_steps = 150\n", "max_steps = 7\n")
    assert not (profile.parent / "mine.toml.bak").exists()
    assert "1 error(s) left: it will not launch until fixed" in model.saved(profile)


def test_raw_training_keys_and_their_refusals(tmp_path):
    model = loaded(None, tmp_path)
    assert model.add_training_key("  ", 1) == "give the key's name first"
    assert model.add_training_key("adam_beta2", parse_value("literal", "")).startswith("give a value")
    assert not model.dirty
    assert model.add_training_key("adam_beta2", parse_value("literal", "0.98")) is None
    assert model.data["training"]["adam_beta2"] == 0.98 and model.dirty
    assert "adam_beta2" in model.extra_training_keys(("max_steps",))


def test_strategy_leftovers_and_the_deepspeed_json(tmp_path):
    model = loaded(None, tmp_path)
    assert model.strategy == "single"
    model.set(("distributed", "num_machines"), 2)
    model.set(("distributed", "fsdp", "sharding_strategy"), "no_shard")
    keys, tables = model.unused_by_strategy({"strategy", "num_processes"})
    assert keys == ["num_machines"] and tables == ["fsdp"]
    assert model.disabled_plugin_keys() == set()
    model.set(("distributed", "deepspeed", "zero_stage"), 2)
    model.set(("distributed", "deepspeed", "config_file"), "ds.json")
    disabled = model.disabled_plugin_keys()
    assert disabled and "zero_stage" not in disabled  # a value already set keeps its row (and its error)


def test_an_unreadable_profile_is_a_load_error(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[run\nname = 1\n")
    with pytest.raises(LoadError):
        EditorModel(broken, tmp_path).read()


def two_machines(tmp_path: Path) -> Path:
    """The demo on CPU ranks over two machines (nothing is started: the editor only plans)."""
    text = DEMO.replace('strategy = "single"', 'strategy = "ddp"').replace("num_processes = 1\n", (
        'num_processes = 1\nmain_process_ip = "10.0.0.1"\nmain_process_port = 29500\n\n'
        '[[distributed.machines]]\nhost = "node1"\n\n'
        '[[distributed.machines]]\nhost = "node2"\npython = "/opt/py/bin/python"\nworkdir = "/srv/work"\n'))
    (tmp_path / "profiles").mkdir(exist_ok=True)
    path = tmp_path / "profiles" / "two.toml"
    path.write_text(text)
    return path


def test_machines_are_edited_in_place_and_planned_one_by_one(tmp_path):
    model = loaded(two_machines(tmp_path), tmp_path)
    assert [m["host"] for m in model.machines] == ["node1", "node2"]
    assert model.get(machine_path(1, "workdir")) == "/srv/work" and model.get(machine_path(0, "python")) is None
    check = checked(model, tmp_path / "runs")
    assert not model.errors, model.errors
    assert [(m.machine_rank, m.host) for m in check.plan.machines] == [(0, "node1"), (1, "node2")]
    assert "# machine 0: node1" in model.command and "# machine 1: node2, in /srv/work" in model.command
    assert check.plan.machines[1].python == "/opt/py/bin/python" and "--machine_rank 1" in model.command

    model.set(machine_path(1, "host"), "node1")  # the validator's key is the field's key
    checked(model, tmp_path / "runs")
    by_field = model.problems_by_field({".".join(machine_path(1, "host"))})
    assert by_field == {"distributed.machines[1].host": [
        ('"node1" is listed twice (machines 0 and 1); list each machine once; for more processes on one '
         "machine raise its num_processes")]}, by_field
    model.set(machine_path(1, "host"), "node2")
    model.set(machine_path(1, "python"), REMOVE)
    assert model.machines[1] == {"host": "node2", "workdir": "/srv/work"}

    assert model.add_machine() is None and model.machines[2] == {}
    model.set(machine_path(2, "host"), "node3")
    assert model.move_machine(2, -1) == 1 and model.move_machine(0, -1) == 0  # the first stays first
    assert [m["host"] for m in model.machines] == ["node1", "node3", "node2"]
    model.remove_machine(0)
    assert [m["host"] for m in model.machines] == ["node3", "node2"]
    model.remove_machine(1)
    model.remove_machine(0)
    assert "machines" not in model.data["distributed"]  # no empty array of tables left behind


def test_a_profile_without_machines_gets_its_first(tmp_path):
    model = loaded(None, tmp_path)
    assert model.machines == [] and model.add_machine() is None and model.dirty
    checked(model, tmp_path / "runs")
    assert [(p.key, p.message) for p in model.errors] == [("distributed.machines[0].host", "missing")]
    model.set(machine_path(0, "host"), "node1")
    check = checked(model, tmp_path / "runs")
    assert not model.errors and [m.host for m in check.plan.machines] == ["node1"]
    model.data["distributed"]["machines"] = "node1"
    assert "not a list" in model.add_machine()


def test_text_needs_no_quotes_and_quotes_typed_still_work():
    from tuitrain.tui.fields import reads_back_bare
    from tuitrain.tui.widgets.field_row import show_value

    assert parse_value("str", '"none"') == "none" and parse_value("str", "'my run'") == "my run"
    assert parse_value("str", 'say "hi"') == 'say "hi"' and parse_value("str", '"') == '"'
    assert parse_value("literal", "none") == "none" and parse_value("literal", '"none"') == "none"
    assert show_value("literal", "none") == "none" and show_value("literal", "bert") == "bert"
    # text that would read back as something else keeps its quotes
    assert show_value("literal", "10") == '"10"' and show_value("literal", "true") == '"true"'
    assert show_value("literal", "") == '""' and not reads_back_bare(" x")
    assert show_value("literal", ["a", 1]) == '["a", 1]'


def test_keys_the_chosen_model_or_data_ignore_say_which_key_makes_them_so(tmp_path):
    model = loaded(None, tmp_path)
    assert model.ignored_keys() == {}  # the demo: a model from scratch on generated data
    model.set(("model", "name_or_path"), "bert-base-uncased")
    model.set(("data", "train_file"), "train.csv")  # next to data.generate
    ignored = model.ignored_keys()
    assert "model.name_or_path is set" in ignored["model.config"]
    assert "model.name_or_path is set" in ignored["model.train_tokenizer"]
    assert ignored["data.train_file"] == "ignored: data.generate is set (generated data)"
    model.set(("model", "tokenizer"), "other-tokenizer")
    assert "model.tokenizer is set" in model.ignored_keys()["model.train_tokenizer"]
    model.set(("data", "generate"), REMOVE)
    ignored = model.ignored_keys()
    assert ignored["data.num_train"] == ignored["data.num_validation"] == (
        "ignored: used with data.generate only, which is not set")
    assert "data.train_file" not in ignored


def test_a_new_profile_starts_from_a_model_folder_or_data_files(tmp_path):
    (tmp_path / "my-model").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("text,label\na,0\nb,1\n")
    model = loaded(None, tmp_path)
    assert model.brand_new
    # typed from the working folder, written from the profile's folder (./profiles, where it will be saved)
    model.start_from_model("my-model")
    assert model.data["model"] == {"task": "sequence-classification", "num_labels": 2,
                                   "name_or_path": "../my-model"}
    model.start_from_model("bert-base-uncased")  # not a folder here: a Hub id, kept as typed
    assert model.data["model"]["name_or_path"] == "bert-base-uncased"
    model.start_from_model(str(tmp_path / "my-model"))  # absolute: kept as typed
    assert model.data["model"]["name_or_path"] == str(tmp_path / "my-model")
    model.start_from_data("data/train.csv", "data/valid.csv")  # a file still to come is a path too
    data = model.data["data"]
    assert (data["train_file"], data["validation_file"]) == ("../data/train.csv", "../data/valid.csv")
    assert model.folder_shown == "profiles/"
    assert not {"generate", "num_train", "num_validation"} & set(data) and model.ignored_keys() == {}
    model.start_from_data("data/train.csv")
    assert "validation_file" not in model.data["data"]
    assert not loaded(BUILTIN_DIR / "demo.toml", tmp_path).brand_new  # a template's copy is no new profile


def test_overrides_between_two_profiles_read_back_as_the_new_one():
    from tuitrain.profile import apply_overrides
    from tuitrain.tui.profile_edits import overrides_between

    old = {"run": {"name": "a", "seed": 1}, "training": {"learning_rate": 0.001, "report_to": "none"},
           "model": {"config": {"model_type": "bert"}}, "logging": {"log_level": "info"}}
    new = {"run": {"name": "10", "seed": 1}, "training": {"learning_rate": 1.0, "max_steps": 5},
           "model": {"config": {"model_type": "gpt2"}, "lora": {"r": 4, "target_modules": ["c_attn"]}},
           "metrics": {"names": ["accuracy", "f1"]}}
    sets = overrides_between(old, new)
    assert 'run.name="10"' in sets and "training.report_to=" in sets and "training.learning_rate=1.0" in sets
    assert "model.config.model_type=gpt2" in sets and "logging.log_level=" in sets
    result = apply_overrides(old, sets)
    assert result == {**new, "logging": {}}  # a section emptied key by key stays, empty: the same profile
    assert overrides_between(new, new) == []
    assert isinstance(result["training"]["learning_rate"], float)


# ------------------------------------------------------------------------------ launching: the one start


def test_launch_queues_a_profile_that_always_queues(tmp_path, monkeypatch):
    """`[run] queue = true` queues the editor's launch as it queues `tuitrain run` and the launch dialog's (the one
    start, tuitrain.backends.start); the editor used to start it at once."""
    from conftest import wait_until_ended
    from tuitrain.rundir.record import read_record

    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    model = loaded(BUILTIN_DIR / "demo.toml", tmp_path)
    set_path(model.data, ("run", "queue"), True)
    quick = ["training.max_steps=2", "training.logging_steps=1", "training.eval_strategy=no", "training.save_strategy=no"]
    started = model.launch(tmp_path / "runs", quick)
    assert started.queued and "queue" in read_record(started.paths)
    ended = wait_until_ended(started.paths.root, 300)
    assert ended["status"] == "finished", ended.get("error")


def test_launch_checks_the_machines_first_and_starts_nothing_when_they_fail(tmp_path):
    """The doctor checks a profile's machines before the editor's launch, as before `tuitrain run`'s: node1 and node2
    are no machines here, so nothing starts (the editor used to skip the doctor)."""
    from test_machines import two_machines
    from tuitrain.backends.start import CheckFailed

    model = loaded(BUILTIN_DIR / "demo.toml", tmp_path)
    model.data["distributed"] = two_machines()["distributed"]
    runs = tmp_path / "runs"
    with pytest.raises(CheckFailed) as refused:
        model.launch(runs)
    failed = [line for line in refused.value.checks if "  ssh  " in line and "FAIL" in line]
    assert [line.split()[0] for line in failed] == ["node1", "node2"], refused.value.checks
    assert "nothing was started" in str(refused.value)
    assert not runs.exists() or list(runs.iterdir()) == []
