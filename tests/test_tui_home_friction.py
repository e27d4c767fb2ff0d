"""Home through a user's day (issue 13's friction list): a profile file written meanwhile shows up
without leaving Home, Enter on a profile never starts a run's launch, and the runs pane never
says "none yet" before it has read the runs root."""

from __future__ import annotations

from conftest import DEMO_PROFILE
from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture runs)


def profile_names(app) -> list[str]:
    options = app.screen.query_one("#profiles")
    return [str(options.get_option_at_index(i).prompt).split()[0] for i in range(options.option_count)]


def test_a_profile_file_written_meanwhile_appears_on_home(base):  # noqa: F811
    import tomli_w

    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: "demo" in profile_names(app), what="the profiles")
        assert "fresh" not in profile_names(app)
        (base / "profiles").mkdir(exist_ok=True)
        (base / "profiles" / "fresh.toml").write_text(tomli_w.dumps(DEMO_PROFILE))
        await until(pilot, lambda: "fresh" in profile_names(app), 10, "the new profile, without leaving Home")
        (base / "profiles" / "fresh.toml").unlink()
        await until(pilot, lambda: "fresh" not in profile_names(app), 10, "the removed profile gone")
        assert type(app.screen).__name__ == "HomeScreen"

    run(script, app)


def test_enter_on_a_profile_opens_it_and_only_r_launches(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: "demo" in profile_names(app), what="the profiles")
        app.screen.query_one("#profiles").focus()
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
        await until(pilot, lambda: app.screen.loaded, what="the profile loaded")
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="back home")
        app.screen.query_one("#profiles").focus()
        await pilot.press("r")
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", what="the launch dialog")

    run(script, app)


def test_the_runs_pane_says_none_yet_only_once_it_has_looked():
    from tuitrain.tui.run_columns import runs_title

    assert "none yet" not in runs_title(None) and "none yet" in runs_title(0) and runs_title(3) == "Runs (3)"


def test_an_empty_runs_root_reads_none_yet_after_its_first_poll(tmp_path):
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def script(pilot):
        title = app.screen.query_one("#runs-title")
        await until(pilot, lambda: "none yet" in title.text, what="the empty runs root said so")

    run(script, app)
