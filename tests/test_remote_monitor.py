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
