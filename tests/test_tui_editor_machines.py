"""The profile editor's machines section ([[distributed.machines]]) driven as a user drives it (Pilot):
cards a machine, the first the main machine; add, remove, move, edit, with the validator's words beside
the fields and the preview planning each machine; saving writes the tables back in their order."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from test_editor_model import two_machines
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
    return app.screen


def plan_of(editor) -> str:
    return str(editor.query_one("#plan").content)


def cards(editor) -> list:
    from tuitrain.tui.widgets.machine_card import MachineCard

    return list(editor.query(MachineCard).results())


def hosts_shown(editor) -> list[str]:
    """Each card's host box, in the cards' order on screen."""
    from textual.widgets import Input

    boxes = [list(card.query(".field-control").results(Input)) for card in cards(editor)]
    return [found[0].value if found else None for found in boxes]  # None: a card not composed yet


async def until_cards(pilot, editor, hosts: list[str]) -> None:
    await until(pilot, lambda: hosts_shown(editor) == hosts and all(c.is_mounted for c in cards(editor)),
                what=f"the cards {hosts}")
    await pilot.pause(0.1)


async def type_into(pilot, box, text: str) -> None:
    box.focus()
    box.value = ""
    await pilot.press(*text)


def test_machines_are_edited_added_removed_reordered_and_saved_in_order(base):
    from textual.widgets import Input

    from tuitrain.profile import load_profile, validate_profile

    path = two_machines(base)
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, path)
        await show_field(pilot, editor, "distributed.machines[1].host")
        await until_cards(pilot, editor, ["node1", "node2"])
        assert "main machine (rank 0)" in str(cards(editor)[0].query_one(".machine-title").render())
        assert "main machine" not in str(cards(editor)[1].query_one(".machine-title").render())
        await until(pilot, lambda: "machine 1: node2" in plan_of(editor), what="each machine in the preview")

        # edit a host: the preview follows
        await type_into(pilot, editor.rows["distributed.machines[1].host"].query_one(Input), "gpu-b")
        await until(pilot, lambda: "machine 1: gpu-b" in plan_of(editor), what="the edited host planned")

        # add a third: its host box has the focus, so typing names it
        editor.query_one("#add-machine").focus()
        await pilot.press("enter")
        await until_cards(pilot, editor, ["node1", "gpu-b", ""])
        assert editor.focused is editor.rows["distributed.machines[2].host"].query_one(Input)
        await pilot.press(*"node3")
        await until(pilot, lambda: "machine 2: node3" in plan_of(editor), what="the third machine planned")

        # remove the first: the next one becomes the main machine
        cards(editor)[0].query_one(".machine-remove").press()
        await until_cards(pilot, editor, ["gpu-b", "node3"])
        assert "main machine" in str(cards(editor)[0].query_one(".machine-title").render())
        await until(pilot, lambda: "machine 0: gpu-b · main machine" in plan_of(editor), what="the new main machine")

        # move node3 first, from the keyboard, while its host box has the focus
        editor.rows["distributed.machines[1].host"].query_one(Input).focus()
        await pilot.press("alt+up")
        await until_cards(pilot, editor, ["node3", "gpu-b"])
        assert editor.focused is editor.rows["distributed.machines[0].host"].query_one(Input)  # the focus moved with it
        await until(pilot, lambda: "machine 0: node3 · main machine" in plan_of(editor)
                    and "machine 1: gpu-b" in plan_of(editor), what="the order planned ")
        assert cards(editor)[0].query_one(".machine-up").disabled

        await pilot.press("ctrl+s")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(120, 40))
    saved = tomllib.loads(path.read_text())
    assert saved["distributed"]["machines"] == [
        {"host": "node3"}, {"host": "gpu-b", "python": "/opt/py/bin/python", "workdir": "/srv/work"}]
    profile = load_profile(path)
    assert [p for p in validate_profile(profile.data, str(path), path.parent) if p.is_error] == []


def test_a_duplicate_host_gets_the_validators_words_beside_the_field(base):
    from textual.widgets import Input

    path = two_machines(base)
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, path)
        row = await show_field(pilot, editor, "distributed.machines[1].host")
        await type_into(pilot, row.query_one(Input), "node1")
        await until(pilot, lambda: '"node1" is listed twice (machines 0 and 1)' in row.error, what="the duplicate")
        assert "list each machine once" in row.error
        assert not editor.rows["distributed.machines[0].host"].error  # the first one is fine
        await until(pilot, lambda: "fix the errors" in plan_of(editor), what="no plan")
        await type_into(pilot, row.query_one(Input), "node2")
        await until(pilot, lambda: not row.error and "machine 1: node2" in plan_of(editor), what="the fix")

    run(script, app, size=(120, 40))


def test_a_machine_problem_about_them_all_shows_above_the_cards(base):
    """A rule about the machines together ("single" runs on one) is said above the cards."""
    from textual.widgets import Select

    path = two_machines(base)
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, path)
        row = await show_field(pilot, editor, "distributed.strategy")
        row.query_one(Select).value = "single"
        above = editor.query_one("#machines-error")
        await until(pilot, lambda: 'strategy = "single"' in str(above.content) and above.display,
                    what="the machines' error")

    run(script, app, size=(120, 40))


def test_a_profile_without_machines_gets_its_first(base):
    from textual.widgets import Input

    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, None)
        await show_field(pilot, editor, "distributed.strategy")
        button = await until(pilot, lambda: editor.query("#add-machine").first() if editor.query("#add-machine")
                             else None, what="the add button")
        assert not cards(editor) and "none listed" in " ".join(
            str(s.render()) for s in editor.query("#machines .hint").results())
        button.press()
        await until_cards(pilot, editor, [""])
        host = editor.rows["distributed.machines[0].host"]
        await until(pilot, lambda: host.error.startswith("missing"), what="the host asked for")
        assert editor.focused is host.query_one(Input)
        await pilot.press(*"trainbox")
        await until(pilot, lambda: "machine 0: trainbox · main machine" in plan_of(editor), what="the machine planned")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the save-as question")
        await pilot.press("enter")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(120, 40))
    saved = tomllib.loads((base / "profiles" / "my-profile.toml").read_text())
    assert saved["distributed"]["machines"] == [{"host": "trainbox"}]
