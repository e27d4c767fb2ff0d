"""Several workstations from one terminal (issue 23), on the real namespace hosts over sshd (tests/hosts.py):
each host has its own runs folder; this test process is the user's terminal."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, as_in_a_terminal, check_clean, cli, patient, wait_for, wait_until_ended
from test_tui_fixtures import FINISHED, make_runs

pytestmark = pytest.mark.slow
LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]


def settings(folder: Path, hosts: Any, **python: str) -> Path:
    """A settings file naming node1 and node2, each with its own runs folder (a python per host may be given)."""
    lines = []
    for host in ("node1", "node2"):
        (folder / f"{host}-runs").mkdir(exist_ok=True)
        lines += ["[[workstations]]", f'host = "{host}"', f'python = "{python.get(host, sys.executable)}"',
                  f'runs = "{folder / f"{host}-runs"}"', f'ssh_config = "{hosts.ssh_config}"', ""]
    path = folder / "config.toml"
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def boxes(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    return tmp_path


def on_host(hosts: Any, folder: Path, host: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`tuitrain ARGS` started on a host over ssh, as its user would there (its runs folder)."""
    argv = ["ssh", "-F", str(hosts.ssh_config), host, sys.executable, "-m", "tuitrain", "--runs-dir",
            str(folder / f"{host}-runs"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def started(hosts: Any, folder: Path, host: str, *args: str) -> str:
    done = on_host(hosts, folder, host, "run", "demo", "--detach", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def tuitrain_processes(folder: Path, *words: str) -> list[str]:
    """tuitrain processes on any host (they share this machine's process table) naming `folder` and `words`."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        if proc.pid != os.getpid() and str(folder) in line and all(w in line for w in words):
            found.append(f"{proc.pid}: {line}")  # whole: a word may come late in a long path
    return found


def test_runs_of_two_hosts_in_one_list_and_a_dead_sshd_is_one_row(hosts: Any, boxes: Path) -> None:
    one, two = started(hosts, boxes, "node1", *FAST), started(hosts, boxes, "node2", *FAST)
    for host, run in (("node1", one), ("node2", two)):
        assert wait_until_ended(boxes / f"{host}-runs" / run)["status"] == "finished"
    local = boxes / "local-runs"
    local.mkdir()
    listed = cli("runs", "--all-hosts", "--json", runs_dir=local)
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert sorted((r["host"], r["id"], r["status"]) for r in found["runs"]) == \
        [("node1", one, "finished"), ("node2", two, "finished")] and found["unreachable"] == []
    table = cli("runs", "--all-hosts", runs_dir=local).stdout
    assert table.splitlines()[0].split()[:2] == ["HOST", "ID"] and f"node1  {one}" in table, table

    hosts.kill_sshd("node2")
    try:
        began = time.monotonic()
        listed = cli("runs", "--all-hosts", "--json", runs_dir=local)
        took = time.monotonic() - began
        found = json.loads(listed.stdout)
        assert [r["id"] for r in found["runs"]] == [one]
        (down,) = found["unreachable"]
        assert down["host"] == "node2" and "connection refused" in down["error"], down
        assert took < 30, took  # refused at once; a timeout would be LIST_SECONDS
        assert "node2" in cli("runs", "--all-hosts", runs_dir=local).stdout.split("unreachable")[0].splitlines()[-1]
    finally:
        hosts.start_sshd("node2")


def test_a_boxs_running_run_is_listed_running_whatever_runs_here() -> None:
    """`runs --all-hosts` lists another box's rows as that box judged them: its supervisor's pid means nothing on this
    machine (the namespace hosts share this machine's processes, so the end-to-end tests here cannot see it)."""
    from tuitrain.cli.viewing import runs_row

    there = {"id": "20260101-000000-demo", "profile": "demo", "status": "running", "created": time.time() - 60,
             "pids": {"supervisor": 4_194_303}, "processes": {"supervisor": {"pid": 4_194_303, "started": 1.0}},
             "progress": {"step": 3, "max_steps": 8, "loss": 0.5}}
    assert runs_row(there)[2] == "running"


def test_verbs_on_a_remote_run_logs_follow_status_and_stop(hosts: Any, boxes: Path) -> None:
    run = started(hosts, boxes, "node1", *LONG)
    run_dir = boxes / "node1-runs" / run
    local = boxes / "local-runs"
    local.mkdir()
    try:
        wait_for(lambda: (run_dir / "events.jsonl").exists() and "loss" in (run_dir / "events.jsonl").read_text(), 180,
                 "a logged step on node1")
        status = cli("status", f"node1:{run}", runs_dir=local)
        assert status.returncode == 0 and run in status.stdout and "running" in status.stdout, status.stdout + status.stderr
        assert json.loads(cli("status", run, "--host", "node1", "--json", runs_dir=local).stdout)["id"] == run

        follow = subprocess.Popen([sys.executable, "-m", "tuitrain", "--runs-dir", str(local), "logs", f"node1:{run}",
                                   "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=as_in_a_terminal)
        try:
            first = follow.stdout.readline() if follow.stdout else ""
            assert first, follow.stderr.read() if follow.stderr else ""
            seen = [follow.stdout.readline() for _ in range(3)] if follow.stdout else []
            assert all(seen), seen  # new lines keep coming while the run trains there
        finally:
            follow.send_signal(signal.SIGINT)
            follow.wait(timeout=60)
        wait_for(lambda: not tuitrain_processes(boxes, "logs", "--follow"), 60, "no `logs --follow` left on node1")

        stopped = cli("stop", f"node1:{run}", runs_dir=local, timeout=300)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        ended = wait_until_ended(run_dir, 180)
        assert ended["status"] == "stopped", ended
        assert list((run_dir / "output").glob("checkpoint-*")), "the stop saved a checkpoint there"
    finally:
        on_host(hosts, boxes, "node1", "stop", run, "--now")


def test_bad_workstations_are_one_line_each(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other_version = tmp_path / "python-other"
    other_version.write_text('#!/bin/sh\necho "tuitrain 9.9.9"\n')
    other_version.chmod(0o755)
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts, node1="/usr/bin/python3",
                                                       node2=str(other_version))))
    local = tmp_path / "local-runs"
    local.mkdir()
    checked = cli("workstations", runs_dir=local)
    assert checked.returncode == 1 and "Traceback" not in checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[0].startswith("node1: tuitrain is not installed for /usr/bin/python3 there"), lines
    assert lines[1] == "node2: tuitrain 9.9.9 there, " + lines[1].split(", ")[1] and "install the same" in lines[1]
    check_clean(cli("status", "nohost:20260101-x", "--host", "nohost", runs_dir=local), "'nohost' is not a workstation")
    (tmp_path / "bad.toml").write_text('[[workstations]]\nhost = "node1"\nport = 22\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(tmp_path / "bad.toml"))
    check_clean(cli("runs", "--all-hosts", runs_dir=local), "bad.toml: workstations[0].port: not a workstation key")


def next_news(news: "queue.Queue[Any]", wanted: Any, timeout: float, what: str) -> Any:
    """The first news from a RunsStream that `wanted` accepts, within `timeout` (times the suite's patience)."""
    deadline = time.monotonic() + patient(timeout)
    while time.monotonic() < deadline:
        try:
            item = news.get(timeout=0.2)
        except queue.Empty:
            continue
        if wanted(item):
            return item
    raise AssertionError(f"timed out waiting for {what}")


def kill_every_sshd(hosts: Any, host: str) -> None:
    """A host's sshd dies: the listener and every session it forked (the one carrying a watch too)."""
    import psutil

    hosts.kill_sshd(host)
    for pid in hosts.pids(host):
        try:
            if psutil.Process(pid).name() == "sshd":
                os.kill(pid, signal.SIGKILL)
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass


def watching(host: str, news: "queue.Queue[Any]") -> Any:
    from tuitrain import __version__
    from tuitrain.remote.runs_stream import RunsStream
    from tuitrain.remote.workstations import find, workstations

    stream = RunsStream(find(host, workstations()), __version__, news.put)
    stream.start()
    return stream


def test_a_watched_box_streams_its_runs_and_a_dead_sshd_is_unreachable_within_10_s(hosts: Any, boxes: Path) -> None:
    runs = boxes / "node2-runs"
    make_runs(runs)
    news: queue.Queue[Any] = queue.Queue()
    stream = watching("node2", news)
    try:
        first = next_news(news, lambda n: n.rows is not None, 60, "node2's runs")
        assert sorted(r["id"] for r in first.rows) == sorted(p.name for p in runs.iterdir()) and first.host == "node2"
        assert tuitrain_processes(boxes, "workstations", "--stream"), "one tuitrain streams there"
        shutil.copytree(runs / FINISHED, runs / "20260101-003000-new")
        grown = next_news(news, lambda n: n.rows and any(r["id"] == "20260101-003000-new" for r in n.rows), 30,
                          "the new run in node2's rows")
        assert len(grown.rows) == 4 and grown.problem is None

        began = time.monotonic()
        kill_every_sshd(hosts, "node2")
        down = next_news(news, lambda n: n.problem is not None, 10, "node2 unreachable")
        took = time.monotonic() - began
        assert took < 10, took
        assert down.host == "node2" and down.problem.startswith("node2: ") and "\n" not in down.problem, down
        wait_for(lambda: not tuitrain_processes(boxes, "workstations", "--stream"), 60,
                 "the stream on node2 ended with its session")
        again = next_news(news, lambda n: n.problem is not None, 30, "node2 still unreachable on the next try")
        assert "connection refused" in again.problem, again
        hosts.start_sshd("node2")
        next_news(news, lambda n: n.rows is not None and len(n.rows) == 4, 120, "node2's runs once its sshd is back")
    finally:
        if hosts["node2"].sshd is None:
            hosts.start_sshd("node2")
        stream.stop(wait=patient(10))
    assert not stream.running
    wait_for(lambda: not tuitrain_processes(boxes, "workstations", "--stream"), 60, "no tuitrain left on node2")


def test_a_box_cut_off_the_network_is_unreachable_within_10_s(hosts: Any, boxes: Path) -> None:
    news: queue.Queue[Any] = queue.Queue()
    stream = watching("node1", news)
    try:
        assert next_news(news, lambda n: n.rows is not None, 60, "node1's runs").rows == []
        began = time.monotonic()
        hosts.link_down("node1")
        down = next_news(news, lambda n: n.problem is not None, 10, "node1 unreachable")
        assert time.monotonic() - began < 10
        assert down.problem.startswith("node1: no word for"), down
    finally:
        hosts.link_up("node1")
        stream.stop(wait=patient(10))
    # the box's own stream ends when home's beats stop reaching it (HOME_SILENCE_SECONDS), or at once on the link
    wait_for(lambda: not tuitrain_processes(boxes, "workstations", "--stream"), 120, "no tuitrain left on node1")


def test_a_box_that_cannot_stream_its_runs_is_one_line_naming_why(hosts: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    newer = tmp_path / "python-newer"  # a tuitrain that streams, but is another version
    newer.write_text("#!/bin/sh\necho '{\"t\":\"hello\",\"version\":\"9.9.9\"}'\nexec head -n1 >/dev/null\n")
    older = tmp_path / "python-older"  # a tuitrain from before the stream
    older.write_text("#!/bin/sh\necho 'tuitrain: error: unrecognized arguments: --stream' >&2\nexit 2\n")
    for script in (newer, older):
        script.chmod(0o755)
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts, node1=str(newer), node2=str(older))))
    for host, start in (("node1", "node1: tuitrain 9.9.9 there, "), ("node2", "node2: tuitrain without `workstations")):
        news: queue.Queue[Any] = queue.Queue()
        stream = watching(host, news)
        try:
            said = next_news(news, lambda n: n.problem is not None, 60, f"why {host} cannot be watched")
            assert said.problem.startswith(start) and "install the same version" in said.problem, said
        finally:
            stream.stop(wait=patient(10))
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts, node1="/usr/bin/python3")))
    news = queue.Queue()
    stream = watching("node1", news)
    try:
        said = next_news(news, lambda n: n.problem is not None, 60, "why node1 cannot be watched")
        assert said.problem.startswith("node1: tuitrain is not installed for /usr/bin/python3 there"), said
    finally:
        stream.stop(wait=patient(10))
