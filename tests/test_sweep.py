"""`run --sweep` (issue 22): one queued run per combination, named for what differs, at most --max-parallel at
once; a value a run would refuse queues nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli, record, wait_until_ended
from tuitrain.backends.sweep import (
    AT_ONCE_WITHOUT_LIMIT,
    MAX_SWEEP_RUNS,
    SweepError,
    SweepPoint,
    sweep_points,
    sweep_refusal,
    throttle,
)

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
    with pytest.raises(SweepError, match=needle):
        sweep_points(specs)


def test_a_sweep_that_would_cost_more_than_it_says_is_refused_in_one_line() -> None:
    with pytest.raises(SweepError, match=f"more than {MAX_SWEEP_RUNS} in one sweep; split it"):
        sweep_points([f"run.seed={','.join(map(str, range(MAX_SWEEP_RUNS + 1)))}"])
    many = sweep_points([f"run.seed={','.join(map(str, range(AT_ONCE_WITHOUT_LIMIT + 1)))}"])
    assert "add --max-parallel N" in (sweep_refusal(many, [], None) or "")
    assert sweep_refusal(many, [], 1) is None
    assert sweep_refusal(many[:AT_ONCE_WITHOUT_LIMIT], [], None) is None
    assert sweep_refusal(many, ["run.seed=7"], 1) == \
        "--sweep run.seed and --set run.seed=…: both set run.seed; give its values in --sweep only"


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


def test_a_sweep_is_one_line_in_the_queue_unless_expanded() -> None:
    from tuitrain.runs.queue.look import queue_lines

    def row(position: int, run: str, index: int | None) -> dict:
        sweep = {"id": "s1", "index": index, "of": 3, "label": f"lr={index}"} if index else None
        return {"position": position, "run": run, "user": "ann", "gpus": [], "any_gpus": 0, "sweep": sweep,
                "waits": [f"after {run}-before"]}

    rows = [row(1, "a", None), row(2, "b", 2), row(3, "c", 3)]
    lines = queue_lines(rows)
    assert lines[0] == "  1  a  ann  CPU" and lines[1] == "       after a-before"
    assert lines[2].startswith("  2  sweep s1  ann  CPU  2 of 3 runs waiting (lr=2, lr=3)") and len(lines) == 4
    assert lines[3] == "       after b-before"  # the first waiting run's waits
    assert [line for line in queue_lines(rows, expand=True) if not line.startswith(" " * 7)] == [
        "  1  a  ann  CPU", "  2  b  ann  CPU", "  3  c  ann  CPU"]


def test_a_sweeps_runs_are_recorded_together_and_shown_as_one_in_the_queue(queue_env: Path) -> None:
    runs = queue_env
    slow = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set",
            "training.eval_strategy=no", "--set", "training.save_strategy=no"]
    done = cli("run", "demo", "--sweep", "run.seed=1,2,3", "--max-parallel", "1", *slow, runs_dir=runs)
    assert done.returncode == 0, done.stderr
    ids = done.stdout.split()
    sweeps = [record(runs / run_id)["queue"]["sweep"] for run_id in ids]
    assert len({s["id"] for s in sweeps}) == 1 and [(s["index"], s["of"]) for s in sweeps] == [(1, 3), (2, 3), (3, 3)]
    assert [s["label"] for s in sweeps] == ["seed=1", "seed=2", "seed=3"]
    try:
        shown = cli("queue", runs_dir=runs).stdout
        assert f"sweep {sweeps[0]['id']}" in shown and "2 of 3 runs waiting (seed=2, seed=3)" in shown, shown
        expanded = cli("queue", "--expand", runs_dir=runs).stdout
        assert ids[1] in expanded and ids[2] in expanded and "sweep " not in expanded, expanded
    finally:
        for run_id in reversed(ids):
            cli("stop", run_id, "--now", runs_dir=runs)
        for run_id in ids:
            wait_until_ended(runs / run_id, 300)


def test_C_on_a_run_of_a_sweep_compares_the_whole_sweep(tmp_path: Path) -> None:
    """With no run marked, C on a run of a sweep opens Compare on every run of it (marked together)."""
    import json

    from test_tui_app import make_app, run, until
    from test_tui_fixtures import FAILED, FINISHED, RUNNING, make_runs

    made = make_runs(tmp_path / "runs")
    for run_id, index in ((FINISHED, 1), (FAILED, 2)):
        path = tmp_path / "runs" / run_id / "run.json"
        rec = json.loads(path.read_text())
        rec["queue"] = {"dir": "/tmp/q", "gpus": [], "after": [],
                        "sweep": {"id": "20260101-000000-demo", "index": index, "of": 2, "label": f"seed={index}"}}
        path.write_text(json.dumps(rec))
    assert RUNNING in {p.name for p in made.values()} or (tmp_path / "runs" / RUNNING).exists()
    app = make_app(tmp_path)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        order = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(3)]
        table.move_cursor(row=order.index(FAILED))
        await pilot.press("C")
        await until(pilot, lambda: type(app.screen).__name__ == "CompareScreen", what="the compare screen")
        assert sorted(r.id for r in app.screen.runs) == sorted([FINISHED, FAILED])

    run(script, app, size=(120, 40))


def test_a_sweep_cut_short_while_being_queued_leaves_nothing_queued(queue_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt (Ctrl-C) after two of four runs were queued: those two were held, never start, and leave the
    queue; nothing of the sweep runs."""
    import argparse

    from tuitrain.backends.local import LocalBackend
    from tuitrain.cli.sweeping import cmd_sweep

    queue = LocalBackend.queue
    calls: list[int] = []

    def interrupted_third(self, *args, **kwargs):  # the user's Ctrl-C, as the third run is being made
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return queue(self, *args, **kwargs)

    monkeypatch.setattr(LocalBackend, "queue", interrupted_third)
    args = argparse.Namespace(profile="demo", set=QUICK[1::2], sweep=["run.seed=1,2,3,4"], max_parallel=None,
                              runs_root=queue_env, after=None, after_ok=None)
    with pytest.raises(KeyboardInterrupt):
        cmd_sweep(args)
    made = sorted(queue_env.iterdir())
    assert len(made) == 2
    for run_dir in made:
        ended = wait_until_ended(run_dir, 120)
        assert ended["status"] == "cancelled" and ended["started"] is None, ended
        assert "its sweep was interrupted while being queued" in ended["error"], ended["error"]
