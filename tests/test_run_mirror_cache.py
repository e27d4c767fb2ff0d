"""The cache of other workstations' runs (remote.run_mirror, issue 23) is cleaned: an ended run's mirror goes when
its monitor closes, and mirrors not written for PRUNE_SECONDS go at the app's start; nothing outside the cache is
ever removed, least of all the run's own folder on its box."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from test_tui_app import make_app, run, until
from test_tui_fixtures import FINISHED, RUNNING, make_runs
from tuitrain.remote.run_mirror import PRUNE_SECONDS, cache_dir, cache_root, prune_cache, remove_cache

DAY = 24 * 3600.0


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return cache_root()


def mirror(host: str, run_id: str, age: float) -> Path:
    """A mirrored run in the cache whose files were last written `age` seconds ago."""
    folder = cache_dir(host, run_id)
    (folder / "logs").mkdir(parents=True)
    for path in (folder / "run.json", folder / "logs" / "rank-0.log", folder / "logs", folder):
        if not path.exists():
            path.write_text("{}")
        os.utime(path, (time.time() - age, time.time() - age))
    return folder


def test_prune_removes_only_mirrors_not_written_for_the_bound(cache: Path) -> None:
    old, fresh, kept = mirror("node1", "old", PRUNE_SECONDS + DAY), mirror("node1", "fresh", DAY), \
        mirror("node2", "kept", PRUNE_SECONDS + DAY)
    alone = mirror("node3", "alone", PRUNE_SECONDS + DAY)
    touched = mirror("node2", "touched", PRUNE_SECONDS + DAY)
    (touched / "logs" / "rank-0.log").write_text("a new line\n")  # written lately: a mirror in use
    assert sorted(prune_cache(keep=kept)) == sorted([old, alone])
    assert not old.exists() and not alone.exists() and not (cache / "node3").exists()  # its host's folder, empty
    assert fresh.is_dir() and kept.is_dir() and touched.is_dir()


def test_remove_cache_touches_nothing_outside_the_cache(cache: Path, tmp_path: Path) -> None:
    runs = tmp_path / "node1-runs"
    make_runs(runs)
    assert not remove_cache(runs / FINISHED)  # a run folder (of this machine, or the box's own)
    assert (runs / FINISHED / "run.json").is_file()
    outside = tmp_path / "elsewhere" / "node1" / FINISHED
    outside.mkdir(parents=True)
    assert not remove_cache(outside) and outside.is_dir()
    linked = cache_dir("node1", "linked")
    linked.parent.mkdir(parents=True)
    linked.symlink_to(runs / FINISHED)  # a link in the cache to a real run: never followed
    assert not remove_cache(linked) and (runs / FINISHED / "run.json").is_file()
    made = mirror("node1", FINISHED, 0)
    assert remove_cache(made) and not made.exists()


def test_the_app_prunes_old_mirrors_at_its_start(cache: Path, tmp_path: Path) -> None:
    make_runs(tmp_path / "runs")
    old, fresh = mirror("node1", "old", PRUNE_SECONDS + DAY), mirror("node1", "fresh", 0)
    app = make_app(tmp_path)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: not old.exists(), 30, what="the old mirror removed")
        assert fresh.is_dir()

    run(script, app)


@pytest.mark.slow
def test_closing_a_monitor_removes_an_ended_runs_mirror_and_keeps_a_live_ones(
        hosts: Any, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_tui_home_table import shown_ids
    from test_workstations import settings, tuitrain_processes
    from tuitrain.tui.screens.monitor import MonitorScreen

    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    there = tmp_path / "node1-runs"
    make_runs(there)  # its running run's supervisor is this test (the hosts share this machine's processes)
    before = {p: p.read_bytes() for p in there.rglob("*") if p.is_file()}
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def opened_and_closed(pilot: Any, run_id: str) -> Path:
        await until(pilot, lambda: f"node1:{run_id}" in shown_ids(app), 60, what=f"node1's run {run_id} in Home")
        app.screen.query_one("#runs").move_cursor(row=shown_ids(app).index(f"node1:{run_id}"))
        await pilot.press("enter")
        monitor = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#header")
                              and app.screen, 60, what=f"the monitor of {run_id}, composed")
        await until(pilot, lambda: (monitor.run_dir / "logs" / "rank-0.log").is_file(), 60, what="its log mirrored")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MonitorScreen), what="back home")
        await until(pilot, lambda: not tuitrain_processes(tmp_path, "workstations", "--mirror"), 60,
                    what="its mirror ended there")
        return monitor.run_dir

    async def script(pilot: Any) -> None:
        ended = await opened_and_closed(pilot, FINISHED)
        assert ended == cache / "node1" / FINISHED
        await until(pilot, lambda: not ended.exists(), 60, what="the finished run's mirror removed")
        live = await opened_and_closed(pilot, RUNNING)
        assert (live / "run.json").is_file(), "a live run's mirror stays (opened again, it goes on from there)"

    run(script, app, size=(120, 30))
    assert {p: p.read_bytes() for p in there.rglob("*") if p.is_file()} == before, "the box's runs untouched"
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations"), 60, "no tuitrain left on node1")
