"""The TrainingArguments table: made by a real subprocess, cached per transformers version."""

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
from tuitrain.profile.training_args import MIGRATIONS, _specs_from_table, applicable_migration

REPO = Path(__file__).resolve().parent.parent
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")

# Runs in a fresh interpreter with an empty cache folder: builds the table through the real
# introspection subprocess, and proves that transformers never entered this process.
CHILD = """
import json, sys
from tuitrain.profile import training_args_fields
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

    version = importlib.metadata.version("transformers")
    cache = tmp_path / "tuitrain" / f"training-args-{version}.json"
    table = json.loads(cache.read_text())
    assert table["version"] == version and "learning_rate" in table["fields"]
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]  # no temp file left behind


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
