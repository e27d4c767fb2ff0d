"""Keys on Home as the help lists them (issue 13, item 3: Tab did nothing, a binding to an action the screen
lacked, and it swallowed Textual's own Tab)."""

from __future__ import annotations

from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)


def test_tab_moves_between_the_runs_and_the_profiles_and_back(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: app.focused is not None and app.focused.id == "runs", what="the runs table focused")
        await pilot.press("tab")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "profiles", what="Tab to profiles")
        await pilot.press("tab")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "runs", what="Tab back to the runs")
        await pilot.press("shift+tab")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "profiles", what="shift+Tab back")

    run(script, app)


def test_the_help_lists_tab_once(base):  # noqa: F811
    from textual.widgets import Static

    app = make_app(base)

    async def script(pilot):
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="the help")
        tables = [w.content for w in app.screen.query(Static) if hasattr(w.content, "columns")]
        keys = [str(cell) for table in tables for cell in table.columns[0]._cells]
        assert sum("tab" in key for key in keys) == 1, keys

    run(script, app)


def test_space_marks_the_highlighted_run_and_stays_on_it(base):  # noqa: F811
    """As the help says ("mark the highlighted run"): space used to move down too, and the next space marked the run
    below (issue 34, item 5: the wrong runs marked three times)."""
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        table.move_cursor(row=1)
        highlighted = app.screen.selected_run_id()
        await pilot.press("space")
        await until(pilot, lambda: app.screen.marked, what="a mark")
        assert app.screen.marked == [highlighted] and table.cursor_row == 1
        await pilot.press("space")  # again: the same run, unmarked
        await until(pilot, lambda: not app.screen.marked, what="the mark taken back")
        assert app.screen.selected_run_id() == highlighted

    run(script, app)
