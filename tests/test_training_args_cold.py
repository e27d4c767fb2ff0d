"""The first command after installing or upgrading transformers does not wait for its TrainingArguments:
the snapshot shipped with tuitrain answers, the probe fills the cache in the background (detached, one
at a time, written atomically), and whatever the snapshot cannot vouch for is asked of the installed
table - so a profile is refused exactly as with a warm cache. No timings here (benchmarks/
training_args_cold.py measures them)."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import psutil
import pytest

from tuitrain.atomic import write_text_atomic
from tuitrain.profile import ProfileError, builtin_profile_path, load_profile
from tuitrain.profile import training_args as ta

REPO = Path(__file__).resolve().parent.parent
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers is not installed")
# Wrong in three ways the table decides: a key, a choice, a model type.
WRONG = ["training.learning_rat=0.1", "training.optim=adamw_foo", "model.config.model_type=berty"]


def env_with_cache(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def tuitrain(cache: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuitrain", *args], capture_output=True, text=True,
                          env=env_with_cache(cache), cwd=cwd, timeout=300)


@contextlib.contextmanager
def probe_lock_held(cache: Path) -> Iterator[None]:
    """Hold the lock every probe takes first: a background probe cannot finish meanwhile, and a
    command that waited for one would hang (and time out) instead of returning."""
    folder = cache / "tuitrain"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ta.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def background_fills(cache: Path) -> list[psutil.Process]:
    """The fill processes started for this cache folder (by any command)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if ta.FILL_MODULE in (proc.info["cmdline"] or []) and \
                    proc.environ().get("XDG_CACHE_HOME") == str(cache):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_for_fills(cache: Path) -> None:
    gone, alive = psutil.wait_procs(background_fills(cache), timeout=300)
    assert not alive, f"background probe still running after 300 s: {alive}"


def wait_until(condition: Callable[[], bool], limit: float = 120.0) -> bool:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def cached_tables(cache: Path) -> list[Path]:
    folder = cache / "tuitrain"
    return sorted(folder.glob("training-args-*.json")) if folder.exists() else []


@needs_transformers
def test_first_plan_with_an_empty_cache_does_not_wait_for_the_probe(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with probe_lock_held(cache):
        done = tuitrain(cache, "plan", "demo", "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "reading TrainingArguments" not in done.stderr  # nothing to wait for, nothing announced
        assert cached_tables(cache) == []  # plan returned while the probe could not have written
        fills = background_fills(cache)
        assert len(fills) == 1, fills  # the probe runs on, detached: its own session, not plan's
        assert os.getsid(fills[0].pid) == fills[0].pid != os.getsid(0)
        assert wait_until(lambda: fills[0].nice() > 0), "the probe is not niced"  # a run starting beside it goes first
    wait_for_fills(cache)
    [table] = cached_tables(cache)
    assert ta.usable_table(json.loads(table.read_text()))
    assert not [p for p in table.parent.iterdir() if p.name.endswith(".tmp")]

    again = tuitrain(cache, "plan", "demo", "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)
    assert again.returncode == 0 and "reading TrainingArguments" not in again.stderr
    assert background_fills(cache) == []  # a warm cache starts nothing


@needs_transformers
def test_a_wrong_profile_is_refused_alike_with_a_cold_and_a_warm_cache(tmp_path: Path) -> None:
    """An unknown [training] key, a choice not offered and a model type not known: the same lines,
    before and after the cache is filled (today's messages, did-you-mean included). Where the installed
    version is the snapshot's, the cold command does not wait for the probe; where it is another, the
    snapshot cannot vouch for what it lacks, so the cold command waits for the probe, and says so."""
    cache = tmp_path / "cache"
    snapshot = ta.snapshot_table()
    version = ta.transformers_version()
    same = snapshot is not None and snapshot["version"] == version
    args = ["plan", "demo", "--runs-dir", str(tmp_path / "runs")]
    for wrong in WRONG:
        args += ["--set", wrong]
    with probe_lock_held(cache) if same else contextlib.nullcontext():
        cold = tuitrain(cache, *args, cwd=tmp_path)
        if same:
            assert cached_tables(cache) == []
            # the installed table is the snapshot's (tests/test_profile_training_args.py proves it of the real
            # probe): written here, the background fill this command started finds it instead of importing
            # transformers once more (the probe filling a cold cache: the test above)
            location = ta.transformers_location()
            write_text_atomic(cache / "tuitrain" / ta.cache_path(version, location).name,
                              json.dumps({**snapshot, "location": location}))
    wait_for_fills(cache)
    assert len(cached_tables(cache)) == 1
    warm = tuitrain(cache, *args, cwd=tmp_path)
    assert cold.returncode == warm.returncode == 2
    lines = cold.stderr.splitlines()
    if not same:
        assert lines.pop(0) == f"tuitrain: reading TrainingArguments from transformers {version} (once per install)…"
    assert lines == warm.stderr.splitlines()
    assert any(line.endswith("training.learning_rat: unknown TrainingArguments key (from --set); did you mean "
                             "'learning_rate'?") for line in lines), cold.stderr
    assert any('training.optim: "adamw_foo" is not one of "adamw_torch"' in line for line in lines), cold.stderr
    assert any(line.endswith('model.config.model_type: "berty" is not a model type of the installed transformers '
                             "(from --set); did you mean 'bert'?") for line in lines), cold.stderr


# ------------------------------------------------------------------------------ in-process, with a fake install
# The installed transformers is "9.9.9" (a fake table: the snapshot's plus a key, a choice and a model type
# that the snapshot lacks); the snapshot is "9.0.0". The probe is a function that counts its calls.

@pytest.fixture
def fake_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    real = json.loads(ta.SNAPSHOT.read_text(encoding="utf-8"))
    snapshot = {**real, "version": "9.0.0"}
    installed = json.loads(json.dumps(real))
    installed.update(version="9.9.9", location="/fake/transformers")
    installed["fields"]["brand_new_key"] = {"kinds": ["bool"], "optional": False, "default": False, "choices": None,
                                            "help": "New in 9.9."}
    installed["fields"]["optim"]["choices"].append("brand_new_optim")
    installed["model_types"].append("brand_new_model")
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))

    for name in ("_tables", "_specs", "_failed", "_background", "_resolvers"):
        monkeypatch.setattr(ta, name, {})
    monkeypatch.setattr(ta, "_snapshot_table", None)
    monkeypatch.setattr(ta, "_failure", None)
    monkeypatch.setattr(ta, "SNAPSHOT", tmp_path / "snapshot.json")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(ta, "transformers_version", lambda: "9.9.9")
    monkeypatch.setattr(ta, "transformers_location", lambda: "/fake/transformers")
    state: dict[str, Any] = {"probes": 0, "started": 0, "said": [], "table": installed}

    def probe(python: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
        state["probes"] += 1
        return json.loads(json.dumps(state["table"]))

    def start(key: tuple[str, str | None]) -> None:
        state["started"] += 1

    monkeypatch.setattr(ta, "introspect_training_args", probe)
    monkeypatch.setattr(ta, "_fill_in_background", start)
    ta.report_reading_to(state["said"].append)
    yield state
    ta.report_reading_to(None)


def load(*overrides: str) -> list[str]:
    """The problems of the demo profile with these overrides ([] when it loads)."""
    try:
        load_profile(builtin_profile_path(), list(overrides))
    except ProfileError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_what_the_snapshot_vouches_for_needs_no_probe(fake_install: dict[str, Any]) -> None:
    assert load("training.optim=adamw_torch", "model.config.model_type=bert") == []
    assert fake_install["probes"] == 0 and fake_install["said"] == []
    assert fake_install["started"] >= 1  # the cache is filled in the background meanwhile


def test_what_only_the_installed_version_knows_is_accepted(fake_install: dict[str, Any]) -> None:
    for override in ("training.brand_new_key=true", "training.optim=brand_new_optim",
                     "model.config.model_type=brand_new_model"):
        ta._tables.clear()
        ta._specs.clear()
        ta._resolvers.clear()
        for path in (Path(os.environ["XDG_CACHE_HOME"]) / "tuitrain").glob("training-args-*"):
            path.unlink()
        before = fake_install["probes"]
        assert load(override) == [], override
        assert fake_install["probes"] == before + 1  # asked of the installed table, once
    assert fake_install["said"][-1] == "reading TrainingArguments from transformers 9.9.9 (once per install)…"


def test_a_refusal_is_the_installed_tables_cold_or_warm(fake_install: dict[str, Any]) -> None:
    """The snapshot lacks the wrong key, choice and model type: the installed table is asked (once,
    announced) and refuses them as it does from a warm cache."""
    cold = load(*WRONG)
    assert fake_install["probes"] == 1 and len(fake_install["said"]) == 1
    assert ta.cache_path("9.9.9", "/fake/transformers").exists()
    ta._tables.clear()
    ta._resolvers.clear()
    warm = load(*WRONG)  # now from the cache the cold check filled
    assert fake_install["probes"] == 1
    assert cold == warm and len(cold) == 3
    listed = len(fake_install["table"]["fields"]["optim"]["choices"]) - 12
    assert f"… ({listed} more)" in cold[1]  # the installed choices are listed, not the snapshot's
    assert cold[0].endswith("training.learning_rat: unknown TrainingArguments key (from --set); "
                            "did you mean 'learning_rate'?")


def test_the_same_version_as_the_snapshot_never_waits(fake_install: dict[str, Any], monkeypatch) -> None:
    monkeypatch.setattr(ta, "transformers_version", lambda: "9.0.0")
    assert len(load(*WRONG)) == 3
    assert fake_install["probes"] == 0 and fake_install["said"] == []


def test_a_kept_failure_is_said_and_retried(fake_install: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(python: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
        raise ta.TrainingArgsProbeError("python -m tuitrain.engine.training_args_probe failed (exit 1): ImportError: x")

    monkeypatch.setattr(ta, "introspect_training_args", broken)
    with pytest.raises(ta.TrainingArgsProbeError):
        ta.fill_cache("9.9.9", "/fake/transformers")
    assert ta.failure_path("9.9.9", "/fake/transformers").exists()
    started = fake_install["started"]
    assert ta.training_args_fields() is None
    assert ta.training_args_failure() == ("TrainingArguments of transformers 9.9.9 could not be read: python -m "
                                          "tuitrain.engine.training_args_probe failed (exit 1): ImportError: x")
    assert fake_install["started"] == started + 1  # tried again in the background
    monkeypatch.setattr(ta, "introspect_training_args",
                        lambda python=None, timeout=120.0: json.loads(json.dumps(fake_install["table"])))
    ta.fill_cache("9.9.9", "/fake/transformers")
    assert not ta.failure_path("9.9.9", "/fake/transformers").exists()


def test_an_upgrade_replaces_the_table_of_the_same_folder_only(fake_install: dict[str, Any]) -> None:
    table = fake_install["table"]
    ta.fill_cache("9.9.9", "/fake/transformers")
    ta.fill_cache("9.9.9", "/other/transformers")
    fake_install["table"] = {**table, "version": "9.9.10"}
    ta.fill_cache("9.9.10", "/fake/transformers")
    names = sorted(p.name for p in ta.cache_dir().glob("training-args-*"))
    assert names == sorted([ta.cache_path("9.9.10", "/fake/transformers").name,
                            ta.cache_path("9.9.9", "/other/transformers").name])


def test_no_background_probe_where_nothing_could_be_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ta, "_background", {})
    monkeypatch.setenv("XDG_CACHE_HOME", os.devnull + "/cache")
    started: list[Any] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    ta._fill_in_background(("9.9.9", "/fake/transformers"))
    assert started == []


def test_when_the_installed_table_cannot_be_read_the_snapshot_refuses(fake_install: dict[str, Any],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken install asked in the middle of a check: the snapshot's answers stand (a choice it does not
    list is not let through), and the next command says what failed."""
    def broken(python: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
        raise ta.TrainingArgsProbeError("python -m tuitrain.engine.training_args_probe failed (exit 1): ImportError: x")

    monkeypatch.setattr(ta, "introspect_training_args", broken)
    [problem] = load("training.optim=brand_new_optim")
    assert 'training.optim: "brand_new_optim" is not one of' in problem
    assert ta.training_args_fields() is None and "ImportError: x" in (ta.training_args_failure() or "")


def test_the_background_probe_waits_longer_than_a_command_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody waits for the niced background fill: under load importing transformers may take minutes, and a
    timeout there leaves a failure every later command reads (it failed so beside two busy loops)."""
    import tuitrain.profile.training_args_fill as fill

    seen: dict[str, float] = {}
    monkeypatch.setattr(fill, "fill_cache", lambda version, location, timeout=120.0: seen.update(timeout=timeout))
    monkeypatch.setattr(fill.os, "nice", lambda n: 0)
    assert fill.main(["--version", "9.9.9"]) == 0
    assert seen["timeout"] == fill.BACKGROUND_TIMEOUT and fill.BACKGROUND_TIMEOUT > 120
