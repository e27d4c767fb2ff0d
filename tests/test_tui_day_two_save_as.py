"""Save As in the profile editor (issue 21, item 3): a bare name goes where Home lists profiles and the
dialog says where before it writes; a copy in another folder still names the same data files; the
"data files…" starting point writes paths from the profile's folder, as it says; the name field
shows the name the saved file has."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from test_tui_app import make_app, run, show_field, until
from test_tui_editor_saving import open_editor, toasts
from test_tui_fixtures import make_runs
from tuitrain.profile import list_profiles, load_profile, validate_profile

ROWS = "text,label\n" + "".join(f"sentence {i},{i % 2}\n" for i in range(20))
WAIT = 30.0  # generous: a loaded 2-core machine


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    (tmp_path / "data").mkdir()
    for name in ("train.csv", "valid.csv"):
        (tmp_path / "data" / name).write_text(ROWS)
    return tmp_path


async def save_as(pilot, answer: str, key: str = "ctrl+o") -> str:
    """Answer the save-as question with `answer`; returns what the dialog said it would do, before enter."""
    from textual.widgets import Input, Static

    app = pilot.app
    await pilot.press(key)
    await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", timeout=WAIT, what="the save-as question")
    app.screen.query_one(Input).value = answer
    outcome = app.screen.query_one("#outcome", Static)
    await until(pilot, lambda: Path(answer).stem in str(outcome.content),
                timeout=WAIT, what="what the dialog says it will do")
    said = str(outcome.content)
    await pilot.press("enter")
    await until(pilot, lambda: toasts(app, "Saved"), timeout=WAIT, what="the save")
    return said


def data_errors(path: Path) -> list[str]:
    data = tomllib.loads(path.read_text())
    return [f"{p.key}: {p.message}" for p in validate_profile(data, str(path), path.parent)
            if p.is_error and p.key.startswith(("data", "model"))]


def test_a_bare_name_is_saved_where_home_lists_profiles_and_the_dialog_says_so_first(base):
    from textual.widgets import Input

    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, None)
        name_row = await show_field(pilot, editor, "run.name")
        assert name_row.query_one(Input).value == "my-profile"
        said = await save_as(pilot, "csvcopy", key="ctrl+s")
        assert said == "writes profiles/csvcopy.toml (makes the folder profiles)"
        assert editor.path == base / "profiles" / "csvcopy.toml"
        # the field shows what the file says, and the form is not modified by it
        await until(pilot, lambda: editor.rows["run.name"].is_mounted and editor.rows["run.name"].query(Input),
                    timeout=WAIT, what="the run form rebuilt")
        assert editor.rows["run.name"].query_one(Input).value == "csvcopy"
        assert not editor.dirty and "modified" not in str(editor.query_one("#title").content)
        assert toasts(app, "Run name")

    run(script, app, size=(120, 40), notifications=True)
    assert not (base / "csvcopy.toml").exists()
    assert list_profiles(base)["csvcopy"] == base / "profiles" / "csvcopy.toml"
    assert load_profile(base / "profiles" / "csvcopy.toml").name == "csvcopy"


def test_a_bare_name_with_toml_goes_in_profiles_too_and_an_existing_file_is_named_before_it_is_overwritten(base):
    (base / "profiles").mkdir()
    (base / "profiles" / "taken.toml").write_text('[run]\nname = "taken"\n')
    app = make_app(base)

    async def script(pilot):
        await open_editor(pilot, None)
        said = await save_as(pilot, "taken.toml")
        assert said == "overwrites profiles/taken.toml"

    run(script, app, size=(120, 40), notifications=True)
    assert tomllib.loads((base / "profiles" / "taken.toml").read_text())["run"]["name"] == "taken"
    assert not (base / "taken.toml").exists()


def test_a_copy_in_another_folder_names_the_same_data_files(base):
    from textual.widgets import Input

    from test_editor_model import DEMO

    (base / "profiles").mkdir()
    path = base / "profiles" / "csv.toml"
    text = DEMO.replace('name = "demo"', 'name = "mine"').replace(
        "[data]\n", '[data]\ntrain_file = "../data/train.csv"\nvalidation_file = "../data/valid.csv"\n')
    data = tomllib.loads(text)
    for key in ("generate", "num_train", "num_validation"):
        data["data"].pop(key, None)
    import tomli_w

    path.write_text(tomli_w.dumps(data))
    assert data_errors(path) == []
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, path)
        row = await show_field(pilot, editor, "data.train_file")
        assert row.query_one(Input).value == "../data/train.csv"
        said = await save_as(pilot, "elsewhere/deep/copy.toml")
        assert said == "writes elsewhere/deep/copy.toml (makes the folder elsewhere/deep)"
        await until(pilot, lambda: editor.rows["data.train_file"].is_mounted
                    and editor.rows["data.train_file"].query(Input), timeout=WAIT, what="the data form rebuilt")
        assert editor.rows["data.train_file"].query_one(Input).value == "../../data/train.csv"
        assert not editor.dirty
        assert any("data.train_file = '../../data/train.csv'" in words for words in toasts(app, "Paths"))
        await until(pilot, lambda: editor.model.checks_begun and not any(p.key.startswith("data")
                                                                          for p in editor.errors),
                    timeout=WAIT, what="the check of the copy")

    run(script, app, size=(120, 40), notifications=True)
    copy = base / "elsewhere" / "deep" / "copy.toml"
    saved = tomllib.loads(copy.read_text())["data"]
    assert (saved["train_file"], saved["validation_file"]) == ("../../data/train.csv", "../../data/valid.csv")
    assert data_errors(copy) == []
    assert tomllib.loads(path.read_text())["data"]["train_file"] == "../data/train.csv"  # the old file untouched


def test_the_data_files_starting_point_writes_paths_from_the_profiles_folder_as_it_says(base):
    from textual.widgets import Input, Static

    app = make_app(base)

    async def answer(pilot, text: str) -> str:
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", timeout=WAIT, what="the question")
        question = str(app.screen.query(Static).first().content)
        app.screen.query_one(Input).value = text
        await pilot.press("enter")
        return question

    async def script(pilot):
        editor = await open_editor(pilot, None)
        await pilot.click("#start-data")
        question = await answer(pilot, "data/train.csv")
        assert "written from the profile's folder, profiles/" in question, question
        await answer(pilot, "data/valid.csv")
        await until(pilot, lambda: editor.data["data"].get("validation_file"), timeout=WAIT, what="the data files")
        assert (editor.data["data"]["train_file"], editor.data["data"]["validation_file"]) == (
            "../data/train.csv", "../data/valid.csv")
        await until(pilot, lambda: editor.model.checks_begun > 1 and not any(p.key.startswith("data")
                                                                              for p in editor.errors),
                    timeout=WAIT, what="the check of the data files")
        await save_as(pilot, "csvcopy", key="ctrl+s")

    run(script, app, size=(120, 40), notifications=True)
    saved = base / "profiles" / "csvcopy.toml"
    assert tomllib.loads(saved.read_text())["data"]["train_file"] == "../data/train.csv"
    assert data_errors(saved) == []
