"""The queue in the app (issue 22): Home shows each queued run's place and what it waits for, as `tuitrain queue`
says them; the runs table moves a queued run to the front and cancels it; a queued run's monitor says what it waits
for. Real queued runs of this machine, each waiting on GPU 2 held by a stranger (a recorded NVML table that changes
during the test), in the test's own queue folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli, record, wait_for
from queue_tables import gpu_two, held
from test_tui_app import make_app, press_and_confirm, run, table_rows, until

ON_GPU_TWO = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]", "--set", "training.max_steps=2"]
STRANGER = "GPU 2: 95% full, held by pid 4100077 (user unknown, 22.8 GiB)"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runs folder, the test's own queue folder, and GPU 2 held by a stranger (the app and every queued run's
    supervisor read the same table)."""
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    gpu_two(tmp_path / "nvml.json", taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(tmp_path / "nvml.json"))
    (tmp_path / "runs").mkdir()
    return tmp_path


def queue_runs(base: Path, count: int) -> list[Path]:
    """`count` runs queued for GPU 2, first queued first."""
    queued = []
    for _ in range(count):
        done = cli("run", "demo", "--queue", *ON_GPU_TWO, runs_dir=base / "runs")
        assert done.returncode == 0, done.stdout + done.stderr
        queued.append(base / "runs" / done.stdout.strip())
    return queued


def statuses(app) -> dict[str, str]:
    """Run id → its STATUS cell."""
    return {row[0]: row[1] for row in table_rows(app.screen.query_one("#runs"))}


def waits_line(app) -> str:
    box = app.screen.query_one("#queue-waits")
    return str(box.render()) if box.display else ""


async def highlight(pilot, run_id: str) -> None:
    table = pilot.app.screen.query_one("#runs")
    table.move_cursor(row=[table.coordinate_to_cell_key((i, 0)).row_key.value
                           for i in range(table.row_count)].index(run_id))
    await pilot.pause()


def test_home_shows_each_queued_runs_place_and_what_it_waits_for_live(base: Path) -> None:
    first, second, third = queue_runs(base, 3)
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: statuses(app) == {first.name: "queued 1/3", second.name: "queued 2/3",
                                                     third.name: "queued 3/3"}, timeout=30, what="the queue's places")
        await highlight(pilot, first.name)
        said = await until(pilot, lambda: STRANGER in waits_line(app) and waits_line(app), what="the first's wait")
        assert "queued 1 of 3 in this machine's queue · waits for " + STRANGER in said, said
        await highlight(pilot, third.name)
        said = await until(pilot, lambda: "queued 3 of 3" in waits_line(app) and waits_line(app), what="the third's")
        assert f"waits for GPU 2: run {first.name} (" in said and \
            "is ahead in the queue (and 1 more: enter shows them)" in said, said  # the second is ahead of it too
        await pilot.resize_terminal(80, 24)  # the narrow table: STATUS whole, the line still under it
        await until(pilot, lambda: len(app.screen.query_one("#runs").columns) == 6, what="the narrow columns")
        await until(pilot, lambda: statuses(app)[third.name] == "queued 3/3", what="the narrow STATUS")
        await highlight(pilot, first.name)
        held(base / "nvml.json", {2: 0.97})  # the stranger grew: the line follows without a key
        said = await until(pilot, lambda: "97% full" in waits_line(app) and waits_line(app), timeout=30,
                           what="the new reading of GPU 2")
        assert app.screen.query_one("#queue-waits").region.height >= 1, said

    run(script, app, size=(120, 40))


def said(app, words: str) -> str | None:
    """The message of the app's notification holding `words`, if one came."""
    return next((n.message for n in app._notifications if words in n.message), None)


def test_the_runs_table_puts_a_queued_run_first_and_cancels_one_as_the_cli_does(base: Path) -> None:
    import os

    first, second, third = queue_runs(base, 3)
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: statuses(app).get(third.name) == "queued 3/3", timeout=30, what="the queue")
        await highlight(pilot, third.name)
        assert "t: first · x: cancel" in await until(pilot, lambda: waits_line(app), what="the keys under the table")
        await pilot.press("t")
        await until(pilot, lambda: said(app, f"run {third.name} is first in the queue (it was 3)"), what="the move")
        await until(pilot, lambda: statuses(app) == {third.name: "queued 1/3", first.name: "queued 2/3",
                                                     second.name: "queued 3/3"}, what="the new order")
        await highlight(pilot, second.name)
        await press_and_confirm(pilot, "x")  # a queued run dropped: asked first
        await until(pilot, lambda: said(app, f"run {second.name} cancelled: cancelled while queued"), timeout=30,
                    what="the cancel")
        await until(pilot, lambda: statuses(app) == {third.name: "queued 1/2", first.name: "queued 2/2",
                                                     second.name: "cancelled"}, what="the queue without it")
        assert record(second)["started"] is None
        await pilot.press("x")  # again: refused as `tuitrain cancel` refuses it
        await until(pilot, lambda: said(app, f"run {second.name} already ended (cancelled); there is nothing to "
                                             "cancel"), what="the refusal of an ended run")
        await pilot.press("t")
        await until(pilot, lambda: said(app, "there is nothing to move"), what="the refusal to move it")
        titles = {n.message: n.title for n in app._notifications}
        assert titles[said(app, "there is nothing to move")] == "Cannot move"  # not "Cannot queue" (issue 34)
        assert titles[said(app, "there is nothing to cancel")] == "Cannot cancel"
        assert titles[said(app, f"run {third.name} is first in the queue")] == "First in queue"
        if os.getuid() == 0:  # another user's queued run, as root can make one: only they may move or cancel it
            os.chown(first, 12345, -1)
            await highlight(pilot, first.name)
            for key, verb in (("x", "cancel"), ("t", "move")):
                await (press_and_confirm(pilot, key) if key == "x" else pilot.press(key))
                await until(pilot, lambda verb=verb: said(app, f"run {first.name} is uid 12345's") and
                            said(app, f"only they can {verb} it"), what=f"the refusal to {verb} another's run")
            os.chown(first, 0, -1)
            assert statuses(app)[first.name] == "queued 2/2"

    run(script, app, size=(120, 40), notifications=True)
    for queued in (first, third):
        assert cli("cancel", queued.name, runs_dir=base / "runs").returncode == 0
    wait_for(lambda: record(first)["status"] == record(third)["status"] == "cancelled", 30, "the rest cancelled")


def test_a_queued_runs_monitor_says_what_it_waits_for_live_and_s_cancels_it(base: Path) -> None:
    first, second = queue_runs(base, 2)
    app = make_app(base)

    def header() -> str:
        return app.screen.query_one("#header").text if type(app.screen).__name__ == "MonitorScreen" else ""

    async def script(pilot):
        await until(pilot, lambda: statuses(app).get(second.name) == "queued 2/2", timeout=30, what="the queue")
        await highlight(pilot, second.name)
        await pilot.press("enter")
        shown = await until(pilot, lambda: "queued 2 of 2" in header() and header(), what="the queued header")
        assert "queued 2 of 2 in this machine's queue · s: cancel" in shown, shown
        assert f"waits for GPU 2: run {first.name} (" in shown and "is ahead in the queue" in shown, shown
        assert cli("queue", "move", second.name, "--top", runs_dir=base / "runs").returncode == 0  # from a terminal
        shown = await until(pilot, lambda: "queued 1 of 2" in header() and header(), what="the header to follow")
        assert f"waits for {STRANGER}" in shown, shown
        await press_and_confirm(pilot, "s")  # as `tuitrain stop` does for a queued run: it leaves the queue
        await until(pilot, lambda: said(app, f"run {second.name} was queued: it leaves the queue"), what="the word")
        shown = await until(pilot, lambda: "cancelled" in header() and header(), timeout=30, what="its end")
        assert "queued" not in shown and "waits for" not in shown, shown
        assert record(second)["status"] == "cancelled" and record(second)["started"] is None

    run(script, app, size=(120, 40), notifications=True)
    assert cli("cancel", first.name, runs_dir=base / "runs").returncode == 0


def test_a_run_queued_after_another_waits_for_its_end_in_words_that_read(base: Path) -> None:
    """`waits for after RUN` (issue 34, item 6): the queue's phrase for a dependency reads after "waits for", on Home
    and in the run's monitor."""
    from test_tui_fixtures import RUNNING, make_runs

    make_runs(base / "runs")  # RUNNING's supervisor is this test's own process: it runs as long as the test
    done = cli("run", "demo", "--queue", "--after", RUNNING, "--set", "training.max_steps=2", runs_dir=base / "runs")
    assert done.returncode == 0, done.stdout + done.stderr
    queued = base / "runs" / done.stdout.strip()
    app = make_app(base)
    waits = f"waits for run {RUNNING} to end (running, step 23/40)"

    async def script(pilot):
        await until(pilot, lambda: statuses(app).get(queued.name) == "queued 1/1", timeout=30, what="the queued run")
        await highlight(pilot, queued.name)
        line = await until(pilot, lambda: waits in waits_line(app) and waits_line(app), what="what it waits for")
        assert "after" not in line, line
        await pilot.press("enter")
        monitor = await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen,
                              what="its monitor")
        await until(pilot, lambda: waits in monitor.query_one("#header").text, what="the wait in its header")

    try:
        run(script, app, size=(120, 40))
    finally:
        assert cli("cancel", queued.name, runs_dir=base / "runs").returncode == 0
    wait_for(lambda: record(queued)["status"] == "cancelled", 30, "the queued run cancelled")
