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


# ------------------------------------------------------------------------------ 2. bare text, list widgets

def test_text_is_typed_bare_and_lists_are_edited_an_item_a_row(base):
    from textual.widgets import Button, Input, Select

    from test_editor_model import DEMO
    from tuitrain.tui.widgets.list_editor import ListEditor

    (base / "profiles").mkdir()
    path = base / "profiles" / "mine.toml"
    path.write_text(DEMO)
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, path)
        report = (await show_field(pilot, editor, "training.report_to")).query_one(Input)  # any TOML value
        assert report.value == "none"  # not '"none"'
        report.focus()
        report.value = ""
        await pilot.press(*"tensorboard")
        await until(pilot, lambda: editor.data["training"].get("report_to") == "tensorboard", what="bare text")
        name = (await show_field(pilot, editor, "run.name")).query_one(Input)
        name.value = '"quoted name"'  # quotes typed out of habit still work
        await until(pilot, lambda: editor.data["run"]["name"] == "quoted name", what="the quotes dropped")

        names = (await show_field(pilot, editor, "metrics.names")).query_one(ListEditor)
        picks = list(names.query(Select).results())
        assert [p.value for p in picks] == ["accuracy", "f1"]  # picked from the metrics there are
        names.query(".list-remove").last(Button).press()
        await until(pilot, lambda: editor.data["metrics"].get("names") == ["accuracy"], what="f1 removed")
        names.query_one(".list-add", Button).press()
        added = await until(pilot, lambda: len(names.query(Select)) == 2 and names.query(Select).last(), what="an item")
        await until(pilot, lambda: app.focused is added, what="the new item focused")  # focused once it is mounted
        added.value = "f1"
        await until(pilot, lambda: editor.data["metrics"].get("names") == ["accuracy", "f1"], what="f1 back")

        weights = (await show_field(pilot, editor, "model.class_weights")).query_one(ListEditor)
        assert not weights.query(".list-item")
        for typed in ("1", "2.5"):
            weights.query_one(".list-add", Button).press()
            await until(pilot, lambda: isinstance(app.focused, Input) and app.focused.value == "" and
                        app.focused in weights.query(Input).results(), what="a new item focused")
            await pilot.press(*typed)
        await until(pilot, lambda: editor.data["model"].get("class_weights") == [1, 2.5], what="the weights")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(120, 40))
    import tomllib

    saved = tomllib.loads(path.read_text())
    assert saved["training"]["report_to"] == "tensorboard" and saved["run"]["name"] == "quoted name"
    assert saved["metrics"]["names"] == ["accuracy", "f1"] and saved["model"]["class_weights"] == [1, 2.5]


# ------------------------------------------------------------------------------ 3. starting points, ignored keys

def test_a_section_is_removed_whole_and_ignored_keys_say_why(base):
    from textual.widgets import Button, Input, Select

    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, None)
        name = (await show_field(pilot, editor, "model.name_or_path")).query_one(Input)
        assert not editor.query_one("#ignored-model-config").display
        name.value = "bert-base-uncased"
        note = editor.query_one("#ignored-model-config")
        await until(pilot, lambda: note.display and "model.name_or_path is set" in str(note.content),
                    what="[model.config] said to be ignored")
        assert "model.name_or_path is set" in str(editor.query_one("#ignored-model-train_tokenizer").content)
        editor.query_one("#remove-model-config", Button).press()
        await until(pilot, lambda: "config" not in editor.data["model"] and not editor.query("#remove-model-config"),
                    what="[model.config] removed")
        assert "model.config.model_type" not in editor.rows  # its rows went with it
        # the section is rebuilt without [model.config]: wait for the next table's button in the new form
        remove = await until(pilot, lambda: editor.query("#remove-model-train_tokenizer").first()
                             if editor.query("#remove-model-train_tokenizer") else None, what="the rebuilt section")
        remove.press()
        await until(pilot, lambda: "train_tokenizer" not in editor.data["model"], what="[model.train_tokenizer] removed")
        await until(pilot, lambda: (notes := editor.query("#ignored-model-train_tokenizer")) and not notes.first().display
                   , what="the form rebuilt, no note left")

        generate = (await show_field(pilot, editor, "data.generate")).query_one(Select)
        assert editor.rows["data.num_train"].note == ""
        generate.value = Select.NULL
        await until(pilot, lambda: "data.generate" in editor.rows["data.num_train"].note, what="num_train ignored")
        assert editor.rows["data.num_train"].query_one(".field-note").display

    run(script, app, size=(120, 40))


def test_a_new_profile_starts_from_a_model_folder_and_data_files(base):
    from textual.widgets import Input

    (base / "models" / "tiny").mkdir(parents=True)
    (base / "data").mkdir()
    for name in ("train.csv", "valid.csv"):
        (base / "data" / name).write_text("text,label\na,0\nb,1\n")
    app = make_app(base)

    async def answer(pilot, text: str) -> None:
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the question")
        app.screen.query_one(Input).value = text
        await pilot.press("enter")

    async def script(pilot):
        editor = await open_editor(pilot, None)
        assert editor.query_one("#start-bar").display
        await pilot.click("#start-model")
        await answer(pilot, "models/tiny")
        await until(pilot, lambda: editor.data["model"].get("name_or_path") == "../models/tiny",
                    what="the model folder")
        assert "config" not in editor.data["model"] and "train_tokenizer" not in editor.data["model"]
        row = await until(pilot, lambda: editor.rows.get("model.name_or_path"), what="the model form")
        await until(pilot, lambda: row.is_mounted and row.query(Input), what="the model form rebuilt")
        assert row.query_one(Input).value == "../models/tiny"  # typed from the working folder, written from profiles/
        await pilot.click("#start-data")
        await answer(pilot, "data/train.csv")
        await answer(pilot, "data/valid.csv")
        await until(pilot, lambda: editor.data["data"].get("validation_file") == "../data/valid.csv",
                    what="the data files")
        assert editor.data["data"]["train_file"] == "../data/train.csv"
        assert not {"generate", "num_train", "num_validation"} & set(editor.data["data"])
        await until(pilot, lambda: not any(p.key.startswith(("data", "model.config")) for p in editor.errors)
                    and editor.model.checks_begun > 1, what="the check of the new sources")

    run(script, app, size=(120, 40))


# ------------------------------------------------------------------------------ 4. copying commands

def test_ctrl_y_copies_a_tuitrain_run_that_runs_as_is_and_ctrl_g_the_accelerate_command(base):
    import shlex

    from textual.widgets import Input

    from test_editor_model import DEMO
    from tuitrain.profile import apply_overrides
    from tuitrain.profile.load import parse_toml

    (base / "profiles").mkdir()
    path = base / "profiles" / "mine.toml"
    path.write_text(DEMO)
    app = make_app(base)
    copied: dict[str, str] = {}

    async def script(pilot):
        editor = await open_editor(pilot, None)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: any("save the profile first" in n.message for n in app._notifications),
                    what="the refusal of a profile with no file")
        assert app.clipboard == ""
        await pilot.press("escape")

        editor = await open_editor(pilot, path)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard, what="the copy")
        assert app.clipboard == "tuitrain run profiles/mine.toml"
        (await show_field(pilot, editor, "run.name")).query_one(Input).value = "my run"
        (await show_field(pilot, editor, "training.max_steps")).query_one(Input).value = "12"
        editor.rows["training.report_to"].query_one(Input).value = ""
        await until(pilot, lambda: "report_to" not in editor.data["training"], what="the edits")
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard != "tuitrain run profiles/mine.toml", what="the copy")
        copied["run"] = app.clipboard
        copied["data"] = editor.data
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "accelerate launch" in app.clipboard, what="the accelerate command")
        assert app.clipboard == editor.command

    run(script, app, size=(120, 40), notifications=True)
    args = shlex.split(copied["run"])
    assert args[:3] == ["tuitrain", "run", "profiles/mine.toml"]
    assert args[3:] == ["--set", "run.name=my run", "--set", "training.max_steps=12", "--set", "training.report_to="]
    # what the CLI would read: the saved file with these --set is the form, nothing placeholder in it
    sets = [args[i + 1] for i in range(3, len(args), 2)]
    assert apply_overrides(parse_toml(path.read_text(), str(path)), sets) == copied["data"]
    assert "<new-run>" not in copied["run"]
