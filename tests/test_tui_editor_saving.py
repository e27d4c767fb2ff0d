"""Saving from the profile editor (issue 13, defect 4 and items 6 and 9): a new profile's relative
paths mean what they will mean once saved, even before its folder exists; the toast and the error
pane after a save come from one check of what was saved; Save As gives the copy its own run name
when the old one was the old file's own; a saved profile is no longer called new."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from test_editor_model import DEMO, checked, loaded
from test_tui_app import make_app, run, show_field, until
from test_tui_fixtures import make_runs
from tuitrain.tui.fields import REMOVE

ROWS = "text,label\n" + "".join(f"sentence {i},{i % 2}\n" for i in range(20))


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    return tmp_path


def test_a_new_profiles_relative_paths_start_where_it_will_be_saved(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text(ROWS)
    assert not (tmp_path / "profiles").exists()
    model = loaded(None, tmp_path)
    model.set(("data", "generate"), REMOVE)
    model.set(("data", "train_file"), "../data/train.csv")
    model.set(("data", "validation_file"), "../data/missing.csv")
    checked(model, tmp_path / "runs")
    assert [(p.key, p.message) for p in model.errors] == [
        ("data.validation_file", f"no such file: {tmp_path / 'data' / 'missing.csv'}")]


async def open_editor(pilot, path: Path | None):
    app = pilot.app
    app.open_editor(path)
    await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="the editor")
    editor = app.screen
    await until(pilot, lambda: str(editor.query_one("#problems").content), what="the first check")
    return editor


def toasts(app, title: str) -> list[str]:
    return [n.message for n in app._notifications if n.title == title]


def test_the_toast_and_the_error_pane_agree_after_a_save(base):
    from textual.widgets import Input

    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, None)
        assert "new profile" in str(editor.query_one("#notice").content) and editor.query_one("#notice").display
        editor.check_delay = 60.0  # no check of its own between the edit and the save: the save's is the one
        row = await show_field(pilot, editor, "training.learning_rate")
        box = row.query_one(Input)
        box.focus()
        box.value = ""
        await pilot.press(*"-1")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the save-as question")
        await pilot.press("enter")
        await until(pilot, lambda: toasts(app, "Saved"), what="the toast")
        assert "1 error(s) left" in toasts(app, "Saved")[0]
        pane = str(editor.query_one("#problems").content)
        assert pane.startswith("1 error(s)") and "training.learning_rate" in pane, pane
        assert row.error.startswith("must be greater than 0")
        # saved: no longer "new profile", in the notice or the title
        assert not editor.query_one("#notice").display and not str(editor.query_one("#notice").content)
        assert "not saved yet" not in str(editor.query_one("#title").content)

    run(script, app, size=(120, 40), notifications=True)
    assert tomllib.loads((base / "profiles" / "my-profile.toml").read_text())["training"]["learning_rate"] == -1


@pytest.mark.parametrize("name, expected", [("exp", "exp2"), ("my-own-name", "my-own-name")])
def test_save_as_gives_the_copy_its_own_run_name_unless_one_was_chosen(base, name, expected):
    from textual.widgets import Input

    (base / "profiles").mkdir()
    path = base / "profiles" / "exp.toml"
    path.write_text(DEMO.replace('name = "demo"', f'name = "{name}"'))
    original = path.read_text()
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, path)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the save-as question")
        answer = app.screen.query_one(Input)
        answer.value = "profiles/exp2.toml"
        await pilot.press("enter")
        await until(pilot, lambda: toasts(app, "Saved"), what="the save")
        assert editor.path == base / "profiles" / "exp2.toml"
        assert bool(toasts(app, "Run name")) == (name != expected)

    run(script, app, size=(120, 40), notifications=True)
    assert tomllib.loads((base / "profiles" / "exp2.toml").read_text())["run"]["name"] == expected
    assert path.read_text() == original  # the old file is untouched
    from tuitrain.profile import load_profile

    assert load_profile(base / "profiles" / "exp2.toml").name == expected
