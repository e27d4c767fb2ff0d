"""The monitor's logs (issue 13): `&` shows only the lines holding a term (less's filter), beside `/`'s
search; `w` wraps long lines and every row of a wrapped line keeps its rank prefix."""

from __future__ import annotations

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import FINISHED, RUNNING


def shown(view) -> list[str]:
    return [view.line_text(i).plain for i in range(view.line_count)]


def test_ampersand_shows_only_matching_lines_and_escape_shows_all_again(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        view = monitor.active_view()
        everything = view.line_count
        await pilot.press("&", *"YELLOW warning", "enter")
        await until(pilot, lambda: view.line_count == 8, what="the 8 warnings (4 a rank)")
        assert all("yellow warning" in line for line in shown(view))
        assert sorted(line.split("│")[0] for line in shown(view)) == ["0"] * 4 + ["1"] * 4
        status = monitor.query_one("#log-status").text
        assert "only lines with 'YELLOW warning' (escape: all)" in status and "of 8" in status
        # the search works inside the filtered lines
        await pilot.press("home", "slash", *"step 30", "enter")
        await until(pilot, lambda: view.current is not None, what="a match")
        assert "step 30: a yellow warning" in view.line_text(view.current).plain
        # unfolding keeps the filter
        await pilot.press("z")
        await until(pilot, lambda: not monitor.fold, what="unfolded")
        await until(pilot, lambda: view.line_count == 8, what="still the 8 warnings")
        assert all("yellow warning" in line for line in shown(view))
        # & again shows the term; an empty one shows every line
        await pilot.press("&")
        assert monitor.search.value == "YELLOW warning"
        await pilot.press("escape")  # closes the box only
        assert view.filter is not None and type(app.screen).__name__ == "MonitorScreen"
        await pilot.press("escape")  # clears the filter, stays on the run
        await until(pilot, lambda: view.filter is None, what="the filter cleared")
        assert view.line_count == sum(log.line_count for log in monitor.run_watch.ranks) > everything
        assert type(app.screen).__name__ == "MonitorScreen"
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="back home")

    run(script, app)


def test_a_filtered_view_takes_in_new_matching_lines_and_a_redrawn_bar(base):  # noqa: F811
    app = make_app(base)
    log = base / "runs" / RUNNING / "logs" / "rank-0.log"

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        await pilot.press("right_square_bracket")  # Rank 0
        view = monitor.active_view()
        assert view.id == "log-rank-0"
        await pilot.press("&", *"/40 [", "enter")  # the bar still drawing (a step's line shows its loss)
        await until(pilot, lambda: view.filter is not None and view.line_count == 1, what="the bar")
        assert shown(view)[-1].startswith(" 57%")
        with open(log, "ab") as handle:  # the bar finishes its line; a line without the term; a new bar
            handle.write(b"\r 60%|xx| 24/40 [00:12<00:08, 2.00it/s]\nno term here\n\r 62%|xx| 25/40 [00:12<00:07, 2.00it/s]")
        await until(pilot, lambda: view.line_count == 2, what="the finished line and the new bar")
        assert shown(view)[-2].startswith(" 60%") and shown(view)[-1].startswith(" 62%")
        with open(log, "ab") as handle:
            handle.write(b"\rdone, no bar any more\n")
        await until(pilot, lambda: view.line_count == 1, what="the redrawn line no longer matching")
        assert shown(view)[0].startswith(" 60%")

    run(script, app)


def test_w_wraps_long_lines_with_the_rank_prefix_on_every_row(base):  # noqa: F811
    app = make_app(base)
    words = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters
    with open(base / "runs" / FINISHED / "logs" / "rank-1.log", "ab") as handle:
        handle.write(f"LONG {words}\n".encode())

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        view = monitor.active_view()
        await until(pilot, lambda: any("LONG" in line for line in shown(view)), what="the long line")
        assert view.visible_text()[-1].startswith("1│LONG word000")
        rows_before = len(view.visible_text())  # a line a row, cut at the view's edge (it scrolls sideways)
        await pilot.press("w")
        await until(pilot, lambda: view.wrap and view.visible_text() and view.visible_text()[-1].endswith("word059"),
                    what="the wrapped line's last row")
        rows = view.visible_text()
        start = max(i for i, row in enumerate(rows) if row.startswith("1│LONG"))
        long_rows = rows[start:]
        assert len(long_rows) >= 5 and all(row.startswith("1│") for row in long_rows)
        assert all(len(row) <= view.size.width for row in long_rows)
        assert " ".join(row.removeprefix("1│").strip() for row in long_rows) == f"LONG {words}"
        # the lines above fill the rest of the view; the status counts lines, not rows
        assert len(rows) == view.size.height
        status = monitor.query_one("#log-status").text
        first, last = view.shown_lines()
        assert last == view.line_count - 1 and f"lines {first + 1}-{last + 1} of {view.line_count}" in status
        assert "wrapped" in status
        # every log view wraps; w again unwraps
        await pilot.press("right_square_bracket")
        assert monitor.active_view().wrap
        await pilot.press("left_square_bracket", "w")
        await until(pilot, lambda: not view.wrap, what="unwrapped")
        await until(pilot, lambda: view.visible_text()[-1].startswith("1│LONG word000"), what="one row again")
        assert len(view.visible_text()) == rows_before

    run(script, app)


def test_the_filter_judges_complete_lines_once_and_the_unsettled_end_each_time(tmp_path):
    from tuitrain.runs.view.logfile import LogFile
    from tuitrain.tui.log_filter import FilteredLog

    path = tmp_path / "rank-0.log"
    path.write_bytes(b"".join(b"line %d%s\n" % (i, b" hit" if i % 3 == 0 else b"") for i in range(10)) + b"partial hit")
    log = LogFile(path)
    log.update()
    filtered = FilteredLog(log, "HIT", budget=4)
    assert filtered.sync() and filtered.count == 2 and filtered.pending == 7  # lines 0-3 of 11 judged
    while filtered.pending:
        filtered.sync()
    assert [filtered.raw(i)[1] for i in range(filtered.count)] == [b"line 0 hit", b"line 3 hit", b"line 6 hit",
                                                                   b"line 9 hit", b"partial hit"]
    assert filtered.cacheable(3) and not filtered.cacheable(4)  # the partial line may still change
    with open(path, "ab") as handle:
        handle.write(b"\rnow without\n")
    log.update()
    filtered.sync()
    assert filtered.count == 4 and filtered.find(b"LINE 6") == 2 and filtered.find(b"line", 3, backwards=True) == 3


def test_a_search_in_a_wrapped_view_shows_the_match_below_long_lines(base):  # noqa: F811
    app = make_app(base)
    words = " ".join(f"word{i:03d}" for i in range(60))
    lines = [f"LONG {words}" for _ in range(12)] + ["THE TARGET LINE"] + [f"short {i}" for i in range(40)]
    with open(base / "runs" / FINISHED / "logs" / "rank-1.log", "ab") as handle:
        handle.write(("\n".join(lines) + "\n").encode())

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        view = monitor.active_view()
        await until(pilot, lambda: any("short 39" in line for line in shown(view)), what="the lines written")
        await pilot.press("w")
        await until(pilot, lambda: view.wrap, what="wrapped")
        await pilot.press("home", "slash", *"target line", "enter")
        await until(pilot, lambda: view.current is not None, what="the match")
        await until(pilot, lambda: any("THE TARGET LINE" in row for row in view.visible_text()), what="the match in view")

    run(script, app)


def test_a_view_behind_a_shrunk_tail_reads_an_empty_line_not_an_error(tmp_path):
    """The worker syncs while the screen paints: a view that counted a tail line just dropped reads it empty."""
    from tuitrain.runs.view.logfile import LogFile
    from tuitrain.tui.log_filter import FilteredLog

    path = tmp_path / "rank-0.log"
    path.write_bytes(b"a hit\n\r 10% hit")
    log = LogFile(path)
    log.update()
    filtered = FilteredLog(log, "hit")
    filtered.sync()
    counted = filtered.count
    assert counted == 2
    with open(path, "ab") as handle:
        handle.write(b"\rgone")
    log.update()
    filtered.sync()
    assert filtered.count == 1 and filtered.raw(counted - 1) == (None, b"")
