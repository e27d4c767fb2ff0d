"""Issue 21, defects 4, 8 and 11 on Home's runs table. Runs could not be told apart: the RUN column cut every id to
`20261124-18…` at 120 and 80 columns; now it shows what differs (the time and the name; the date only when it is
not today; the seconds when two would read alike), the filter still finds what it shows, and the monitor names
the full id. A Slurm run's `finished · COMPLETED` was cut to `finished · COMPLE`. Enter on an empty runs table
said nothing."""

from __future__ import annotations

import pytest

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FAILED, FINISHED, RUNNING, T0
from test_tui_home_table import copy_run, shown_ids
from test_tui_narrow import shown_rows

SIZES = [(120, 40), (80, 24)]
YESTERDAY = "20251231-235900-bert-base-uncased-finetuned-mrpc"
SAME_MINUTE = ("20260101-003000-demo", "20260101-003045-demo")


def run_cells(app) -> dict[str, str]:
    """Run id → what its RUN cell shows on screen (the table's painted lines, cut as they are cut)."""
    table = app.screen.query_one("#runs")
    lines = shown_rows(table)[1:1 + table.row_count]
    width = table.columns[next(iter(table.columns))].get_render_width(table)
    return {run_id: line[:width].strip() for run_id, line in zip(shown_ids(app), lines, strict=True)}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_run_column_shows_what_tells_runs_apart(base, size):  # noqa: F811
    copy_run(base, FINISHED, YESTERDAY, "bert-base-uncased-finetuned-mrpc", T0 - 60)
    for run_id in SAME_MINUTE:
        copy_run(base, FINISHED, run_id, "demo", T0 + 1800)
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: len(shown_ids(app)) == 6, what="six runs")
        await pilot.pause(0.3)
        cells = run_cells(app)
        assert cells[RUNNING] == "00:20 demo" and cells[FAILED] == "00:10 demo" and cells[FINISHED] == "00:00 demo"
        assert cells[SAME_MINUTE[0]] == "00:30:00 demo" and cells[SAME_MINUTE[1]] == "00:30:45 demo"
        assert cells[YESTERDAY].startswith("2025-12-31 23:59 b")  # not today (nor this year): the date too
        assert len(set(cells.values())) == 6  # every row reads apart
        # the filter finds what the column shows
        await pilot.press("slash", *"00:30")
        await until(pilot, lambda: sorted(shown_ids(app)) == sorted(SAME_MINUTE), what="the two of 00:30")
        await pilot.press("ctrl+u", *"2025-12")
        await until(pilot, lambda: shown_ids(app) == [YESTERDAY], what="yesterday's run")
        await pilot.press("enter", "enter")  # the filter kept; the monitor names the full id
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")
        assert str(app.screen.query_one("#title").text).startswith(f"run {YESTERDAY} ")

    run(script, app, size=size)


def test_run_labels():
    from tuitrain.tui.run_table import run_label, run_labels

    now = T0 + 3600  # 2026-01-01 01:00 (UTC in the tests)
    assert run_label("20260101-002000-demo", now) == "00:20 demo"
    assert run_label("20260101-002000-demo-2", now) == "00:20 demo-2"
    assert run_label("20251231-235900-demo", now) == "2025-12-31 23:59 demo"  # another year
    assert run_label("20260101-002000-demo", now + 86400 * 40) == "01-01 00:20 demo"
    assert run_label("my-own-folder", now) == "my-own-folder"
    assert run_labels(["20260101-002000-a", "20260101-002059-a", "20260101-002000-b"], now) == {
        "20260101-002000-a": "00:20:00 a", "20260101-002059-a": "00:20:59 a", "20260101-002000-b": "00:20 b"}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_slurm_runs_completed_state_is_shown_whole(tmp_path, size):
    """The job state grew from RUNNING to COMPLETED after the column was sized: it was cut to COMPLE."""
    from tuitrain.runs.view.live import RunRow
    from tuitrain.tui.messages import RunsPolled

    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path, poll_interval=3600)  # one poll of the empty root; the rows come from the test

    def row(status: str, job: str, ended: float | None) -> RunRow:
        return RunRow("20260101-000500-slurmy", "", "demo", status, 5, 10, 0.5, "eval_loss", None, T0, T0 + 1, ended,
                      None, 0, job=job)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        app.post_message(RunsPolled([row("running", "RUNNING", None)], []))
        await until(pilot, lambda: " running · RUNNING " in "".join(shown_rows(table)), what="the running job")
        app.post_message(RunsPolled([row("finished", "COMPLETED", T0 + 100)], []))
        await until(pilot, lambda: str(table.get_cell("20260101-000500-slurmy", "STATUS")) == "finished · COMPLETED",
                    what="the job completed")
        await pilot.pause(0.3)
        line = shown_rows(table)[1]
        assert " finished · COMPLETED " in line and line.rstrip().endswith("1m39s"), line

    run(script, app, size=size)


def test_enter_on_an_empty_runs_table_says_why_it_is_empty(base):  # noqa: F811
    empty = base / "empty"
    (empty / "runs").mkdir(parents=True)
    app = make_app(empty)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: app.focused is table, what="the runs table focused")
        await pilot.press("enter")
        await until(pilot, lambda: app._notifications, what="a hint")
        assert [n.message for n in app._notifications] == ["no runs yet: highlight a profile and press r to start one"]

    run(script, app, notifications=True)


def test_enter_on_a_runs_table_filtered_empty_says_the_filter_hides_them(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        await pilot.press("slash", *"zzz", "enter")
        await until(pilot, lambda: table.row_count == 0 and app.focused is table, what="no run shown")
        await pilot.press("enter")
        await until(pilot, lambda: app._notifications, what="a hint")
        assert [n.message for n in app._notifications] == ["no run matches /zzz (of 3): escape clears the filter"]

    run(script, app, notifications=True)
