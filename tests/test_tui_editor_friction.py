"""The profile editor's friction list of issue 13, driven as a user drives it (Pilot): the focused field
stands out (also without colour) and switching sections keeps a field focused; strings are typed bare
and lists in a list widget; sections can be removed, keys the chosen model or data ignore say so, and
a new profile can start from a model folder or data files; ctrl+y copies a command that runs as is."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tui_app import make_app, run, show_field, until
from test_tui_fixtures import make_runs


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    return tmp_path


async def open_editor(pilot, path: Path | None):
    app = pilot.app
    app.open_editor(path)
    await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="the editor")
    editor = app.screen
    await until(pilot, lambda: str(editor.query_one("#problems").content), what="the first check")
    return editor


def row_of(editor, widget):
    from tuitrain.tui.widgets.field_row import FieldRow

    return next((a for a in (widget.ancestors if widget else []) if isinstance(a, FieldRow)), None)


# ------------------------------------------------------------------------------ 1. focus

@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "no-colour"])
def test_the_focused_field_stands_out_and_switching_sections_focuses_a_field(base, monkeypatch, no_color):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(base)

    async def script(pilot):
        from textual.widgets import Input

        editor = await open_editor(pilot, None)
        name = await show_field(pilot, editor, "run.name")
        seed = editor.rows["run.seed"]
        name.query_one(Input).focus()
        await pilot.pause(0.1)
        # a mark drawn in characters (a thick bar and reversed name), not only a shade of grey
        assert name.styles.border_left[0] == "thick" and seed.styles.border_left[0] != "thick"
        label = name.query_one(".field-name")
        assert label.styles.text_style.reverse and not seed.query_one(".field-name").styles.text_style.reverse
        assert name.styles.background != seed.styles.background

        await pilot.press("ctrl+pagedown")
        await until(pilot, lambda: row_of(editor, app.focused) is not None, what="a field focused in the next section")
        assert row_of(editor, app.focused).field.key == "model.task"
        assert row_of(editor, app.focused).styles.border_left[0] == "thick"
        await pilot.press("ctrl+pageup", "ctrl+pageup")
        await until(pilot, lambda: (r := row_of(editor, app.focused)) is not None and r.field.key.startswith("logging."),
                    what="the last section's first field")
        assert row_of(editor, app.focused).field.key == "logging.log_level"
        # from the section tabs too (where the editor opens)
        editor.query_one("#sections Tabs").focus()
        await pilot.press("ctrl+pagedown")
        await until(pilot, lambda: (r := row_of(editor, app.focused)) is not None and r.field.key == "run.name",
                    what="the first section's first field")

    run(script, app, size=(120, 40))
