"""The TrainingArguments table: made by a real subprocess (python -m tuitrain.engine.training_args_probe),
one at a time however many fills start at once, cached per transformers install, shipped as a snapshot, and
its failure said in one line (the first command not waiting for it: tests/test_training_args_cold.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tuitrain.profile import FieldSpec, training_args_fields
from tuitrain.profile.training_args import (
    FILL_MODULE,
    LOCK_NAME,
    SNAPSHOT,
    _specs_from_table,
    cache_path,
    failure_path,
    usable_table,
)
from tuitrain.profile.training_migrations import MIGRATIONS, applicable_migration

REPO = Path(__file__).resolve().parent.parent
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")

# Runs in a fresh interpreter: reads the table (from the cache the probe filled) and proves that
# transformers never entered this process.
CHILD = """
import json, os, sys
from tuitrain.profile import training_args_fields
from tuitrain.profile.training_args import report_reading_to
report_reading_to(lambda line: print("said: " + line, file=sys.stderr))
fields = training_args_fields()
heavy = sorted({'torch', 'transformers', 'datasets', 'evaluate', 'accelerate'} & set(sys.modules))
print(json.dumps({"heavy": heavy, "fields": {k: [v.type, v.default, list(v.choices or []), list(v.accepts)]
                                              for k, v in fields.items()}}))
"""


def _env(cache: Path, *front: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join([*map(str, front), str(REPO), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def probed_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """What the first commands start in the background, three at once into one empty cache: the fill, whose
    probe imports transformers, one at a time under the lock (the others find its table). One real probe
    serves the tests below. Returns (the XDG cache folder, the version, the folder transformers is in)."""
    home = tmp_path_factory.mktemp("xdg")
    version = importlib.metadata.version("transformers")
    location = str(Path(importlib.util.find_spec("transformers").origin).resolve().parent)
    argv = [sys.executable, "-m", FILL_MODULE, "--version", version, "--location", location]
    children = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home),
                                 cwd=REPO, umask=0o077) for _ in range(3)]
    for child in children:
        _, err = child.communicate(timeout=600)
        assert child.returncode == 0 and err == "", err
    return home, version, location


@needs_transformers
def test_concurrent_probes_leave_one_valid_table(probed_cache: tuple[Path, str, str]) -> None:
    home, version, _ = probed_cache
    [table] = sorted((home / "tuitrain").glob("training-args-*.json"))
    data = json.loads(table.read_text())
    assert usable_table(data) and data["version"] == version and "learning_rate" in data["fields"]
    assert sorted(p.name for p in table.parent.iterdir()) == sorted([LOCK_NAME, table.name])  # no temp file left


@needs_transformers
def test_table_from_a_real_subprocess_is_cached(probed_cache: tuple[Path, str, str]) -> None:
    home, version, location = probed_cache
    env = _env(home)
    cache = home / "tuitrain" / cache_path(version, location).name
    assert cache.name.startswith(f"training-args-{version}-")
    table = json.loads(cache.read_text())
    assert table["version"] == version and table["location"] == location and "learning_rate" in table["fields"]
    assert "bert" in table["model_types"]
    assert sorted(p.name for p in cache.parent.iterdir()) == sorted([cache.name, LOCK_NAME])  # no temp file left
    assert cache.stat().st_mode & 0o777 == 0o600  # the umask decides, as for any new file

    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0 and done.stderr == ""  # read from the cache: nothing to announce
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

    # The snapshot shipped with tuitrain is some version's table, as the probe prints it (less the folder);
    # where that is the installed version, it is the same table (else: remake it, see training_args_fill).
    snapshot = json.loads(SNAPSHOT.read_text())
    assert usable_table(snapshot) and "location" not in snapshot and _specs_from_table(snapshot)
    if snapshot["version"] == version:
        assert {**snapshot, "location": location} == table


def test_another_install_of_the_same_version_has_its_own_table(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_path("5.0.0", "/venv-a/transformers") != cache_path("5.0.0", "/venv-b/transformers")
    assert cache_path("5.0.0", "/venv-a/transformers").parent == tmp_path / "tuitrain"


@needs_transformers
def test_a_failing_probe_is_named_not_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers that cannot be imported: the first `validate` checks with the snapshot (its probe
    fails in the background and leaves its line); the next says in one line what failed (the probe's
    own last line) instead of silently checking nothing."""
    broken = tmp_path / "site" / "transformers"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    env = _env(tmp_path / "cache", tmp_path / "site")
    argv = [sys.executable, "-m", "tuitrain", "validate", "demo"]
    first = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert first.returncode == 0 and "TrainingArguments" not in first.stderr, first.stderr
    version = importlib.metadata.version("transformers")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    failed = failure_path(version, str(broken.resolve()))
    deadline = time.monotonic() + 300
    while not failed.exists() and time.monotonic() < deadline:  # the background probe, failing
        time.sleep(0.05)
    assert failed.exists()

    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    failure = (f"TrainingArguments of transformers {version} could not be read: python -m "
               "tuitrain.engine.training_args_probe failed (exit 1): ImportError: broken on purpose")
    assert any(failure in line and "[training] keys were not checked" in line and "warning: training:" in line
               for line in done.stderr.splitlines()), done.stderr
    assert not list(failed.parent.glob("training-args-*.json"))
    retries = [p for p in psutil.process_iter(["cmdline"]) if FILL_MODULE in (p.info["cmdline"] or [])
               and str(broken.resolve()) in (p.info["cmdline"] or [])]
    psutil.wait_procs(retries, timeout=300)  # the second command's retry, failing again: ended before tmp_path goes


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
