"""A run of another workstation in the app's monitor (issue 23): its files mirrored into a cache folder here over
one ssh connection (remote.run_mirror: `tuitrain workstations --mirror RUN` there), its requests sent to the box.
On the namespace hosts (tests/hosts.py), as the user would."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import pytest

from conftest import patient, wait_for, wait_until_ended
from test_workstations import LONG, boxes, on_host, started, tuitrain_processes  # noqa: F401  (boxes: the fixture)

pytestmark = pytest.mark.slow


@pytest.fixture
def cache(boxes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    monkeypatch.setenv("XDG_CACHE_HOME", str(boxes / "cache"))
    return boxes / "cache" / "tuitrain" / "workstations"


def log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def mirror_of(host: str, run: str, news: "queue.Queue[Any]") -> Any:
    from tuitrain import __version__
    from tuitrain.remote.run_mirror import RunMirror, cache_dir
    from tuitrain.remote.workstations import find, workstations

    mirror = RunMirror(find(host, workstations()), __version__, run, cache_dir(host, run), news.put)
    mirror.start()
    return mirror


def test_a_run_training_on_a_box_is_mirrored_as_it_grows_and_stop_leaves_nothing_there(
        hosts: Any, boxes: Path, cache: Path) -> None:  # noqa: F811
    run = started(hosts, boxes, "node1", *LONG)
    there = boxes / "node1-runs" / run
    here = cache / "node1" / run
    news: queue.Queue[Any] = queue.Queue()
    mirror = None
    try:
        wait_for(lambda: log_size(there / "logs" / "rank-0.log") > 0, 180, "node1's run writing its log")
        mirror = mirror_of("node1", run, news)
        wait_for(lambda: (here / "run.json").is_file() and log_size(here / "logs" / "rank-0.log") > 0, 60,
                 "the run's record and log mirrored here")
        assert tuitrain_processes(boxes, "workstations", "--mirror", run), "one tuitrain mirrors it there"
        wait_for(lambda: '"loss"' in text(here / "events.jsonl"), 180, "a logged step mirrored here")
        had = log_size(here / "events.jsonl")
        wait_for(lambda: log_size(here / "events.jsonl") > had, 60, "new steps keep arriving")
        assert (here / "events.jsonl").read_bytes() == (there / "events.jsonl").read_bytes()[:log_size(here / "events.jsonl")]
        assert (here / ".mirror" / "checkpoints.json").is_file()
        assert all(n.problem is None for n in list(news.queue)), list(news.queue)
    finally:
        if mirror is not None:
            mirror.stop(wait=patient(10))
        on_host(hosts, boxes, "node1", "stop", run, "--now")
    assert mirror is not None and not mirror.running
    wait_for(lambda: not tuitrain_processes(boxes, "workstations", "--mirror"), 60, "no mirror left on node1")
    wait_until_ended(there, 120)


def test_a_mirror_goes_on_from_what_the_cache_holds_and_a_missing_run_is_one_line(
        hosts: Any, boxes: Path, cache: Path) -> None:  # noqa: F811
    from test_tui_fixtures import FINISHED, make_runs

    make_runs(boxes / "node1-runs")
    there = boxes / "node1-runs" / FINISHED
    here = cache / "node1" / FINISHED
    for attempt in range(2):  # the second starts from the cache's offsets: nothing twice
        news: queue.Queue[Any] = queue.Queue()
        mirror = mirror_of("node1", FINISHED, news)
        try:
            wait_for(lambda: log_size(here / "events.jsonl") == log_size(there / "events.jsonl") and
                     (here / "logs" / "rank-0.log").read_bytes() == (there / "logs" / "rank-0.log").read_bytes(), 60,
                     f"the run mirrored (attempt {attempt + 1})")
        finally:
            mirror.stop(wait=patient(10))
    assert (here / "events.jsonl").read_bytes() == (there / "events.jsonl").read_bytes()

    news = queue.Queue()
    mirror = mirror_of("node1", "20990101-nope", news)
    try:
        said = wait_for(lambda: next((n for n in list(news.queue) if n.problem), None), 60, "why it cannot be mirrored")
        assert said.problem.startswith("node1: no run '20990101-nope' under ") and "\n" not in said.problem, said
    finally:
        mirror.stop(wait=patient(10))
    wait_for(lambda: not tuitrain_processes(boxes, "workstations", "--mirror"), 60, "no mirror left on node1")


def test_enter_on_a_boxs_run_opens_its_monitor_and_its_stop_stops_it_there(
        hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_tui_app import make_app, press_and_confirm, run, until
    from test_tui_fixtures import make_runs
    from test_tui_home_table import shown_ids
    from test_workstations import kill_every_sshd, settings
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.rundir.record import read_record
    from tuitrain.tui.screens.monitor import MonitorScreen
    from tuitrain.tui.screens.resume import ResumeScreen

    make_runs(tmp_path / "runs")
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run_id = started(hosts, tmp_path, "node1", *LONG)
    there = tmp_path / "node1-runs" / run_id
    app = make_app(tmp_path)

    def status_there() -> str:
        return str(read_record(RunPaths(there)).get("status"))

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: f"node1:{run_id}" in shown_ids(app), 60, what="node1's run in Home")
        app.screen.query_one("#runs").move_cursor(row=shown_ids(app).index(f"node1:{run_id}"))
        await pilot.press("enter")
        monitor = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#title")
                              and app.screen, 60, what="the remote run's monitor, composed")
        assert monitor.run_dir == tmp_path / "cache" / "tuitrain" / "workstations" / "node1" / run_id
        assert monitor.query_one("#title").text.endswith(" · on node1"), monitor.query_one("#title").text
        header = monitor.query_one("#header")
        await until(pilot, lambda: "step 0/" not in header.text and "running" in header.text, 180,
                    what="the run's steps in the monitor")
        await until(pilot, lambda: monitor.run_watch.ranks[0].size > 0, 60, what="its log")
        await press_and_confirm(pilot, "s")
        await until(pilot, lambda: status_there() == "stopped", 300, what="the run stopped on node1")
        await until(pilot, lambda: "stopped" in header.text, 30, what="the monitor saying it stopped")
        assert list((there / "output").glob("checkpoint-*")), "the stop saved a checkpoint there"
        assert not (monitor.run_dir / "control").exists(), "nothing asked of the cache"

        await pilot.press("R")  # the resume dialog; resumed there, its monitor in this one's place
        await until(pilot, lambda: isinstance(app.screen, ResumeScreen), 30, what="the resume dialog")
        await pilot.press("enter")
        resumed = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen is not monitor
                              and app.screen.query("#header") and app.screen, 300, what="the resumed run's monitor")
        new_there = tmp_path / "node1-runs" / resumed.run_dir.name
        assert resumed.host == "node1" and read_record(RunPaths(new_there)).get("parent") == run_id
        await pilot.press("k", "y")  # killed there
        await until(pilot, lambda: read_record(RunPaths(new_there)).get("status") == "killed", 120,
                    what="the resumed run killed on node1")

        await pilot.press("escape")  # closing the monitor ends its mirror there
        await until(pilot, lambda: not isinstance(app.screen, MonitorScreen), what="back home")
        await until(pilot, lambda: not tuitrain_processes(tmp_path, "workstations", "--mirror"), 60,
                    what="no mirror left on node1 once the monitor closed")

        app.screen.query_one("#runs").move_cursor(row=shown_ids(app).index(f"node1:{run_id}"))
        await pilot.press("enter")  # again: at once on the cache, its mirror started anew
        monitor = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#header")
                              and app.screen, 30, what="the remote run's monitor again, composed")
        header = monitor.query_one("#header")
        assert monitor.run_dir.name == run_id
        await until(pilot, lambda: tuitrain_processes(tmp_path, "workstations", "--mirror", run_id), 60,
                    what="its mirror on node1")
        await until(pilot, lambda: "stopped" in header.text, 30, what="the stopped run")
        assert "node1: " not in header.text, header.text
        kill_every_sshd(hosts, "node1")  # the box goes silent: said in the monitor, which goes on
        await until(pilot, lambda: "node1: " in header.text, 10, what="node1 unreachable in the monitor")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MonitorScreen), what="back home")

    try:
        run(script, app, size=(120, 30), notifications=True)
    finally:
        if hosts["node1"].sshd is None:
            hosts.start_sshd("node1")
        if status_there() not in ("stopped", "finished", "failed", "killed", "lost"):
            on_host(hosts, tmp_path, "node1", "stop", run_id, "--now")
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations", "--mirror"), 60, "no mirror left on node1")
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations", "--stream"), 60, "no stream left on node1")


def test_the_record_goes_first_and_home_writes_only_what_a_mirror_carries(tmp_path: Path) -> None:
    from test_tui_fixtures import FINISHED, make_runs
    from tuitrain.remote import wire
    from tuitrain.remote.run_mirror import RECORD, FolderFiles, apply

    make_runs(tmp_path / "runs")
    files = FolderFiles(tmp_path / "runs" / FINISHED, extra=lambda: {RECORD: b'{"id": "x"}'})
    (first,) = files.changes(limit=1)  # a long log waits behind the record the monitor opens on
    assert wire.decode(first)["path"] == RECORD
    cache = tmp_path / "cache"
    for path in ("../evil.json", "/tmp/evil.json", "control/stop", "output/model.safetensors", "logs/../run.json"):
        assert not apply(cache, wire.decode(wire.encode_bytes("file", path, b"{}"))), path
    assert not cache.exists() or not any(cache.rglob("*"))
    assert apply(cache, wire.decode(wire.encode_bytes("append", "logs/rank-0.log", b"a\n")))
    assert apply(cache, wire.decode(wire.encode_bytes("append", "logs/rank-0.log", b"b\n")))
    assert (cache / "logs" / "rank-0.log").read_bytes() == b"a\nb\n"
