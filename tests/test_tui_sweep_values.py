"""A sweep as one thing (issue 38): its runs stay together on Home whatever the sort (a branch drawn before each
label), and Compare on one of them, with none marked, shows the question a sweep is for: a table of each run's values
against its final and best value of the metric in view, the best first, the winner marked; another metric re-sorts
it (higher is better for an accuracy)."""

from __future__ import annotations

import json
from pathlib import Path

from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FAILED, FINISHED, RUNNING, T0
from test_tui_home_table import copy_run, shown_ids

SWEEP_ID = "20260101-002500-demo"
# learning rate → (its loss and eval_loss × this, its eval_accuracy + this): the best eval_loss is 3e-05's, the
# best accuracy 1e-05's
SWEPT = {"1e-05": (1.2, 0.0), "3e-05": (0.8, -0.2), "1e-04": (1.0, -0.1)}
SWEEP = {value: f"20260101-0025{i:02d}-demo-learning_rate-{value}" for i, value in enumerate(SWEPT)}


def sweep_of_three(folder: Path) -> None:
    """Three ended runs of one sweep, as `run --sweep training.learning_rate=…` records them, each with curves of
    its own."""
    for i, (value, (scale, bonus)) in enumerate(SWEPT.items()):
        run_id = SWEEP[value]
        copy_run(folder, FINISHED, run_id, f"demo learning_rate={value}", T0 + 1500 + i)
        run_dir = folder / "runs" / run_id
        record = json.loads((run_dir / "run.json").read_text())
        record["queue"] = {"sweep": {"id": SWEEP_ID, "index": i + 1, "of": 3, "label": f"learning_rate={value}"}}
        (run_dir / "run.json").write_text(json.dumps(record))
        events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        for event in events:
            for key in ("loss", "eval_loss"):
                if key in event:
                    event[key] = round(event[key] * scale, 4)
            if "eval_accuracy" in event:
                event["eval_accuracy"] = round(event["eval_accuracy"] + bonus, 4)
        (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_results_are_sorted_by_the_metric_with_the_winner_marked():
    from tuitrain.rundir.best import best_rule
    from tuitrain.tui.sweep_results import greater_is_better, label_values, result, table

    assert label_values("learning_rate=3e-05 seed=1") == (("learning_rate", "3e-05"), ("seed", "1"))
    assert label_values("demo") == (("run", "demo"),)
    lines = [result("a", "lr=1 seed=1", [0.9, 0.5, 0.6], False), result("b", "lr=2 seed=1", [0.8, 0.4, float("nan")], False),
             result("c", "lr=3 seed=2", [], False)]
    header, rows = table(lines, "eval_loss", False)
    assert header == ["", "lr", "seed", "final eval_loss", "best eval_loss"]
    assert rows == [["★", "2", "1", "nan", "0.4"], ["", "1", "1", "0.6", "0.5"], ["", "3", "2", "-", "-"]]
    # the runs' own rule when it is the metric they choose their best by; else the metric's name says
    assert greater_is_better("eval_loss", [best_rule("loss", True)]) is True
    assert greater_is_better("eval_f1", [best_rule("loss", True)]) is True
    assert greater_is_better("loss", []) is False


def test_a_sweeps_runs_stay_together_and_compare_answers_which_values_won(base):  # noqa: F811
    sweep_of_three(base)
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        title = app.screen.query_one("#runs-title")
        await until(pilot, lambda: table.row_count == 6, what="six runs")
        for _ in range(3):
            await pilot.press("o")  # by loss: the sweep's runs together where its first one sorts
        await until(pilot, lambda: "by loss ↑" in title.text, what="sorted by loss")
        assert shown_ids(app) == [SWEEP["3e-05"], SWEEP["1e-04"], SWEEP["1e-05"], FINISHED, RUNNING, FAILED]
        runs = [str(table.get_row_at(i)[0]) for i in range(3)]
        assert [r[:2] for r in runs] == ["┌ ", "├ ", "└ "] and runs[0].endswith("learning_rate=3e-05")
        assert not str(table.get_row_at(3)[0]).startswith(("┌", "├", "└"))
        # C on one of its runs, none marked: the whole sweep, and its values against the metric at once
        table.move_cursor(row=1)
        await pilot.press("C")
        await until(pilot, lambda: type(app.screen).__name__ == "CompareScreen", what="compare")
        compare = app.screen
        values = compare.query_one("#values")
        await until(pilot, lambda: values.display and values.rows, what="the values table")
        assert len(compare.runs) == 3 and compare.metric == "loss"
        await pilot.press("slash", *"eval_loss", "enter")
        await until(pilot, lambda: compare.metric == "eval_loss" and values.header[-1] == "best eval_loss",
                    what="eval_loss in view")
        assert values.header == ["", "learning_rate", "final eval_loss", "best eval_loss"]
        assert [r[:2] for r in values.rows] == [["★", "3e-05"], ["", "1e-04"], ["", "1e-05"]]
        assert [r[3] for r in values.rows] == ["0.1334", "0.1668", "0.2002"]  # each run's best, the lowest first
        assert values.heading == "3 runs by best eval_loss, lower is better · ★ the winner"
        lines = [strip.text for strip in app.screen._compositor.render_strips()]
        assert any("★" in line and "3e-05" in line and "0.1334" in line for line in lines), lines
        # an accuracy: the highest first
        await pilot.press("slash", "ctrl+u", *"eval_accuracy", "enter")
        await until(pilot, lambda: compare.metric == "eval_accuracy" and values.header[-1] == "best eval_accuracy",
                    what="eval_accuracy in view")
        assert [r[:2] for r in values.rows] == [["★", "1e-05"], ["", "1e-04"], ["", "3e-05"]]
        assert "higher is better" in values.heading
        await pilot.press("v")  # v hides it, and shows it again
        await until(pilot, lambda: not values.display, what="the table hidden")

    run(script, app, size=(120, 40))


def test_compare_of_runs_of_no_sweep_shows_the_values_table_on_v(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        for row in range(3):  # space marks the highlighted run and stays on it
            table.move_cursor(row=row)
            await pilot.press("space")
        await pilot.press("C")
        await until(pilot, lambda: type(app.screen).__name__ == "CompareScreen", what="compare")
        values = app.screen.query_one("#values")
        await until(pilot, lambda: app.screen.metric == "loss", what="the curves")
        assert not values.display  # no sweep: not shown unasked
        await pilot.press("v")
        await until(pilot, lambda: values.display and values.rows, what="the table")
        assert values.header[:2] == ["", "run"] and values.rows[0][0] == "★" and len(values.rows) == 3
        assert [r[1] for r in values.rows] == ["00:00 demo", "00:20 demo", "00:10 demo"]  # by loss: each's lowest

    run(script, app, size=(120, 40))

