"""Typing fast into the profile editor (issue 13, defect 8): every key lands in order, in the field and
in the saved file, while the profile is checked again behind the typing (debounced: one check after
the typing stops, not one a key)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from test_editor_model import DEMO
from test_tui_app import make_app, run, show_field, until
from test_tui_fixtures import make_runs

TYPED = "abcdefghijklmnopqrstuvwxyz-0123456789-abcdefghijklmnopqrstuvwxyz-run"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "mine.toml").write_text(DEMO)
    return tmp_path


@pytest.mark.parametrize("key", ["run.name", "data.train_file", "distributed.main_process_ip"])
def test_keys_typed_fast_land_in_order_in_the_field_and_the_file(base, key):
    from textual.widgets import Input, Select

    path = base / "profiles" / "mine.toml"
    app = make_app(base)

    async def script(pilot):
        app.open_editor(path)
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="the editor")
        editor = app.screen
        if key.startswith("distributed."):  # a field of ddp's, whose checks probe the port too
            strategy = await show_field(pilot, editor, "distributed.strategy")
            strategy.query_one(Select).value = "ddp"
        row = await show_field(pilot, editor, key)
        box = row.query_one(Input)
        box.focus()
        box.value = ""
        await until(pilot, lambda: editor.data[key.split(".")[0]].get(key.split(".")[1]) is None, what="emptied")
        # a pause longer than any gap between two keys here: the whole burst is one change
        editor.check_delay = 2.0
        await pilot.pause(0.3)
        before = editor.model.checks_begun
        await pilot.press(*TYPED)
        assert box.value == TYPED
        section, leaf = key.split(".")
        assert editor.data[section].get(leaf) == TYPED
        await until(pilot, lambda: editor.model.checks_begun > before, what="the check after the typing")
        assert editor.model.checks_begun == before + 1  # one check for the burst, not one a key
        await until(pilot, lambda: str(editor.query_one("#problems").content), what="the check shown")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not editor.dirty, what="the save")
        assert box.value == TYPED

    run(script, app, size=(120, 40))
    assert tomllib.loads((base / "profiles" / "mine.toml").read_text())[key.split(".")[0]][key.split(".")[1]] == TYPED
