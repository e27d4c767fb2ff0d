"""Issue 21, defect 1: checkpoints said where they matter. A checkpoint used to make a toast on whatever screen
was open (six stacked on the GPUs screen covered its table; a monitor showed other runs' toasts). Now Home
marks a live run's row and counts what is new ('3 checkpoints of 2 runs'); a run's own monitor says its own,
once a poll; every other screen stays clear."""

from __future__ import annotations

import json
from pathlib import Path

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import RUNNING, T0
from test_tui_home_table import copy_run

OTHER = "20260101-003000-other"  # a second live run


def save(run_dir: Path, *steps: int) -> None:
    """The run's rank 0 writes these checkpoints' folders, then their save events (in one write: one poll sees them
    all), as the Trainer calls on_save once a checkpoint is written."""
    for step in steps:
        (run_dir / "output" / f"checkpoint-{step}").mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"event": "save", "time": T0 + 3000 + step, "step": step,
                                "checkpoint": str(run_dir / "output" / f"checkpoint-{step}")}) + "\n" for step in steps)
    with open(run_dir / "events.jsonl", "a") as handle:
        handle.write(lines)


def checkpoint_toasts(app) -> list[str]:
    return [n.message for n in app._notifications if n.title == "Checkpoint"]


def status_of(app, run_id: str) -> str:
    return str(app.screen.query_one("#runs").get_cell(run_id, "STATUS"))


def test_checkpoints_of_several_runs_cover_no_table_and_are_news_on_home(base):  # noqa: F811
    from textual.widgets._toast import Toast

    copy_run(base, RUNNING, OTHER, "other", T0 + 1800)
    runs = base / "runs"
    record = json.loads((runs / OTHER / "run.json").read_text())
    record.update(status="running", ended=None)  # copy_run ends it: this one is live
    (runs / OTHER / "run.json").write_text(json.dumps(record))
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: app.screen.query_one("#runs").row_count == 4, what="four runs")
        await until(pilot, lambda: "running" in status_of(app, OTHER), what="the other run live")
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        save(runs / RUNNING, 24, 25)
        save(runs / OTHER, 24)
        await until(pilot, lambda: len(app.checkpoint_news.fresh(app.clock())) == 3, what="three checkpoints heard of")
        polls = app.polls
        await until(pilot, lambda: app.polls >= polls + 2, what="two more polls")
        assert checkpoint_toasts(app) == [] and not app.screen.query(Toast), "a toast over the GPUs table"

        await pilot.press("escape")  # Home: a mark on each run's row, a count in the runs pane's title
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="Home")
        title = app.screen.query_one("#runs-title")
        await until(pilot, lambda: title.text.endswith(" · new: 3 checkpoints of 2 runs"), what="the count")
        assert status_of(app, RUNNING) == "running · ckpt 25" and status_of(app, OTHER) == "running · ckpt 24"
        assert "ckpt" not in status_of(app, "20260101-000000-demo")
        assert checkpoint_toasts(app) == []

        monitor = await open_run(pilot, app, RUNNING)  # its own monitor: its checkpoints, once a poll
        save(runs / OTHER, 26)  # another run's: not here
        await until(pilot, lambda: len(app.checkpoint_news.fresh(app.clock())) == 4, what="the other run's")
        save(runs / RUNNING, 26, 27)
        await until(pilot, lambda: checkpoint_toasts(app), what="the monitor's own checkpoints said")
        polls = app.polls
        await until(pilot, lambda: app.polls >= polls + 2, what="two more polls")
        assert checkpoint_toasts(app) == ["2 checkpoints written (the newest checkpoint-27)"]
        assert app.screen is monitor

        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="Home again")
        await until(pilot, lambda: status_of(app, RUNNING) == "running · ckpt 27", what="the newest mark")
        assert app.screen.query_one("#runs-title").text.endswith(" · new: 6 checkpoints of 2 runs")
        record.update(status="finished", ended=T0 + 3100)  # an ended run's status says enough: no mark
        (runs / OTHER / "run.json").write_text(json.dumps(record))
        await until(pilot, lambda: status_of(app, OTHER) == "finished", what="the ended run's mark gone")

    run(script, app, size=(120, 40), notifications=True)


def test_a_checkpoint_rotation_deleted_is_no_news(base):  # noqa: F811
    """`save_total_limit` deletes the oldest checkpoint as it writes a new one: Home said 'new: 4 checkpoints' when 3
    were left (issue 34, item 6)."""
    import shutil

    runs = base / "runs"
    app = make_app(base)

    async def script(pilot):
        title = app.screen.query_one("#runs-title")
        await until(pilot, lambda: "running" in status_of(app, RUNNING), what="the live run")
        save(runs / RUNNING, 24, 25, 26)
        await until(pilot, lambda: title.text.endswith(" · new: 3 checkpoints of 1 run"), what="three checkpoints")
        shutil.rmtree(runs / RUNNING / "output" / "checkpoint-24")  # the fourth save's rotation
        save(runs / RUNNING, 27)
        await until(pilot, lambda: status_of(app, RUNNING) == "running · ckpt 27", what="the newest mark")
        await until(pilot, lambda: title.text.endswith(" · new: 3 checkpoints of 1 run"), what="three, still")
        save(runs / RUNNING, 27)  # a checkpoint said twice (saved again at the same step) counts once
        polls = app.polls
        await until(pilot, lambda: app.polls >= polls + 2, what="two more polls")
        assert title.text.endswith(" · new: 3 checkpoints of 1 run"), title.text

    run(script, app, size=(120, 40))


def test_checkpoint_news_is_counted_and_fades():
    from tuitrain.runs.view.live import Change
    from tuitrain.tui.run_table import NEWS_SECONDS, CheckpointNews, checkpoints_written

    news = CheckpointNews()
    news.add([Change("checkpoint", RUNNING, "checkpoint-24"), Change("finished", OTHER)], T0)
    assert news.summary(T0) == "checkpoint-24 of 00:20 demo" and news.marks(T0) == {RUNNING: "checkpoint-24"}
    news.add([Change("checkpoint", OTHER, "checkpoint-5"), Change("checkpoint", RUNNING, "checkpoint-25")], T0 + 1)
    assert news.summary(T0 + 1) == "3 checkpoints of 2 runs"
    assert news.marks(T0 + 1) == {RUNNING: "checkpoint-25", OTHER: "checkpoint-5"}
    assert news.summary(T0 + NEWS_SECONDS + 1) == "" and news.marks(T0 + NEWS_SECONDS + 1) == {}
    assert checkpoints_written(["checkpoint-8"]) == "checkpoint-8 written"
