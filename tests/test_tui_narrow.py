"""The app at 80×24 (issue 13): the runs table's STATUS is never cut and TIME stays in view (a long run
id gives way, with an ellipsis), a line too long for its widget ends in an ellipsis (the hardware strip,
the titles), and the monitor's footer keeps q and ? however many keys the screen has."""

from __future__ import annotations

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import FINISHED, T0
from test_tui_home_table import copy_run

LONG = "20260101-003000-bert-base-uncased-finetuned-mrpc"
LONG_HARDWARE = ("CPU  12% ▋···· 16 cores · RAM 61.5 GiB/251.5 GiB · GPU0 H100 80GB HBM3 98% 71.2/80.0 GiB · "
                 "GPU1 H100 80GB HBM3 97% 70.9/80.0 GiB")


def shown_rows(widget) -> list[str]:
    """What the widget paints, row by row."""
    return [widget.render_line(y).text for y in range(widget.size.height)]


def test_at_80x24_a_long_run_id_gives_way_and_status_and_time_show_whole(base):  # noqa: F811
    copy_run(base, FINISHED, LONG, "bert-base-uncased-finetuned-mrpc", T0 + 1800)
    app = make_app(base, hardware_line=LONG_HARDWARE)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 4, what="four runs")
        await pilot.pause(0.3)
        rows = shown_rows(table)
        assert rows[0].split() == ["RUN", "↓", "STATUS", "STEP", "LOSS", "BEST", "TIME"]  # newest first, it says
        long_row = next(r for r in rows if r.lstrip().startswith("00:30 bert"))  # its label: time and name
        assert "…" in long_row.split()[1] and long_row.split()[2] == "finished" and long_row.rstrip().endswith("39s")
        failed = next(r for r in rows if "failed" in r)
        assert " failed r1 " in failed and failed.rstrip().endswith("39s")
        assert max(len(r.rstrip()) for r in rows) <= table.size.width
        hardware = app.screen.query_one("#hardware")
        strip = shown_rows(hardware)[0]
        assert strip.endswith("…") and len(strip) == hardware.size.width == 78  # 80 less its padding

    run(script, app, size=(80, 24))


def test_at_80x24_the_monitor_keeps_q_and_help_in_its_footer_and_cuts_its_title_with_an_ellipsis(base):  # noqa: F811
    copy_run(base, FINISHED, LONG, "bert-base-uncased-finetuned-mrpc", T0 + 1800)
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, LONG)
        await pilot.pause(0.2)
        footer = shown_rows(monitor.query_one("KeyBar"))[0]
        assert " q Quit " in footer and " ? Help " in footer, footer
        assert footer.startswith(" esc Back ") and "…" in footer  # the screen's later keys gave way whole
        title = shown_rows(monitor.query_one("#title"))[0]
        assert title.endswith("…") and title.startswith(f"run {LONG} · profile bert")
        # wide enough, every key shows and no ellipsis
        await pilot.resize_terminal(200, 30)
        await pilot.pause(0.3)
        footer = shown_rows(monitor.query_one("KeyBar"))[0]
        assert "/ Search" in footer and "t Traceback" in footer and "…" not in footer and "^p palette" in footer

    run(script, app, size=(80, 24))


def test_at_80x24_marking_runs_keeps_the_cursor_when_the_run_column_is_resized(base):  # noqa: F811
    """A mark widens the RUN cells; at 80 columns the table's columns are then laid out again on the next
    poll, which used to put the cursor back on the first row (space then unmarked the first run)."""
    from test_tui_fixtures import FAILED, RUNNING

    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        await pilot.press("space")  # marks the first run, and stays on it
        polls = app.polls
        await until(pilot, lambda: app.polls >= polls + 2, what="two polls")
        assert table.cursor_row == 0
        await pilot.press("down", "space")
        polls = app.polls
        await until(pilot, lambda: app.polls >= polls + 2, what="two polls")
        assert app.screen.marked == [RUNNING, FAILED] and table.cursor_row == 1
        assert app.screen.selected_run_id() == FAILED

    run(script, app, size=(80, 24))
