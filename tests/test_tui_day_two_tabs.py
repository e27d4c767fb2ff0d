"""Issue 21, item 6 and the twice-bound `g` of item 7: keys sent while a tab switches are never lost.

The keys are posted as a terminal sends them (one after another, with no pause or a short one, not waiting for
the app to finish the last), then the test waits, with a generous limit, for the tab they lead to: a lost key, or a
late focus in a pane just left that took the tabs back to it, never gets there."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil

import pytest
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

from test_tui_app import make_app, run, until
from test_tui_editor_friction import open_editor
from test_tui_fixtures import make_runs
from test_tui_multinode import make_multinode_run, open_monitor, run_app

CHARACTERS = {"right_square_bracket": "]", "left_square_bracket": "["}


async def send_keys(app, keys: list[str], gap: float) -> None:
    """Post the keys as the terminal driver does: the app is not waited on between them."""
    for key in keys:
        app.post_message(events.Key(key, CHARACTERS.get(key)))
        if gap:
            await asyncio.sleep(gap)


async def settled_on(pilot, tabs, pane: str) -> None:
    """The tabs reach `pane` with the focus inside it, and are still there once the app has nothing left to do."""
    app = pilot.app

    def there() -> bool:
        focused = app.focused
        return tabs.active == pane and focused is not None and (tabs.active_pane in focused.ancestors
                                                                 or focused is tabs.query_one("ContentTabs"))

    await until(pilot, there, timeout=60, what=f"the tab {pane}")
    for _ in range(3):
        await pilot.pause()
    assert tabs.active == pane


@pytest.fixture
def base(tmp_path):
    make_runs(tmp_path / "runs")
    return tmp_path


@pytest.mark.parametrize("gap", [0, 0.05, 0.3], ids=["no-pause", "short-pause", "pause"])
def test_section_keys_sent_while_a_section_opens_all_count(base, gap):
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, None)
        tabs = editor.query_one("#sections")
        await send_keys(app, ["ctrl+pagedown"] * 5, gap)
        await settled_on(pilot, tabs, "sec-hardware")
        await send_keys(app, ["ctrl+pageup"] * 3, gap)
        await settled_on(pilot, tabs, "sec-data")

    run(script, app, size=(120, 40))


def test_arrow_keys_on_the_section_tabs_switch_sections(base):
    app = make_app(base)

    async def script(pilot):
        editor = await open_editor(pilot, None)
        tabs = editor.query_one("#sections")
        assert app.focused is tabs.query_one("ContentTabs")  # where the editor opens
        await send_keys(app, ["right"] * 3, 0)
        await settled_on(pilot, tabs, "sec-training")
        await send_keys(app, ["left"] * 4, 0)
        await settled_on(pilot, tabs, "sec-logging")  # round the end

    run(script, app, size=(120, 40))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_the_editors_key_bar_shows_the_section_keys(base, size):
    app = make_app(base)

    async def script(pilot):
        from tuitrain.tui.widgets.key_bar import KeyBar

        editor = await open_editor(pilot, None)
        keys = editor.query_one(KeyBar).render().plain
        assert " ^s Save " in keys and " Next section " in keys and " q Quit " in keys, keys

    run(script, app, size=size)


@pytest.mark.parametrize("gap", [0, 0.05], ids=["no-pause", "short-pause"])
def test_tab_keys_sent_while_a_monitor_tab_switches_all_count(tmp_path, gap):
    make_multinode_run(tmp_path / "runs")
    app = make_app(tmp_path)

    async def script(pilot):
        monitor = await open_monitor(pilot)
        tabs = monitor.query_one("#tabs")
        await send_keys(app, ["right_square_bracket"] * 5, gap)  # all ranks → rank 0-3 → the launcher
        await settled_on(pilot, tabs, "tab-launcher")
        assert app.focused is monitor.query_one("#log-launcher")
        await send_keys(app, ["left_square_bracket"] * 2, gap)
        await settled_on(pilot, tabs, "tab-rank-2")
        monitor.query_one("#tabs ContentTabs").focus()  # the tab bar itself: arrows
        await send_keys(app, ["right"] * 2, gap)
        await settled_on(pilot, tabs, "tab-launcher")

    run_app(app, script, size=(80, 24))


def test_g_opens_the_gpus_screen_from_the_monitor(tmp_path):
    make_multinode_run(tmp_path / "runs")
    app = make_app(tmp_path)

    async def script(pilot):
        monitor = await open_monitor(pilot)
        assert app.focused is monitor.query_one("#log-all")  # a log view has the focus, as the monitor opens
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")

    run_app(app, script)


# ------------------------------------------------------------------------------ keys bound twice

# a key a screen takes from the app on purpose: (screen, key)
MEANT = {("HelpScreen", "q"), ("HelpScreen", "question_mark"), ("DataPreviewScreen", "q"),
         ("RunsTable", "enter")}  # the runs table's enter selects the row, whose RowSelected opens it: Home's enter
TEXTUAL_OWN = {"ctrl+c", "super+c"}  # Textual's copy keys: its screens and inputs share them


def bound(cls: type, ours_only: bool = False) -> dict[str, list[tuple[str, Binding]]]:
    """key → (class, binding) for every binding of `cls` and its bases (`ours_only`: tuitrain's classes), by key."""
    keys: dict[str, list[tuple[str, Binding]]] = {}
    for klass in reversed(cls.__mro__):
        if ours_only and not klass.__module__.startswith("tuitrain."):
            continue  # a Textual widget's own keys (DataTable's enter) under a thin subclass of ours (PlainTable)
        for binding in Binding.make_bindings(klass.__dict__.get("BINDINGS", [])):
            keys.setdefault(binding.key, []).append((klass.__name__, binding))
    return keys


def our_classes(package: str, kind: type) -> list[tuple[type, str]]:
    """The `kind` classes defined in tuitrain.tui.<package>, each with its module's source."""
    module = importlib.import_module(f"tuitrain.tui.{package}")
    found = []
    for info in pkgutil.iter_modules(module.__path__):
        sub = importlib.import_module(f"tuitrain.tui.{package}.{info.name}")
        source = inspect.getsource(sub)
        found += [(c, source) for c in vars(sub).values()
                  if inspect.isclass(c) and issubclass(c, kind) and c.__module__ == sub.__name__]
    return found


def test_no_key_is_bound_twice_on_a_screen():
    """A key means one thing on a screen: the screen binds it once, and neither it nor one of its widgets takes a
    key the app binds (as the monitor's log views took `g`, GPUs), nor a widget a key of its screen (as the GPU
    list took ctrl+pagedown) unless the screen's binding comes first (priority)."""
    from tuitrain.tui.app import TuitrainApp

    app_keys = bound(TuitrainApp)
    widgets = our_classes("widgets", Widget)
    clashes = []
    for screen, source in our_classes("screens", Screen):
        screen_keys = bound(screen)
        for key, bindings in screen_keys.items():
            if len({b.action for _, b in bindings}) > 1:
                clashes.append(f"{screen.__name__} binds {key} to {[b.action for _, b in bindings]}")
            if key in app_keys and key not in TEXTUAL_OWN and (screen.__name__, key) not in MEANT:
                clashes.append(f"{screen.__name__} takes {key} from the app")
        for widget, _ in widgets:
            if not any(part == widget.__name__ for part in source.replace("(", " ").replace(",", " ").split()):
                continue  # not used by this screen
            for key in bound(widget, ours_only=True):
                if key in TEXTUAL_OWN:
                    continue
                if key in app_keys and not any(b.priority for _, b in app_keys[key]):
                    clashes.append(f"{widget.__name__} on {screen.__name__} takes {key} from the app")
                if key in screen_keys and not all(b.priority for _, b in screen_keys[key]) \
                        and (widget.__name__, key) not in MEANT:
                    clashes.append(f"{widget.__name__} on {screen.__name__} takes {key} from the screen")
    assert clashes == []
