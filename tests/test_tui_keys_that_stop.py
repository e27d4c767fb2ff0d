"""Keys that stopped a run by accident (issue 34, item 2).

`/loss` typed on the monitor (as a terminal sends what is typed fast: every key before the app reads the first) ran
`o` and `s` as commands and stopped a two-machine run: the search box took the focus a turn of the app too late, and
on the GPUs, Metrics and Checkpoints tabs a search said only "search works in a log tab". `s` stopped without asking
(`k` asks), and Enter in the launch dialog's Slurm options submitted a job. Now a key typed after `/` goes into the
search, which opens on the log from any tab; a stop, a kill and dropping a queued run ask once; Enter in the Slurm
options ends the typing there."""

from __future__ import annotations

from textual import events

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import RUNNING

NAMES = {"/": "slash", " ": "space"}


def type_at_once(app, text: str) -> None:
    """Keys as a terminal sends a word typed fast: all of them waiting before the app reads the first."""
    for character in text:
        app.post_message(events.Key(NAMES.get(character, character), character))


def requests(base) -> list[str]:  # noqa: F811
    """What was asked of the running fixture run (its control files)."""
    return sorted(p.name for p in (base / "runs" / RUNNING / "control").iterdir())


def test_a_search_typed_at_once_goes_into_the_search_on_every_tab_and_stops_nothing(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        # the GPUs, Metrics and Checkpoints tabs, then the log's (where the last search left it); each word holds an
        # o or an s, and the last term offered is replaced by what is typed
        for tab, word in (("u", "loss"), ("m", "steps"), ("p", "eos"), (None, "os")):
            if tab is not None:
                await pilot.press(tab)
                await pilot.pause(0.2)
            type_at_once(app, "/" + word)
            await until(pilot, lambda word=word: monitor.search.value == word, what=f"{word} in the search")
            assert monitor.active_view() is not None, f"the search opened on the log (after {tab})"
            await pilot.press("enter")
            await until(pilot, lambda word=word: monitor.term == word, what="the search made")
        assert type(app.screen).__name__ == "MonitorScreen"
        assert requests(base) == []  # no `s`: nothing asked of the run
        words = [n.message for n in app._notifications]
        assert not any("copied to the clipboard" in w or "works in a log tab" in w for w in words), words

    run(script, app, notifications=True)


def test_a_filter_typed_at_once_on_home_filters_and_stops_nothing(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        home = app.screen
        order = home.order
        type_at_once(app, "/loss")
        await until(pilot, lambda: home.query_one("#runs-filter").value == "loss", what="the word in the filter")
        assert home.order.sort == order.sort  # `o` did not sort
        assert type(app.screen).__name__ == "HomeScreen" and requests(base) == []  # `s` did not stop

    run(script, app)


def test_s_asks_before_it_stops_a_run_on_the_monitor_and_on_home(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        for answer in ("n", "escape"):
            await pilot.press("s")
            dialog = await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the question")
            assert "Stop run" in str(app.screen.query_one("#question").content), dialog
            await pilot.press(answer)
            await until(pilot, lambda: app.screen is monitor, what="the monitor again")
            assert requests(base) == []
        await pilot.press("s")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the question")
        await pilot.press("enter")  # the focused answer is No
        await until(pilot, lambda: app.screen is monitor, what="the monitor again")
        assert requests(base) == []
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="Home")
        table = app.screen.query_one("#runs")
        table.move_cursor(row=[table.coordinate_to_cell_key((i, 0)).row_key.value
                               for i in range(table.row_count)].index(RUNNING))
        await pilot.press("s")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="Home's question")
        await pilot.press("y")
        await until(pilot, lambda: requests(base) == ["stop"], what="the stop asked of the run")

    run(script, app)


def test_enter_in_the_slurm_options_ends_the_typing_and_submits_nothing(base):  # noqa: F811
    from textual.widgets import Button

    from tuitrain.profile import builtin_profile_path
    from tuitrain.tui.screens.launch import LaunchScreen

    app = make_app(base)

    async def script(pilot):
        app.push_screen(LaunchScreen(builtin_profile_path()))
        dialog = await until(pilot, lambda: app.screen if isinstance(app.screen, LaunchScreen) and
                             app.screen.query("#sbatch") else None, what="the launch dialog")
        dialog.query_one("#sbatch").focus()
        await pilot.pause(0.1)
        await pilot.press(*"--partition", "space", *"gpu", "enter")
        await until(pilot, lambda: isinstance(app.focused, Button) and app.focused.id == "submit",
                    what="the Slurm button focused")
        assert app.screen is dialog and not dialog.busy
        assert "submitting" not in str(dialog.query_one("#plan").content)

    run(script, app)
