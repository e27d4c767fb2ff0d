"""`run --sweep` (issue 22): one queued run per combination, named for what differs, at most --max-parallel at
once; a value a run would refuse queues nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli, record, wait_until_ended
from tuitrain.cli.errors import CliError
from tuitrain.cli.sweeping import SweepPoint, sweep_points, throttle

QUICK = ["--set", "training.max_steps=3", "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no"]


def test_every_combination_in_the_order_written() -> None:
    points = sweep_points(["training.learning_rate=1e-5,3e-5", "run.seed=1,2"])
    assert points[0] == SweepPoint(("training.learning_rate=1e-5", "run.seed=1"), "learning_rate=1e-5 seed=1")
    assert [p.label for p in points] == ["learning_rate=1e-5 seed=1", "learning_rate=1e-5 seed=2",
                                         "learning_rate=3e-5 seed=1", "learning_rate=3e-5 seed=2"]


@pytest.mark.parametrize(("specs", "needle"), [
    (["training.learning_rate"], "needs section.key=values"),
    (["learning_rate=1,2"], "needs section.key=values"),
    (["training.learning_rate=1e-5,"], "an empty value"),
    (["training.learning_rate=1e-5"], "a sweep needs two values or more"),
    (["run.seed=1,2", "run.seed=3"], "given twice"),
])
def test_a_bad_sweep_is_one_line(specs: list[str], needle: str) -> None:
    with pytest.raises(CliError, match=needle):
        sweep_points(specs)


def test_throttle_waits_for_the_run_n_places_before() -> None:
    assert [throttle(i, 2) for i in range(5)] == [None, None, 0, 1, 2]
    assert [throttle(i, None) for i in range(3)] == [None, None, None]


@pytest.fixture
def queue_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    return tmp_path / "runs"


def test_a_sweep_queues_a_run_per_value_and_runs_at_most_n_at_once(queue_env: Path) -> None:
    runs = queue_env
    done = cli("run", "demo", "--sweep", "training.learning_rate=1e-4,3e-4,5e-4", "--max-parallel", "2", *QUICK,
               runs_dir=runs)
    assert done.returncode == 0, done.stderr
    ids = done.stdout.split()
    assert len(ids) == 3 and "at most 2 at once" in done.stderr
    ended = [wait_until_ended(runs / run_id, 300) for run_id in ids]
    assert [r["status"] for r in ended] == ["finished"] * 3, [r.get("cause") for r in ended]
    names = [record(runs / run_id)["profile"] for run_id in ids]
    assert names == ["demo learning_rate=1e-4", "demo learning_rate=3e-4", "demo learning_rate=5e-4"], names
    assert [d["run"] for d in ended[2]["queue"]["after"]] == [ids[0]]  # the third waited for the first
    assert ended[2]["started"] >= ended[0]["ended"]


def test_a_value_run_would_refuse_queues_nothing(queue_env: Path) -> None:
    runs = queue_env
    done = cli("run", "demo", "--sweep", "training.learning_rate=1e-4,abc", *QUICK, runs_dir=runs)
    assert done.returncode != 0 and "training.learning_rate" in done.stderr and "(from --set)" in done.stderr
    assert "Traceback" not in done.stderr
    assert not runs.exists() or list(runs.iterdir()) == []
    alone = cli("run", "demo", "--max-parallel", "2", runs_dir=runs)
    assert alone.returncode == 2 and "--max-parallel limits the runs of a --sweep" in alone.stderr
