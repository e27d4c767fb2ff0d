"""Compare runs (issue 13): space marks runs on Home, C overlays their curves; the metric list
filters as one types; x as step, epoch or time; EMA smoothing; log scale; throughput as a curve."""

from __future__ import annotations

import json
import math

from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FAILED, FINISHED, RUNNING, T0


def log_events(run_dir) -> list[dict]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "log"]


async def open_compare(pilot, ids: list[str]):
    """Home: mark `ids` with space (each highlighted first), then C."""
    app = pilot.app
    table = app.screen.query_one("#runs")
    await until(pilot, lambda: table.row_count == 3, what="three runs")
    order = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(3)]
    for run_id in ids:
        table.move_cursor(row=order.index(run_id))
        await pilot.press("space")
    await pilot.press("C")
    await until(pilot, lambda: type(app.screen).__name__ == "CompareScreen", what="the compare screen")
    screen = app.screen
    await until(pilot, lambda: screen.metric is not None and screen.query_one("#overlay").curves, what="curves")
    return screen


def test_space_marks_runs_and_C_overlays_their_loss_one_colour_a_run(base):  # noqa: F811
    from tuitrain.tui.widgets.overlay_plot import render_overlay

    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        screen = await open_compare(pilot, [FINISHED, FAILED])
        plot = screen.query_one("#overlay")
        assert screen.metric == "loss"
        assert [c.label for c in plot.curves] == [f"{FINISHED} · demo", f"{FAILED} · demo"]
        assert len({c.style for c in plot.curves}) == 2
        finished = [e["loss"] for e in log_events(base / "runs" / FINISHED)]
        assert list(plot.curves[0].ys) == finished and list(plot.curves[0].xs) == list(range(1, 41))
        assert len(plot.curves[1].ys) == 17  # the failed run stopped at step 17
        # what the screen shows: a legend line a run, then dots in each run's colour
        rendered = render_overlay(plot.curves, plot.size.width, plot.size.height)
        lines = rendered.plain.splitlines()
        assert FINISHED in lines[0] and "demo" in lines[0] and FAILED in lines[1]
        styles = {str(span.style) for span in rendered.spans if any(
            0x2800 < ord(ch) <= 0x28FF for ch in rendered.plain[span.start:span.end])}
        assert {c.style for c in plot.curves} <= styles
        assert "step 1" in lines[-1] and lines[-1].rstrip().endswith("40")
        # the marks stay on Home, shown in the RUN column
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
        marked = [str(table.get_row_at(i)[0]) for i in range(3)]
        assert sorted(m for m in marked if m.startswith("✓")) == ["✓ 00:00 demo", "✓ 00:10 demo"]  # FINISHED, FAILED
        assert app.screen.marked == [FINISHED, FAILED]

    run(script, app)


def test_typing_filters_the_metrics_and_the_keys_change_x_smoothing_and_scale(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        screen = await open_compare(pilot, [FINISHED, RUNNING])
        plot = screen.query_one("#overlay")
        options = screen.query_one("#metrics")
        names = [options.get_option_at_index(i).id for i in range(options.option_count)]
        assert names[:2] == ["loss", "eval_loss"] and names[-1] == "steps/s"
        assert {"eval_accuracy", "eval_f1", "learning_rate", "grad_norm"} <= set(names)
        assert "eval_runtime" not in names and "epoch" not in names

        await pilot.press("slash", "a", "c", "c")
        await until(pilot, lambda: options.option_count == 1, what="the filtered list")
        assert screen.metric == "eval_accuracy"
        assert str(options.get_option_at_index(0).prompt) == "accuracy"
        await until(pilot, lambda: plot.curves and len(plot.curves[0].ys) == 4, what="the accuracy curve")
        await pilot.press("enter")  # back to the list: keys are keys again
        await until(pilot, lambda: screen.focused is options, what="the list focused")
        await pilot.press("slash", "ctrl+u", "l", "o", "s", "s")
        await until(pilot, lambda: options.option_count == 2, what="loss and eval_loss")
        assert screen.metric == "loss"
        await pilot.press("escape")  # leaves the filter, not the screen
        await until(pilot, lambda: screen.focused is options, what="the list focused")
        assert type(app.screen).__name__ == "CompareScreen"

        events = log_events(base / "runs" / FINISHED)
        loss = [e["loss"] for e in events]
        await pilot.press("x")
        await until(pilot, lambda: plot.x_label == "epoch", what="x as epoch")
        assert list(plot.curves[0].xs) == [e["epoch"] for e in events]
        await pilot.press("x")
        await until(pilot, lambda: plot.x_label == "time", what="x as time")
        assert plot.curves[0].xs[0] == 0.5 and plot.curves[0].xs[-1] == 20.0  # since its train_begin
        assert plot.render().plain.splitlines()[-1].rstrip().endswith("20s")
        await pilot.press("x")
        await until(pilot, lambda: plot.x_label == "step", what="x as step again")

        await pilot.press("s")
        await until(pilot, lambda: screen.smoothing == 0.6, what="smoothing 0.6")
        ys = plot.curves[0].ys
        assert ys[0] == loss[0]  # debiased: the first point is not pulled towards 0
        assert math.isclose(ys[1], (0.6 * 0.4 * loss[0] + 0.4 * loss[1]) / (1 - 0.6 ** 2))
        def wiggle(values):
            return max(abs(a - b) for a, b in zip(values[1:], values[:-1], strict=True))

        assert wiggle(ys) < wiggle(loss)
        await pilot.press("s", "s")
        await until(pilot, lambda: screen.smoothing == 0.0, what="no smoothing")
        assert list(plot.curves[0].ys) == loss

        await pilot.press("l")
        await until(pilot, lambda: screen.log_y, what="log scale")
        assert [round(v, 9) for v in plot.curves[0].ys] == [round(math.log10(v), 9) for v in loss]
        status = screen.query_one("#compare-status").text
        assert "x step" in status and "smoothing 0" in status and "y log" in status

    run(script, app)


def test_throughput_is_a_curve_and_a_live_run_keeps_drawing(base):  # noqa: F811
    app = make_app(base)
    running = base / "runs" / RUNNING

    async def script(pilot):
        screen = await open_compare(pilot, [])  # none marked: the highlighted run (the newest, running)
        plot = screen.query_one("#overlay")
        assert [c.label for c in plot.curves] == [f"{RUNNING} · demo"]
        options = screen.query_one("#metrics")
        options.highlighted = [options.get_option_at_index(i).id for i in range(options.option_count)].index("steps/s")
        await until(pilot, lambda: screen.metric == "steps/s", what="throughput")
        assert list(plot.curves[0].ys) == [2.0] * 23  # a step every 0.5 s in the fixture
        with open(running / "events.jsonl", "a") as handle:
            for step in (24, 25):  # slower: one step a second
                handle.write(json.dumps({"event": "log", "time": T0 + 1200 + 10 + 23 * 0.5 + (step - 23),
                                         "step": step, "loss": 0.3, "epoch": step / 64}) + "\n")
        await until(pilot, lambda: len(plot.curves[0].ys) == 25, what="the new points")
        assert list(plot.curves[0].ys[-2:]) == [1.0, 1.0]
        assert plot.curves[0].last == "1"

    run(script, app)


def test_compare_is_in_the_help_and_the_palette(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Compare" in commands
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="the help")
        from textual.widgets import Static

        tables = [w.content for w in app.screen.query(Static) if hasattr(w.content, "columns")]
        keys = [str(cell) for table in tables for cell in table.columns[0]._cells]
        assert "C" in keys and "space" in keys

    run(script, app)


def test_the_plot_keeps_a_one_point_spike_among_10000_and_leaves_gaps():
    from tuitrain.tui.widgets.overlay_plot import Curve, render_overlay

    n = 10_000
    ys = [1.0] * n
    ys[6_543] = 5.0  # one spike: it must reach the top row
    ys[2_000:2_500] = [math.nan] * 500
    text = render_overlay([Curve("run", list(range(n)), ys, "cyan")], 60, 12)
    rows = text.plain.splitlines()[1:-1]  # the legend, the body, the x axis
    body = [row.split("┤", 1)[-1].split("│", 1)[-1] for row in rows]
    assert any(0x2800 < ord(ch) <= 0x28FF for ch in body[0])  # the spike
    bottom = body[-1]
    first_dot, cols = next(i for i, ch in enumerate(bottom) if ch != " "), len(bottom)
    gap = [i for i in range(first_dot, cols) if bottom[i] == " "]
    # 500 of 10,000 points are a gap: about 5 % of the columns on the bottom row are empty
    assert gap and abs(len(gap) - 0.05 * cols) <= 2


def test_samples_and_tokens_per_second_are_curves_where_the_run_says_its_batch(tmp_path):
    """Throughput as users compare it (issue 13): samples/s = steps/s × per-device batch × accumulation × processes
    (training_args.json and run.json), tokens/s from the Trainer's num_input_tokens_seen; a run that says neither
    (a script) has steps/s only."""
    from tuitrain.tui.curves import RunCurves, samples_per_step

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert samples_per_step(run_dir) is None
    (run_dir / "run.json").write_text(json.dumps({"status": "finished", "num_processes": 2}))  # as a real one: a status
    (run_dir / "training_args.json").write_text(json.dumps({"per_device_train_batch_size": 16,
                                                             "gradient_accumulation_steps": 4}))
    assert samples_per_step(run_dir) == 128.0
    events = [{"event": "train_begin", "time": 100.0, "step": 0},
              {"event": "log", "time": 101.0, "step": 2, "loss": 1.0, "num_input_tokens_seen": 4000},
              {"event": "log", "time": 103.0, "step": 6, "loss": 0.9, "num_input_tokens_seen": 12000}]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    curves = RunCurves(run_dir / "events.jsonl", samples_per_step=samples_per_step(run_dir))
    curves.poll()
    assert list(curves.curves["steps/s"].values) == [2.0, 2.0]
    assert list(curves.curves["samples/s"].values) == [256.0, 256.0]
    assert list(curves.curves["tokens/s"].values) == [4000.0]  # between the two logs that counted tokens
    assert "num_input_tokens_seen" not in curves.curves
    bare = RunCurves(run_dir / "events.jsonl")
    bare.poll()
    assert "samples/s" not in bare.curves and "steps/s" in bare.curves
