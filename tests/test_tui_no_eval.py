"""A run that does not evaluate (issue 28, item 6): its metrics tab says so, from the run's frozen profile, and
how to evaluate (e now while it runs; a resume with training.eval_strategy=steps, and validation data where it
has none), instead of "waiting for values…" for ever. The overrides it names are ones the resume dialog takes.

The runs are the app's fixed run directories (tests/test_tui_fixtures.py) with their frozen profile and events
rewritten as a run without evaluation writes them."""

from __future__ import annotations

import json
from pathlib import Path

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import FINISHED, RUNNING
from test_tui_narrow import shown_rows

DEMO = Path(__file__).parent.parent / "tuitrain" / "profiles" / "demo.toml"


def without_evaluation(run_dir: Path, profile: str) -> None:
    """The run as one that never evaluated: its frozen profile is `profile`; no evaluate event."""
    (run_dir / "profile.toml").write_text(profile, encoding="utf-8")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    kept = [e for e in events if e["event"] != "evaluate"]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in kept))


def eval_plot_text(monitor) -> str:
    return " ".join(row.strip() for row in shown_rows(monitor.query_one("#plot-eval")))


async def metrics_tab(pilot, app, run_id: str):
    monitor = await open_run(pilot, app, run_id)
    await pilot.press("m")
    await until(pilot, lambda: monitor.query_one("#tabs").active == "tab-metrics", what="the metrics tab")
    await until(pilot, lambda: monitor.query_one("#plot-loss").lines, what="the loss curve")
    return monitor


def test_a_live_run_with_eval_strategy_no_says_it_does_not_evaluate_and_how_to(base):  # noqa: F811
    run_dir = base / "runs" / RUNNING
    without_evaluation(run_dir, '[data]\ngenerate = "sentiment-words"\n\n[training]\nmax_steps = 40\neval_strategy = "no"\n')
    app = make_app(base)

    async def script(pilot):
        monitor = await metrics_tab(pilot, app, RUNNING)
        await until(pilot, lambda: "does not evaluate" in eval_plot_text(monitor), what="the plot saying so")
        text = eval_plot_text(monitor)
        assert 'this run does not evaluate: training.eval_strategy = "no"' in text, text
        assert "e evaluates once now" in text
        assert "stop it (s), then resume it (R) with training.eval_strategy=steps" in text
        assert "waiting for values" not in text and "data.validation_file" not in text
        assert [line.label for line in monitor.query_one("#plot-loss").lines] == ["train"]
        # asked once (e): the values it gave show, and the note goes
        with (run_dir / "events.jsonl").open("a") as events:
            events.write(json.dumps({"event": "evaluate", "time": 1_767_227_000.0, "step": 23, "eval_loss": 0.31,
                                     "eval_accuracy": 0.8}) + "\n")
        await until(pilot, lambda: monitor.query_one("#plot-eval").lines, what="the evaluation's values")
        await until(pilot, lambda: "does not evaluate" not in eval_plot_text(monitor), what="the note to go")
        assert "accuracy 0.8" in eval_plot_text(monitor)

    run(script, app)


def test_an_ended_run_without_validation_data_names_both_overrides(base):  # noqa: F811
    without_evaluation(base / "runs" / FINISHED, '[data]\ntrain_file = "train.csv"\n\n[training]\nmax_steps = 40\n')
    app = make_app(base)

    async def script(pilot):
        monitor = await metrics_tab(pilot, app, FINISHED)
        await until(pilot, lambda: "does not evaluate" in eval_plot_text(monitor), what="the plot saying so")
        text = eval_plot_text(monitor)
        assert 'training.eval_strategy is not set ("no", TrainingArguments\' default)' in text, text
        assert "it has no validation data" in text
        assert "resume it (R) with training.eval_strategy=steps data.validation_file=<file>" in text
        assert "e evaluates" not in text and "stop it" not in text  # it has ended: nothing to ask now

    run(script, app)


def test_a_script_run_or_one_that_evaluates_waits_for_values(base):  # noqa: F811
    """A [script] run's own TrainingArguments decide: the monitor cannot know, and says nothing new."""
    without_evaluation(base / "runs" / RUNNING, '[script]\npath = "train.py"\n\n[training]\neval_strategy = "no"\n')
    app = make_app(base)

    async def script(pilot):
        monitor = await metrics_tab(pilot, app, RUNNING)
        await until(pilot, lambda: "waiting for values" in eval_plot_text(monitor), what="the plot waiting")
        assert "does not evaluate" not in eval_plot_text(monitor)

    run(script, app)


def test_the_overrides_it_names_are_ones_resume_takes(tmp_path):
    """The demo profile frozen with eval_strategy "no", as `run demo --set training.eval_strategy=no` freezes it:
    the resume dialog's check (the CLI's parser and validator) takes the overrides the note names."""
    import tomli_w

    from tuitrain.profile import load_profile
    from tuitrain.tui.screens.resume import override_problems
    from tuitrain.tui.widgets.metrics import no_evaluation

    frozen = tmp_path / "profile.toml"
    frozen.write_text(tomli_w.dumps(load_profile(DEMO, ["training.eval_strategy=no"]).data))
    found = no_evaluation(frozen)
    assert found is not None and found.validation == "data"
    note = found.note(live=False)
    overrides = note.rsplit(" with ", 1)[1].split()
    assert overrides == ["training.eval_strategy=steps"] and override_problems(frozen, overrides) == []

    # files without validation: the note names data.validation_file too, and with a file the dialog takes it
    (tmp_path / "train.csv").write_text("text,label\ngood,1\nbad,0\n")
    (tmp_path / "validation.csv").write_text("text,label\nfine,1\npoor,0\n")
    data = load_profile(DEMO, ["training.eval_strategy=no"]).data
    data["data"] = {**{k: v for k, v in data["data"].items() if k not in ("generate", "num_train", "num_validation")},
                    "train_file": str(tmp_path / "train.csv")}
    frozen.write_text(tomli_w.dumps(data))
    found = no_evaluation(frozen)
    assert found is not None and found.validation == "none"
    overrides = found.note(live=False).rsplit(" with ", 1)[1].split()
    assert overrides == ["training.eval_strategy=steps", "data.validation_file=<file>"]
    given = [overrides[0], f"data.validation_file={tmp_path / 'validation.csv'}"]
    assert override_problems(frozen, given) == []
    assert override_problems(frozen, overrides[:1])  # steps alone, with no validation data: refused


def test_evaluate_now_on_a_live_run_without_validation_data_says_why_and_asks_nothing(base):  # noqa: F811
    run_dir = base / "runs" / RUNNING
    without_evaluation(run_dir, '[data]\ntrain_file = "train.csv"\n\n[training]\nmax_steps = 40\n')
    app = make_app(base)

    async def script(pilot):
        monitor = await metrics_tab(pilot, app, RUNNING)
        await until(pilot, lambda: "does not evaluate" in eval_plot_text(monitor), what="the plot saying so")
        await pilot.press("e")
        await until(pilot, lambda: any("no validation data" in n.message for n in app._notifications),
                    what="the word that there is nothing to evaluate on")
        assert not (run_dir / "control" / "evaluate-now").exists()  # the rank, which would refuse it, is not asked

    run(script, app, notifications=True)
