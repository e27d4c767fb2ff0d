"""A resumed run's curves have its ancestors' joined on (issue 21, item 11): a child resumed from its parent's
checkpoint-20, and a grandchild resumed from the child's checkpoint-30, show one loss curve from step 1, each
ancestor's points up to where its child started, and say where they come from."""

from __future__ import annotations

import json
from pathlib import Path

from test_tui_app import make_app, run, until
from test_tui_fixtures import FINISHED, T0, _events, _record, _write, make_runs
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import read_record
from tuitrain.runs.view.lineage import read_lineage

CHILD = "20260101-003000-demo"
GRANDCHILD = "20260101-004000-demo"


def resumed(root: Path, run_id: str, parent: str, from_step: int, to_step: int, created: float) -> Path:
    """A finished run resumed from `parent`'s checkpoint-`from_step`, logging steps from_step+1 … to_step."""
    run_dir = root / run_id
    events = [e for e in _events(created, to_step, 10, 10, "train_end")
              if e["event"] in ("train_begin", "train_end") or e["step"] > from_step]
    checkpoint = root / parent / "output" / f"checkpoint-{from_step}"
    _write(run_dir / "run.json", json.dumps(_record(run_dir, run_id, "finished", created, 1, to_step, created + 40,
                                                    {"supervisor": 4_000_000}, parent=parent,
                                                    resume_from=str(checkpoint))))
    _write(run_dir / "events.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    _write(run_dir / "profile.toml", '[run]\nname = "demo"\n')
    _write(run_dir / "logs" / "rank-0.log", "resumed\n")
    return run_dir


def test_the_chain_is_joined_each_ancestor_up_to_its_childs_start(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    make_runs(root)
    resumed(root, CHILD, FINISHED, 20, 35, T0 + 1800)
    grandchild = resumed(root, GRANDCHILD, CHILD, 30, 50, T0 + 2400)
    lineage = read_lineage(RunPaths(grandchild), read_record(RunPaths(grandchild)))
    assert [(a.run_id, a.until_step) for a in lineage.ancestors] == [(FINISHED, 20), (CHILD, 30)]
    own = read_lineage(RunPaths(root / FINISHED), read_record(RunPaths(root / FINISHED)))
    assert own.ancestors == [] and own.note() is None
    from tuitrain.runs.view.live import EventsTail

    tail = EventsTail(RunPaths(grandchild).events)
    tail.poll()
    loss = lineage.joined(tail.series)["loss"]
    assert list(loss.steps) == [float(s) for s in range(1, 51)]  # 1-20 parent, 21-30 child, 31-50 its own
    assert lineage.note() == f"resumed: steps ≤ 20 from {FINISHED}, steps ≤ 30 from {CHILD}"


def test_a_parent_that_is_gone_ends_the_chain(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    child = resumed(root, CHILD, "20250101-000000-gone", 20, 30, T0)
    lineage = read_lineage(RunPaths(child), read_record(RunPaths(child)))
    assert lineage.ancestors == [] and lineage.joined({}) == {}


def test_the_monitor_of_a_resumed_run_draws_the_parents_curve_first(tmp_path: Path) -> None:
    make_runs(tmp_path / "runs")
    child = resumed(tmp_path / "runs", CHILD, FINISHED, 20, 35, T0 + 1800)
    app = make_app(tmp_path, open_run=child)

    async def script(pilot):
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", 20, "the monitor")
        await pilot.press("m")
        plot = app.screen.query_one("#plot-loss")
        await until(pilot, lambda: plot.lines and plot.lines[0].steps[0] == 1.0, 20, "the joined loss curve")
        assert f"steps ≤ 20 from {FINISHED}" in plot.title
        assert list(plot.lines[0].steps) == [float(s) for s in range(1, 36)]

    run(script, app, size=(120, 40))
