"""accelerate config files from the app (issue 38), as `tuitrain profile import-accelerate FILE` and
`tuitrain profile export-accelerate PROFILE` read and write them: Home's `a` asks for the file (accelerate's default
one offered), the editor's ctrl+f writes the form's config to a file the user names."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w

from conftest import cli, demo_profile_data
from test_tui_app import make_app, run, show_field, until

FIXTURES = Path(__file__).parent / "fixtures" / "accelerate"


def test_a_imports_an_accelerate_config_named_by_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No default config here: the prompt is empty; a path that is no file is refused in the CLI's words and nothing
    opens; the fixture's path opens the editor on a new profile with its [distributed]."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no default_config.yaml there
    (tmp_path / "runs").mkdir()
    missing = tmp_path / "nope.yaml"
    refused = cli("profile", "import-accelerate", str(missing), runs_dir=tmp_path / "runs")
    assert refused.returncode != 0 and f"{missing}: no such file" in refused.stderr, refused.stderr
    app = make_app(tmp_path)

    async def script(pilot):
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the file asked for")
        answer = app.screen.query_one("#answer")
        assert answer.value == ""
        answer.value = str(missing)
        await until(pilot, lambda: f"{missing}: no such file" in str(app.screen.query_one("#outcome").render()),
                    what="the refusal as it is typed")
        await pilot.press("enter")
        await until(pilot, lambda: any(f"{missing}: no such file" in n.message for n in app._notifications),
                    what="the refusal")
        assert type(app.screen).__name__ == "HomeScreen"
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the file asked for again")
        app.screen.query_one("#answer").value = str(FIXTURES / "fsdp.yaml")
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded,
                    what="the editor")
        editor = app.screen
        assert editor.path is None and editor.data["distributed"]["strategy"] == "fsdp"
        assert "[distributed] and [hardware] imported from" in str(editor.query_one("#notice").content)

    run(script, app, size=(120, 40), notifications=True)


def test_ctrl_f_writes_the_forms_accelerate_config_as_export_accelerate_prints_it(tmp_path: Path) -> None:
    """The editor on a saved FSDP profile: ctrl+f, a file name relative to the working folder, and the file holds
    what `tuitrain profile export-accelerate` prints for the profile; a form whose [distributed] is wrong writes
    nothing and says which key to fix."""
    (tmp_path / "runs").mkdir()
    profile = tmp_path / "profiles" / "fsdp.toml"
    profile.parent.mkdir()
    profile.write_text(tomli_w.dumps(demo_profile_data(
        hardware={"accelerator": "cuda", "gpus": [0, 1]},
        distributed={"strategy": "fsdp", "num_processes": 2, "fsdp": {"sharding_strategy": "full_shard"}})))
    exported = cli("profile", "export-accelerate", str(profile), runs_dir=tmp_path / "runs")
    assert exported.returncode == 0, exported.stderr
    app = make_app(tmp_path)

    async def script(pilot):
        app.open_editor(profile)
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded,
                    what="the editor")
        editor = app.screen
        await pilot.press("ctrl+f")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the file asked for")
        assert app.screen.query_one("#answer").value == "accelerate-fsdp.yaml"
        app.screen.query_one("#answer").value = "fsdp-out.yaml"
        await until(pilot, lambda: f"writes {tmp_path / 'fsdp-out.yaml'}"
                    in str(app.screen.query_one("#outcome").render()), what="where it writes")
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "fsdp-out.yaml").is_file(), timeout=30, what="the file")
        assert (tmp_path / "fsdp-out.yaml").read_text() == exported.stdout
        await until(pilot, lambda: app.screen is editor, what="the editor again")
        (await show_field(pilot, editor, "distributed.num_processes")).query_one("Input").value = "-3"
        await until(pilot, lambda: any((p.key or "").startswith("distributed.num_processes")
                                       for p in editor.model.errors), what="the error")
        await pilot.press("ctrl+f")
        await until(pilot, lambda: any("fix distributed.num_processes first" in n.message
                                       for n in app._notifications), what="the refusal")
        assert app.screen is editor

    run(script, app, size=(120, 40), notifications=True)
