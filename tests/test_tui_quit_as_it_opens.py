"""The app quits as a screen opens (a launch opening its monitor as the user presses `q`): it ends cleanly.

Textual mounts a screen pushed just before the app exits while it removes that screen's widgets, so a screen's
`on_mount` found its own panes gone and the app ended in a traceback (CI saw it as `NoMatches: '#gpus'`). Each
screen of the app is pushed and the app told to exit in the same tick; none may raise (tui.quit_safe)."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, Callable

import pytest

from test_tui_app import make_app, until
from test_tui_fixtures import FAILED, FINISHED, make_runs
from tuitrain.profile.lookup import BUILTIN_DIR


def openers(runs: Path) -> dict[str, Callable[[Any], Any]]:
    """Each screen's class name -> how the app would open it, on the fixture runs and the demo profile."""
    from tuitrain.tui.screens import (
        check,
        compare,
        confirm,
        data_preview,
        editor,
        export,
        gpus,
        help,
        home,
        launch,
        monitor,
        prompt,
        queue,
        resume,
        stacks,
    )

    demo = BUILTIN_DIR / "demo.toml"
    return {
        "CheckScreen": lambda app: check.CheckScreen(demo),
        "CompareScreen": lambda app: compare.CompareScreen([(runs / FINISHED, "demo"), (runs / FAILED, "demo")]),
        "ConfirmScreen": lambda app: confirm.ConfirmScreen("stop [/data/x]?"),
        "DataPreviewScreen": lambda app: data_preview.DataPreviewScreen(demo),
        "EditorScreen": lambda app: editor.EditorScreen(demo),
        "ExportScreen": lambda app: export.ExportScreen(FINISHED, runs / FINISHED / "output",
                                                        [export.ExportChoice("last", runs / FINISHED, 40)]),
        "GpusScreen": lambda app: gpus.GpusScreen(),
        "HelpScreen": lambda app: help.HelpScreen(app.screen),
        "HomeScreen": lambda app: home.HomeScreen(),
        "LaunchScreen": lambda app: launch.LaunchScreen(demo),
        "MonitorScreen": lambda app: monitor.MonitorScreen(runs / FINISHED),
        "PromptScreen": lambda app: prompt.PromptScreen("name?"),
        "QueueScreen": lambda app: queue.QueueScreen(),
        "ResumeScreen": lambda app: resume.ResumeScreen(runs / FINISHED, "latest"),
        "StacksScreen": lambda app: stacks.StacksScreen(runs / FAILED),
    }


def test_every_screen_of_the_app_is_quit_safe_and_tried_below() -> None:
    from textual.screen import Screen

    import tuitrain.tui.screens as package
    from tuitrain.tui.quit_safe import QuitSafe

    screens = {}
    for path in Path(package.__file__).parent.glob("*.py"):
        module = __import__(f"tuitrain.tui.screens.{path.stem}", fromlist=["_"])
        screens |= {name: cls for name, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Screen) and cls.__module__ == module.__name__}
    assert [name for name, cls in screens.items() if not issubclass(cls, QuitSafe)] == []
    assert set(screens) == set(openers(Path("."))), "each screen is opened as the app quits below"


@pytest.mark.parametrize("quit_by", ["exit", "teardown"])
@pytest.mark.parametrize("name", sorted(openers(Path("."))))
def test_the_app_quits_cleanly_as_a_screen_opens(tmp_path: Path, name: str, quit_by: str) -> None:
    """`exit`: the user's q (App.exit); `teardown`: the app shut down with no exit first (Pilot's end, a test's)."""
    runs = tmp_path / "runs"
    make_runs(runs)
    app = make_app(tmp_path)

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.polls > 0, what="the first poll")
            app.push_screen(openers(runs)[name](app))
            await asyncio.sleep(0)
            if quit_by == "exit":
                app.exit()

    asyncio.run(main())
