"""Home acts on several runs at once, as k9s and lazygit do (issue 38): space marks runs, and s, x and R act on every
marked run after one question that lists what will be done to which runs and names those it cannot be done to, with
why; a digit or l opens a run's monitor on a rank's log; a click on a column's header sorts by it (its header says so);
the pane holding the focus is lit and the key bar shows its keys."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conftest import cli, record, wait_for
from test_tui_app import base, make_app, press_and_confirm, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FAILED, FINISHED, RUNNING, make_runs
from test_tui_home_table import shown_ids


def row(run_id: str, status: str, checkpoints: int = 0):
    from tuitrain.runs.view.live import RunRow

    return RunRow(run_id, "", "demo", status, 0, None, None, "eval_loss", None, 1.0, None, None, None, checkpoints)


# ------------------------------------------------------------------------------ the plan: which runs, and why not

def test_each_verb_names_the_runs_it_cannot_act_on_and_why():
    from tuitrain.tui.bulk import plan_for

    rows = [row("a", "running"), row("b", "finished", 2), row("c", "queued"), row("d", "stopping"),
            row("e", "failed"), row("f", "cancelled"), row("g", "hung?")]
    labels = {r.id: f"18:0{i} {r.id}" for i, r in enumerate(rows)}
    every = [r.id for r in rows] + ["gone"]
    stop = plan_for("stop", every, rows, labels)
    assert [i for i, _ in stop.runs] == ["a", "g"]
    assert {i: why for i, _, why in stop.refused} == {
        "b": "already finished", "c": "queued, not started: x cancels it", "d": "already stopping",
        "e": "already failed", "f": "already cancelled", "gone": "no longer in the runs folder"}
    cancel = plan_for("cancel", every, rows, labels)
    assert [i for i, _ in cancel.runs] == ["c"] and dict((i, w) for i, _, w in cancel.refused)["a"] == "not queued (running)"
    resume = plan_for("resume", every, rows, labels)
    assert [i for i, _ in resume.runs] == ["b"]
    why = {i: w for i, _, w in resume.refused}
    assert why["a"] == "still running: stop it first" and why["e"] == "no checkpoint to resume from"
    assert why["f"] == "cancelled before it started: nothing to resume"
    # the question: what will be done to which runs, then each run left, with why
    lines = stop.question().splitlines()
    assert lines[0] == "Stop 2 runs: save a checkpoint and stop?"
    assert lines[1:3] == ["  • 18:00 a", "  • 18:06 g"] and lines[3] == "Left as they are:"
    assert "  • 18:01 b: already finished" in lines
    assert plan_for("stop", ["b"], rows, labels).question().startswith("Stop: none of the marked runs can be.")


def test_marked_runs_a_verb_cannot_reach_are_said_and_nothing_is_asked(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        for row in range(3):  # space marks the highlighted run and stays on it
            table.move_cursor(row=row)
            await pilot.press("space")
        assert app.screen.marked == [RUNNING, FAILED, FINISHED]
        await pilot.press("x")  # none of them is queued: said, nothing asked, nothing done
        await until(pilot, lambda: any(n.title == "Cancel" for n in app._notifications), what="the refusal")
        said = next(n.message for n in app._notifications if n.title == "Cancel")
        assert type(app.screen).__name__ == "HomeScreen"
        assert said.startswith("Cancel: none of the marked runs can be.")
        assert "00:20 demo: not queued (running)" in said and "00:00 demo: not queued (finished)" in said
        # R: the ended runs with a checkpoint, and the running one named with why; "no" does nothing
        question, _ = await ask(pilot, "R")
        assert question.startswith("Resume 2 runs: a new run from its latest complete checkpoint?")
        assert "• 00:10 demo\n" in question and "• 00:00 demo\n" in question
        assert "• 00:20 demo: still running: stop it first" in question
        await pilot.press("n")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
        assert app.screen.marked == [RUNNING, FAILED, FINISHED]  # nothing done: still marked
        assert sorted(p.name for p in (base / "runs").iterdir()) == sorted([RUNNING, FAILED, FINISHED])

    run(script, app, notifications=True)


# ------------------------------------------------------------------------------ real runs, one question

LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no", "--set", "training.warmup_steps=0"]


async def mark(pilot, run_ids: list[str]) -> None:
    """Space on each of `run_ids` in turn, each highlighted first: marked in that order."""
    table = pilot.app.screen.query_one("#runs")
    for run_id in run_ids:
        table.move_cursor(row=shown_ids(pilot.app).index(run_id))
        await pilot.press("space")


async def ask(pilot, key: str) -> tuple[str, dict[str, str]]:
    """Press `key` on Home's marked runs: the one question it asks, and Home's labels of the runs."""
    await pilot.press(key)
    await until(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmScreen", what="one question")
    return str(pilot.app.screen.query_one("#question").content), pilot.app.screen_stack[-2].labels


def queue_runs(runs: Path) -> list[str]:
    """The runs this machine's queue holds, in its order (`tuitrain queue --json`)."""
    done = cli("queue", "--json", runs_dir=runs)
    assert done.returncode == 0, done.stderr
    return [r["run"] for r in json.loads(done.stdout)["runs"]]


@pytest.mark.slow
def test_marking_three_runs_and_stopping_them_with_one_confirmation(tmp_path):
    """Three demo runs training on the CPU and an ended one, marked; s asks once, listing the three and naming the
    ended one with why; y stops the three (each saves and stops), in one toast."""
    from conftest import events
    from tuitrain.tui.app import TuitrainApp

    runs = tmp_path / "runs"
    make_runs(runs)  # FINISHED among them: a run s cannot stop
    started = []
    for _ in range(3):
        done = cli("run", "demo", "--detach", *LONG, runs_dir=runs, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        started.append(done.stdout.strip().splitlines()[-1])
    for run_id in started:  # each has taken a step: a stop is honoured at the next step's end
        wait_for(lambda r=run_id: any(e["event"] == "log" for e in events(runs / r)), 300, f"{run_id} training")
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3, monitor_interval=0.2)

    async def main():
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await until(pilot, lambda: set(started) <= set(shown_ids(app)), 60, "the three runs")
            await mark(pilot, [*started, FINISHED])
            assert app.screen.marked == [*started, FINISHED]
            question, labels = await ask(pilot, "s")
            assert question.startswith("Stop 3 runs: save a checkpoint and stop?")
            for run_id in started:
                assert f"• {labels[run_id]}\n" in question
            assert f"• {labels[FINISHED]}: already finished" in question
            await pilot.press("y")
            await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
            assert app.screen.marked == [FINISHED]  # the three were acted on: unmarked
            await until(pilot, lambda: any(n.title == "Stop" and n.message.startswith("Stop: 3 of 3 runs")
                                           for n in app._notifications), 60, "one toast for the three")
            await until(pilot, lambda: all(record(runs / r)["status"] == "stopped" for r in started), 240,
                        "the three runs stopped")
            await until(pilot, lambda: all({r.id: r.status for r in app.rows}.get(i) == "stopped" for i in started),
                        30, "Home says so")
            assert {r.id: r.status for r in app.rows}[FINISHED] == "finished"

    asyncio.run(main())
    for run_id in started:  # a stop saves a checkpoint first
        assert any(e["event"] == "save" for e in events(runs / run_id)), run_id


@pytest.mark.slow
def test_marking_two_queued_runs_and_cancelling_them_with_one_confirmation(tmp_path, monkeypatch):
    """Three runs queued for a GPU a stranger holds (a recorded NVML table: they never start); two marked with an
    ended run; x asks once, naming the two and the ended one with why; y cancels both, in one toast: each ends
    cancelled, never started, and leaves the queue; the third, unmarked, still waits in it."""
    from queue_tables import gpu_two
    from tuitrain.tui.app import TuitrainApp

    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    table = tmp_path / "nvml.json"
    gpu_two(table, taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    runs = tmp_path / "runs"
    make_runs(runs)  # FINISHED among them: a run x cannot cancel
    queued = []
    for _ in range(3):
        done = cli("run", "demo", "--queue", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]",
                   runs_dir=runs, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        queued.append(done.stdout.strip().splitlines()[-1])
    assert all(record(runs / r)["status"] == "queued" for r in queued)
    assert queue_runs(runs) == queued
    cancelled, kept = queued[:2], queued[2]
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3, monitor_interval=0.2)

    async def main():
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await until(pilot, lambda: set(queued) <= set(shown_ids(app)), 60, "the three queued runs")
            await mark(pilot, [*cancelled, FINISHED])
            assert app.screen.marked == [*cancelled, FINISHED]
            question, labels = await ask(pilot, "x")
            assert question.startswith("Cancel 2 runs: leave the queue (never started)?")
            for run_id in cancelled:
                assert f"• {labels[run_id]}\n" in question
            assert f"• {labels[FINISHED]}: not queued (finished)" in question and labels[kept] not in question
            await pilot.press("y")
            await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
            assert app.screen.marked == [FINISHED]
            await until(pilot, lambda: any(n.title == "Cancel" and n.message.startswith("Cancel: 2 of 2 runs")
                                           for n in app._notifications), 60, "one toast for the two")
            await until(pilot, lambda: all({r.id: r.status for r in app.rows}.get(i) == "cancelled" for i in cancelled),
                        30, "Home says so")
            assert {r.id: r.status for r in app.rows}[kept] == "queued"

    asyncio.run(main())
    for run_id in cancelled:
        rec = record(runs / run_id)
        assert rec["status"] == "cancelled" and rec["started"] is None, rec
    assert queue_runs(runs) == [kept]  # the unmarked run still waits, alone in the queue
    rec = record(runs / kept)
    assert rec["status"] == "queued" and rec["started"] is None
    assert not (runs / kept / "control" / "cancel").exists()
    done = cli("cancel", kept, runs_dir=runs)  # its supervisor would wait for the GPU for ever
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_marking_two_ended_runs_and_resuming_them_with_one_confirmation(tmp_path):
    """A demo run stopped after a few steps (its stop saved a checkpoint) and one that finished its eight, marked;
    R asks once, naming both; y starts a new run from each one's latest checkpoint with the app's overrides (a few
    steps more), in one toast. Each new run's parent is the run it continues, it begins from that run's last
    checkpoint, trains the steps after it to the new max_steps and finishes; the parents are left as they were."""
    from conftest import FAST, events, losses, wait_until_ended
    from tuitrain.tui.app import TuitrainApp

    runs = tmp_path / "runs"
    parents = []
    for options in (LONG, FAST):
        done = cli("run", "demo", "--detach", *options, runs_dir=runs, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        parents.append(done.stdout.strip().splitlines()[-1])
    stopped, finished = parents
    wait_for(lambda: any(e["event"] == "log" for e in events(runs / stopped)), 300, f"{stopped} training")
    assert cli("stop", stopped, runs_dir=runs).returncode == 0
    assert wait_until_ended(runs / stopped, 300)["status"] == "stopped"
    assert wait_until_ended(runs / finished, 300)["status"] == "finished"
    last = {p: max(e["step"] for e in events(runs / p) if e["event"] == "save") for p in parents}
    assert last[finished] == 8
    max_steps = max(last.values()) + 3  # each new run trains a few steps, from wherever its parent stopped
    before = {p: (runs / p / "run.json").read_text() for p in parents}
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3, monitor_interval=0.2,
                      launch_overrides=[f"training.max_steps={max_steps}"])

    def children() -> dict[str, str]:
        """Each resumed run by its parent."""
        return {record(path)["parent"]: path.name for path in runs.iterdir()
                if path.name not in parents and (path / "run.json").exists()}

    async def main():
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await until(pilot, lambda: set(parents) <= set(shown_ids(app)), 60, "the two runs")
            await mark(pilot, parents)
            assert app.screen.marked == parents
            question, labels = await ask(pilot, "R")
            assert question.splitlines() == ["Resume 2 runs: a new run from its latest complete checkpoint?",
                                             *(f"  • {labels[p]}" for p in parents)]
            await pilot.press("y")
            await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
            assert app.screen.marked == []
            toast = await until(pilot, lambda: next((n.message for n in app._notifications if n.title == "Resume"
                                                     and n.message.startswith("Resume: 2 of 2 runs")), None),
                                120, "one toast for the two")
            await until(pilot, lambda: len(children()) == 2 and set(children().values()) <= set(shown_ids(app)), 60,
                        "Home shows the two new runs")
            for parent, child in children().items():
                assert f"{labels[parent]}: {child} started" in toast, toast

    asyncio.run(main())
    made = children()
    assert sorted(made) == sorted(parents)
    for parent, child in made.items():
        checkpoint = Path(record(runs / parent)["output_dir"]) / f"checkpoint-{last[parent]}"
        assert Path(record(runs / child)["resume_from"]) == checkpoint, record(runs / child)
        assert wait_until_ended(runs / child, 300)["status"] == "finished"
        assert sorted(losses(runs / child)) == list(range(last[parent] + 1, max_steps + 1)), parent
        assert (runs / parent / "run.json").read_text() == before[parent]  # the parent is left as it was


# ------------------------------------------------------------------------------ a rank's log, straight from Home

def test_a_digit_opens_the_monitor_on_that_ranks_log_and_l_on_the_failed_ranks(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        table.move_cursor(row=shown_ids(app).index(FINISHED))
        await pilot.press("1")
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")
        monitor = app.screen
        assert monitor.query_one("#tabs").active == "tab-rank-1" and monitor.active_view().id == "log-rank-1"
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
        table.move_cursor(row=shown_ids(app).index(FAILED))
        await pilot.press("l")  # the failed rank's log, on its traceback
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")
        await until(pilot, lambda: app.screen.query_one("#tabs").active == "tab-rank-1", what="rank 1's log")
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")
        await pilot.press("5")  # the failed run has two ranks: said, every rank's log shown
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")
        await until(pilot, lambda: any("this run has 2 ranks (0 to 1)" in n.message for n in app._notifications),
                    what="the rank it has not")

    run(script, app, notifications=True)


# ------------------------------------------------------------------------------ sort by a click, focus you can see

def header_x(table, column: str) -> int:
    """The x of `column`'s header as the table last drew it (its widths may be laid out again by then)."""
    line = table.render_line(0).text
    x = line.find(f" {column}")
    assert x >= 0, (column, line)
    return x + 2


async def click_header(pilot, table, column: str) -> None:
    """Click `column`'s header once the table's header line has held still for a few frames: a poll that lays
    the widths out again between reading the header and the click would land it on another column (a busy machine
    makes that gap long)."""
    lines: list[str] = []

    def still() -> bool:
        lines.append(table.render_line(0).text)
        return len(lines) >= 4 and len(set(lines[-4:])) == 1

    await until(pilot, still, what=f"the header line to hold still before clicking {column}")
    await pilot.click("#runs", offset=(header_x(table, column), 0))


def headers(table) -> list[str]:
    return [str(col.label) for col in table.columns.values()]


def test_a_click_on_a_header_sorts_by_it_and_the_header_says_the_sort(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        title = app.screen.query_one("#runs-title")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        assert headers(table)[:2] == ["RUN ↓", "STATUS"]  # newest first
        await click_header(pilot, table, "LOSS")
        await until(pilot, lambda: "by loss ↑" in title.text, what="sorted by loss")
        assert shown_ids(app) == [FINISHED, RUNNING, FAILED] and "LOSS ↑" in headers(table)
        assert "RUN ↓" not in headers(table) and "RUN" in headers(table)
        await click_header(pilot, table, "LOSS")  # again: reversed
        await until(pilot, lambda: "by loss ↓" in title.text, what="reversed")
        assert shown_ids(app) == [FAILED, RUNNING, FINISHED] and "LOSS ↓" in headers(table)
        await click_header(pilot, table, "STEP")
        await until(pilot, lambda: "by step ↑" in title.text, what="sorted by step")
        assert shown_ids(app) == [FAILED, RUNNING, FINISHED] and "STEP ↑" in headers(table)
        await pilot.press("o")  # o goes on from there: the next sort, said in the header too
        await until(pilot, lambda: "by time ↑" in title.text, what="sorted by time")
        assert "TIME ↑" in headers(table)

    run(script, app, size=(120, 30))


def test_the_focused_pane_is_lit_and_the_key_bar_shows_its_keys(base):  # noqa: F811
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.runs.control import REQUESTS
    from tuitrain.tui.widgets.key_bar import KeyBar

    app = make_app(base)

    async def script(pilot):
        screen = app.screen
        table = screen.query_one("#runs")
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        bar = screen.query_one(KeyBar)
        runs_title, profiles_title = screen.query_one("#runs-title"), screen.query_one("#profiles-pane .pane-title")
        assert app.focused is table
        said = bar.render().plain
        assert " s Stop " in said and " C Compare " in said and " space Mark " in said and " l Log " in said
        assert " r Run " not in said and " e Edit " not in said and " n New " in said and " q Quit " in said
        lit = runs_title.styles.background
        assert lit != profiles_title.styles.background
        await pilot.press("shift+tab")
        await until(pilot, lambda: app.focused is screen.query_one("#profiles"), what="the profiles focused")
        await pilot.pause(0.1)
        said = bar.render().plain
        assert " r Run " in said and " e Edit " in said and " s Stop " not in said and " C Compare " not in said
        assert profiles_title.styles.background == lit and runs_title.styles.background != lit
        await press_and_confirm(pilot, "s")  # a key works from either pane, shown or not: the highlighted run asked
        asked = RunPaths(base / "runs" / RUNNING).control_request(REQUESTS["stop"])
        await until(pilot, asked.exists, what="the stop asked")

    run(script, app, size=(120, 30))


def test_keys_of_the_several_runs_are_in_the_guide():
    reference = (Path(__file__).parent.parent / "docs" / "guide" / "reference.md").read_text()
    for words in ("| `space` | mark the highlighted run", "| `0`–`9` |", "a click on a header sorts by it", "| `v` |"):
        assert words in reference, words
