"""The monitor's log status line and the command palette's key hints (issue 13, defect 9)."""

from __future__ import annotations

import re

from test_tui_app import base, make_app, open_run, run  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import FINISHED


def test_a_rank_tab_just_shown_says_which_lines_are_in_view(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        await pilot.press("right_square_bracket")  # Rank 0, never shown before
        view = monitor.active_view()
        assert view.id == "log-rank-0"
        await pilot.pause(0.2)
        status = monitor.query_one("#log-status").text
        shown = re.search(r"lines (\d+)-(\d+) of (\d+)", status)
        assert shown, status
        first, last, total = map(int, shown.groups())
        assert total == view.line_count and last == total  # following: the end is in view
        assert last - first + 1 == min(total, view.scrollable_content_region.height) > 1, status
        assert view.visible_text()[-1] == view.line_text(total - 1).plain

    run(script, app)


def test_log_range_reads_sensibly_at_the_edges():
    from tuitrain.tui.screens.monitor import log_range

    assert log_range(0, 20, 0) == "no lines yet"
    assert log_range(47, 20, 11) == "lines 11-11 of 11"  # scrolled past the end: the last line, never 12-11
    assert log_range(0, 20, 11) == "lines 1-11 of 11"


def test_the_command_palette_names_each_key_once(base):  # noqa: F811
    from test_tui_app import editor_open

    app = make_app(base)

    def helps() -> dict[str, str]:
        return {c.title: c.help for c in app.get_system_commands(app.screen)}

    async def script(pilot):
        home = helps()
        assert home["Run"].count("(") == 1
        monitor = await open_run(pilot, app, FINISHED)
        assert helps()["Next tab"] == "Next tab (])" and helps()["Previous tab"] == "Previous tab ([)"
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert monitor is not app.screen
        await editor_open(pilot, app, "e")
        editor = helps()
        for title in ("Next section", "Previous section"):
            assert editor[title].count("(") == 1 and "page" in editor[title], editor[title]
        for text in [*home.values(), *editor.values()]:
            assert not re.search(r"\(([^)]+)\) \(\1\)", text), text

    run(script, app)
