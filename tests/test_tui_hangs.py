"""Issue 26 in the app: the monitor's header says a live run is hung? (runs.view.hang's verdict: which ranks stopped moving
and since when, a straggler), and its `h` takes every rank's stacks in a worker (runs.view.stacks.gather, as `tuitrain
stacks`) and shows their digest. Fixed run directories (test_tui_fixtures.make_runs) with heartbeats written here;
the stacks are a real process's, a sleeper that answers SIGUSR2 as a rank does (faulthandler)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from test_tui_app import base, make_app, until  # noqa: F401 (base: a fixture)
from test_tui_fixtures import FIXED_CLOCK, RUNNING, fixed_time
from test_tui_multinode import open_monitor, run_app

fixed_time()

SLEEPER = """import faulthandler, signal, sys, time
out = open(sys.argv[1], "a")
faulthandler.register(signal.SIGUSR2, file=out, all_threads=True, chain=False)
print("ready", flush=True)
while True:
    time.sleep(3600)  # the hang
"""


def write_beat(run_dir: Path, rank: int, age: float, step: int = 23, step_seconds: float = 0.5) -> None:
    folder = run_dir / "heartbeats"
    folder.mkdir(exist_ok=True)
    moved = FIXED_CLOCK - age
    (folder / f"rank-{rank}.json").write_text(json.dumps(
        {"rank": rank, "pid": None, "step": step, "phase": "step", "time": moved, "since": moved,
         "step_seconds": step_seconds, "slow_seconds": {}}), encoding="utf-8")


def header(monitor) -> str:
    from tuitrain.tui.widgets.text_line import TextLine

    return monitor.query_one("#header", TextLine).text


def test_the_monitor_header_says_which_ranks_stopped_moving_and_since_when(base):  # noqa: F811
    run_dir = base / "runs" / RUNNING
    write_beat(run_dir, 0, age=300)  # 5 minutes without a move: past the 60 s floor

    async def script(pilot):
        monitor = await open_monitor(pilot, RUNNING)
        said = await until(pilot, lambda: "hung?" in header(monitor) and header(monitor), what="hung? in the header")
        lines = said.splitlines()
        assert lines[0].startswith("● hung? · step 23/40"), said
        assert lines[2].startswith("hung? rank 0 made no progress for 300s (since 00:55:00): rank 0 in step 23"), said
        assert lines[2].endswith("· h: stacks"), said
        write_beat(run_dir, 0, age=1)  # it moves again
        await until(pilot, lambda: "hung?" not in header(monitor), what="hung? to leave the header")
        assert header(monitor).startswith("● running · step 23/40")

    run_app(make_app(base), script)


def test_a_hung_run_asked_to_stop_says_what_the_stop_waits_for(base):  # noqa: F811
    run_dir = base / "runs" / RUNNING
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, "status": "stopping"}))
    write_beat(run_dir, 0, age=300)

    async def script(pilot):
        monitor = await open_monitor(pilot, RUNNING)
        said = await until(pilot, lambda: "hung?" in header(monitor) and header(monitor), what="hung? in the header")
        assert said.splitlines()[3] == ("rank 0 made no progress for 300s (hung?): the stop is taken at a step's end, "
                                        "which it may never reach · k: kill every process now"), said

    run_app(make_app(base), script, size=(220, 36))


def test_a_straggler_is_named_in_the_header(base):  # noqa: F811
    run_dir = base / "runs" / RUNNING
    write_beat(run_dir, 0, age=1, step_seconds=0.5)
    write_beat(run_dir, 1, age=1, step_seconds=0.5)
    write_beat(run_dir, 2, age=1, step_seconds=2.0)

    async def script(pilot):
        monitor = await open_monitor(pilot, RUNNING)
        said = await until(pilot, lambda: "straggler" in header(monitor) and header(monitor), what="the straggler")
        assert "straggler: rank 2's steps take 2.00s, the others' 0.50s" in said and "hung?" not in said, said

    run_app(make_app(base), script)


@contextmanager
def sleeper_rank(run_dir: Path, folder: Path, script: str = SLEEPER) -> Iterator[subprocess.Popen[str]]:
    """The run's rank 0 as a real process that answers SIGUSR2 as a rank does (SLEEPER), named in its run.json."""
    sleeper = folder / "sleeper.py"
    sleeper.write_text(script, encoding="utf-8")
    (run_dir / "stacks").mkdir()
    proc = subprocess.Popen([sys.executable, str(sleeper), str(run_dir / "stacks" / "rank-0.txt")],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        record = json.loads((run_dir / "run.json").read_text())
        record["processes"] = {"rank 0": {"pid": proc.pid, "started": psutil.Process(proc.pid).create_time()}}
        (run_dir / "run.json").write_text(json.dumps(record))
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_h_takes_every_ranks_stacks_in_a_worker_and_shows_the_digest(base, tmp_path):  # noqa: F811
    from textual.widgets import Static

    run_dir = base / "runs" / RUNNING
    with sleeper_rank(run_dir, tmp_path) as proc:
        async def script(pilot):
            monitor = await open_monitor(pilot, RUNNING)
            await pilot.press("h")
            screen = await until(pilot, lambda: type(pilot.app.screen).__name__ == "StacksScreen" and pilot.app.screen,
                                 what="the stacks screen")
            said = str(screen.query_one("#stacks", Static).content)
            assert "taking every rank's stacks" in said or screen.shown, said  # the screen shows before the stacks come
            await until(pilot, lambda: screen.shown, timeout=30, what="the stacks")
            lines = screen.shown.splitlines()
            assert lines[:2] == ["digest", "  rank 0: in your script, sleeper.py line 6 `time.sleep(…)`"], screen.shown
            assert any(line.startswith(f"rank 0 (pid {proc.pid}, ") for line in lines), screen.shown
            assert "<module> sleeper.py:6" in lines, screen.shown
            assert json.loads((run_dir / "stacks" / "digest.json").read_text())["lines"] == [lines[1].strip()]
            await pilot.press("escape")
            await until(pilot, lambda: pilot.app.screen is monitor, what="back to the monitor")

        run_app(make_app(base), script)


TWO_THREADS = """import faulthandler, signal, sys, threading, time
out = open(sys.argv[1], "a")
faulthandler.register(signal.SIGUSR2, file=out, all_threads=True, chain=False)
def side_loop():
    time.sleep(3600)
threading.Thread(target=side_loop, daemon=True).start()
print("ready", flush=True)
while True:
    time.sleep(3600)  # the hang
"""


def test_a_in_the_stacks_shows_every_thread_as_stacks_all_threads_prints_it(base, tmp_path):  # noqa: F811
    """A rank with a second thread: the main thread alone, then with `a` both threads, each frame, the rank's lines
    as `tuitrain stacks --all-threads` prints them; `a` again, the main thread alone."""
    from conftest import cli

    run_dir = base / "runs" / RUNNING
    with sleeper_rank(run_dir, tmp_path, TWO_THREADS):
        async def script(pilot):
            await open_monitor(pilot, RUNNING)
            await pilot.press("h")
            screen = await until(pilot, lambda: type(pilot.app.screen).__name__ == "StacksScreen" and pilot.app.screen,
                                 what="the stacks screen")
            await until(pilot, lambda: screen.shown, timeout=30, what="the stacks")
            assert "(+1 other thread)" in screen.shown.splitlines() and "side_loop" not in screen.shown, screen.shown
            await pilot.press("a")
            await until(pilot, lambda: "side_loop" in screen.shown, what="every thread")
            shown.append(screen.shown)
            await pilot.press("a")
            await until(pilot, lambda: "side_loop" not in screen.shown, what="the main thread alone again")
            await pilot.press("r")  # the same stacks again: they still replace "taking…"
            await until(pilot, lambda: str(screen.query_one("#stacks").content).startswith("Stacks")
                        or "(+1 other thread)" in str(screen.query_one("#stacks").content), timeout=30,
                        what="the stacks taken again")

        shown: list[str] = []
        run_app(make_app(base), script)
        printed = cli("stacks", RUNNING, "--all-threads", runs_dir=base / "runs")
    assert printed.returncode == 0, printed.stderr

    def rank_lines(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("rank 0 (pid "))
        end = lines.index("", start)
        return [line.replace(", took the signal", "") for line in lines[start:end] if not set(line) <= {"="}]

    ours = rank_lines(shown[0])
    assert ours == rank_lines(printed.stdout), (shown[0], printed.stdout)
    assert ours[1].endswith("(main, 1 frame):") and "  <module> sleeper.py:9" in ours, ours
    assert "  side_loop sleeper.py:5" in ours, ours


def test_h_on_an_ended_run_says_there_is_nothing_to_take(base):  # noqa: F811
    from test_tui_fixtures import FINISHED

    async def script(pilot):
        monitor = await open_monitor(pilot, FINISHED)
        await pilot.press("h")
        await until(pilot, lambda: any("no stacks to take" in str(n.message) for n in pilot.app._notifications),
                    what="the warning")
        assert pilot.app.screen is monitor

    run_app(make_app(base), script)
