"""A 3 kB paste into a field (issue 34, item 5): the app takes it and the keys typed after it, and an error pane names a
long value instead of printing all of it. How fast is benchmarks/tui_paste.py's to say (docs/benchmarks.md), not a
test's.

A number field (training.learning_rate) checked each edit with Textual's own pattern, which backtracks: 18 digits
and a letter froze the app for a minute, 40 would take years. That test runs the app in a child process, so that the
old pattern fails it by a deadline instead of hanging the suite."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import patient
from test_tui_app import make_app, run, show_field, until
from test_tui_fixtures import make_runs
from tuitrain.tui.plain import PANE_CHARS

LONG = "a" * 3000


def longest_line(widget) -> int:
    return max((len(line) for line in widget.visual.plain.splitlines()), default=0)


def profile_copy(base: Path) -> Path:
    from tuitrain.profile import builtin_profile_path

    (base / "profiles").mkdir(exist_ok=True)
    return Path(shutil.copy(builtin_profile_path(), base / "profiles" / "mine.toml"))


def test_a_3kB_paste_into_the_overrides_is_named_in_the_error_pane_not_printed_whole(tmp_path):
    from textual import events

    from tuitrain.tui.screens.launch import LaunchScreen

    make_runs(tmp_path / "runs")
    app = make_app(tmp_path)

    async def script(pilot):
        app.push_screen(LaunchScreen(profile_copy(tmp_path)))
        dialog = await until(pilot, lambda: app.screen if isinstance(app.screen, LaunchScreen) and
                             app.screen.query("#overrides") else None, what="the launch dialog")
        field = dialog.query_one("#overrides")
        field.focus()
        await pilot.pause(0.1)
        field.post_message(events.Paste(LONG))
        await pilot.press("7")
        await until(pilot, lambda: field.value == LONG + "7", what="the paste and the key after it")
        pane = dialog.query_one("#problems")
        await until(pilot, lambda: "more characters" in pane.visual.plain, 60, "the problem, cut")
        assert longest_line(pane) < PANE_CHARS + 40, pane.visual.plain[:200]

    run(script, app)


def test_a_3kB_path_into_the_editor_is_named_beside_its_field_and_in_the_problems(tmp_path):
    from textual import events

    make_runs(tmp_path / "runs")
    profile = profile_copy(tmp_path)
    app = make_app(tmp_path)

    async def script(pilot):
        app.open_editor(profile)
        editor = await until(pilot, lambda: app.screen if getattr(app.screen, "loaded", False) else None, 60, "editor")
        row = await show_field(pilot, editor, "data.train_file")
        field = row.query_one("Field")
        field.focus()
        await pilot.pause(0.1)
        field.post_message(events.Paste("/data/" * 500))
        await until(pilot, lambda: row.error, 60, "the field's error")
        assert "more characters" in row.error and max(len(line) for line in row.error.splitlines()) < PANE_CHARS + 40
        problems = editor.query_one("#problems")
        await until(pilot, lambda: "more characters" in problems.visual.plain, 60, "the problems pane, cut")
        assert longest_line(problems) < PANE_CHARS + 40

    run(script, app, size=(120, 40))


async def paste_into_the_learning_rate(base: Path) -> str:
    """The child's part: digits and a letter pasted into training.learning_rate, then 3 keys; the field's value."""
    from textual import events

    make_runs(base / "runs")
    app = make_app(base)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_editor(profile_copy(base))
        editor = await until(pilot, lambda: app.screen if getattr(app.screen, "loaded", False) else None, 60, "editor")
        field = (await show_field(pilot, editor, "training.learning_rate")).query_one("Field")
        field.focus()
        field.value = ""
        await pilot.pause(0.1)
        field.post_message(events.Paste("1" * 40 + "x"))  # not a number: refused, whole
        await pilot.press("1", "e", "-", "3")
        await until(pilot, lambda: field.value == "1e-3", what="the keys after the paste")
        return field.value


def test_a_long_number_and_a_letter_pasted_into_a_number_field_is_refused_at_once(tmp_path):
    try:
        child = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True,
                               cwd=Path(__file__).parent, timeout=patient(120))
    except subprocess.TimeoutExpired:
        raise AssertionError("the app was still checking the pasted number after "
                             f"{patient(120):.0f}s (a pattern that backtracks)") from None
    assert child.returncode == 0 and child.stdout.strip().endswith("1e-3"), child.stdout + child.stderr


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    print(asyncio.run(paste_into_the_learning_rate(Path(sys.argv[1]))))
