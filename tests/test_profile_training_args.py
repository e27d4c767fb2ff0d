"""The TrainingArguments table: made by a real subprocess (python -m tuitrain.engine.training_args_probe),
cached per transformers install, announced while it is read, and its failure said in one line."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuitrain.profile import FieldSpec, training_args_fields
from tuitrain.profile.training_args import MIGRATIONS, _specs_from_table, applicable_migration, cache_path

REPO = Path(__file__).resolve().parent.parent
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")

# Runs in a fresh interpreter with an empty cache folder: builds the table through the real
# introspection subprocess, and proves that transformers never entered this process.
CHILD = """
import json, os, sys
os.umask(0o077)
from tuitrain.profile import training_args_fields
from tuitrain.profile.training_args import report_reading_to
report_reading_to(lambda line: print("said: " + line, file=sys.stderr))
fields = training_args_fields()
heavy = sorted({'torch', 'transformers', 'datasets', 'evaluate', 'accelerate'} & set(sys.modules))
print(json.dumps({"heavy": heavy, "fields": {k: [v.type, v.default, list(v.choices or []), list(v.accepts)]
                                              for k, v in fields.items()}}))
"""


@needs_transformers
def test_table_from_a_real_subprocess_is_cached(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    version = importlib.metadata.version("transformers")
    assert done.stderr.splitlines() == [f"said: reading TrainingArguments from transformers {version} (once per install)…"]
    result = json.loads(done.stdout)
    assert result["heavy"] == []
    fields = result["fields"]
    assert fields["learning_rate"][:2] == ["float", 5e-05]
    assert fields["num_train_epochs"][0] == "float"
    assert fields["per_device_train_batch_size"][0] == "int"
    assert fields["fp16"][0] == "bool"
    assert fields["eval_strategy"][0] == "str" and set(fields["eval_strategy"][2]) >= {"no", "steps", "epoch"}
    assert {"linear", "cosine"} <= set(fields["lr_scheduler_type"][2])
    assert "adamw_torch" in fields["optim"][2]
    assert fields["save_total_limit"][0] == "optional-int"
    assert fields["report_to"][0] == "any" and set(fields["report_to"][3]) == {"str", "list"}
    assert "none" in fields["report_to"][2]

    location = str(Path(importlib.util.find_spec("transformers").origin).resolve().parent)
    cache = tmp_path / "tuitrain" / cache_path(version, location).name
    assert cache.name.startswith(f"training-args-{version}-")
    table = json.loads(cache.read_text())
    assert table["version"] == version and table["location"] == location and "learning_rate" in table["fields"]
    assert "bert" in table["model_types"]
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]  # no temp file left behind
    assert cache.stat().st_mode & 0o777 == 0o600  # the umask decides, as for any new file

    again = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert again.returncode == 0 and again.stderr == ""  # read from the cache: nothing to announce
    assert json.loads(again.stdout)["fields"] == fields


def test_another_install_of_the_same_version_has_its_own_table(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_path("5.0.0", "/venv-a/transformers") != cache_path("5.0.0", "/venv-b/transformers")
    assert cache_path("5.0.0", "/venv-a/transformers").parent == tmp_path / "tuitrain"


@needs_transformers
def test_a_failing_probe_is_named_not_silent(tmp_path: Path) -> None:
    """transformers that cannot be imported: `validate` says it reads the table, then says in one
    line what failed (the probe's own last line) instead of silently checking nothing."""
    broken = tmp_path / "site" / "transformers"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tuitrain", "validate", "demo"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    version = importlib.metadata.version("transformers")
    lines = done.stderr.splitlines()
    assert lines[0] == f"tuitrain: reading TrainingArguments from transformers {version} (once per install)…"
    failure = (f"TrainingArguments of transformers {version} could not be read: python -m "
               "tuitrain.engine.training_args_probe failed (exit 1): ImportError: broken on purpose")
    assert any(failure in line and "[training] keys were not checked" in line and "warning: training:" in line
               for line in lines[1:]), done.stderr
    assert not (tmp_path / "cache" / "tuitrain").exists() or not any((tmp_path / "cache" / "tuitrain").iterdir())


@needs_transformers
def test_in_process_table_is_cached_and_copied() -> None:
    first = training_args_fields()
    assert first is not None and isinstance(first["learning_rate"], FieldSpec)
    first.pop("learning_rate")
    second = training_args_fields()
    assert second is not None and "learning_rate" in second


def test_specs_from_a_table() -> None:
    table = {"fields": {
        "a": {"kinds": ["int"], "optional": True, "default": None, "choices": None},
        "b": {"kinds": ["str", "list"], "optional": True, "default": "none", "choices": ["x", "y"]},
        "c": {"kinds": ["any"], "optional": False, "default": None, "choices": None},
    }}
    specs = _specs_from_table(table)
    assert specs["a"].type == "optional-int" and specs["a"].base_type == "int"
    assert specs["b"].type == "any" and specs["b"].accepts == ("str", "list")
    assert specs["b"].choices == ("x", "y")
    assert specs["c"].type == "any" and specs["c"].accepts == ()


def test_migrations_are_one_table() -> None:
    assert MIGRATIONS["evaluation_strategy"].new == "training.eval_strategy"
    assert MIGRATIONS["no_cuda"].new == "training.use_cpu"
    assert MIGRATIONS["push_to_hub_token"].new == "training.hub_token"
    assert MIGRATIONS["tokenizer"].new == "model.tokenizer"
    assert MIGRATIONS["overwrite_output_dir"].new is None
    # a conditional migration applies only where the installed transformers lacks the old key
    with_ratio = {"warmup_ratio": FieldSpec("warmup_ratio", "float")}
    assert applicable_migration("warmup_ratio", with_ratio) is None
    assert applicable_migration("warmup_ratio", {}) is not None
    assert applicable_migration("learning_rate", {}) is None
