"""Each workstation's GPUs (issue 23): its stream carries them (only when they change, at most every GPU_SECONDS),
`tuitrain gpus --all-hosts` prints every box's, and the app's GPUs screen lists them under each box's heading,
read-only. On the namespace hosts (tests/hosts.py); each box answers NVML from a recorded table, which reaches its
tuitrain through the workstation's python (a wrapper that sets TUITRAIN_NVML_TABLE there)."""

from __future__ import annotations

import argparse
import io
import json
import os
import queue
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import gpu_report, wait_for
from test_tui_app import make_app, run, until
from test_workstations import next_news, settings, tuitrain_processes
from tuitrain.remote import wire
from tuitrain.remote.runs_stream import serve
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
RUN_ID = "20240101-120000-demo"
GiB = 2**30


def test_the_stream_sends_the_gpus_only_when_they_change() -> None:
    samples = [{"gpus": [1]}, {"gpus": [1]}, {"gpus": [2]}, {"gpus": [2]}]
    read_end, write_end = os.pipe()
    home = os.fdopen(write_end, "wb")
    out = io.BytesIO()

    def gpus() -> dict[str, Any]:
        if len(samples) == 1:
            home.close()  # home goes: the stream ends
        return samples.pop(0) if len(samples) > 1 else samples[0]

    with os.fdopen(read_end, "rb") as inp:
        assert serve(lambda: [], "1", out, inp, poll_seconds=0.01, home_silence=None, gpus=gpus, gpu_seconds=0) == 0
    said = [wire.decode(line) for line in out.getvalue().splitlines()]
    assert [m["t"] for m in said if m["t"] != "beat"] == ["hello", "runs", "gpus", "gpus"]
    assert [m["sample"] for m in said if m["t"] == "gpus"] == [{"gpus": [1]}, {"gpus": [2]}]


def test_the_stream_samples_the_gpus_at_most_every_gpu_seconds() -> None:
    read_end, write_end = os.pipe()
    home = os.fdopen(write_end, "wb")
    asked: list[int] = []
    polls: list[int] = []

    def poll() -> list[dict[str, Any]]:
        polls.append(1)
        if len(polls) == 5:
            home.close()
        return []

    with os.fdopen(read_end, "rb") as inp:
        serve(poll, "1", io.BytesIO(), inp, poll_seconds=0.01, home_silence=None,
              gpus=lambda: asked.append(1) or {}, gpu_seconds=3600)
    assert len(polls) >= 5 and asked == [1]


# -- on the namespace hosts ----------------------------------------------------------------------------------


@pytest.fixture
def sleeper() -> Any:
    """A real process: the rank 0 of a run on node1 (the hosts share this machine's process table)."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def nvml_python(folder: Path, table: str, pid: int | None = None) -> Path:
    """A python for a workstation that answers NVML from a recorded table (GPU 2 running `pid`, 6 GiB)."""
    data = json.loads((FIXTURES / f"{table}.json").read_text())
    if pid is not None:
        data["devices"][2]["compute_processes"] = [{"pid": pid, "used_memory": 6 * GiB}]
    path = folder / f"{table}-table.json"
    path.write_text(json.dumps(data))
    wrapper = folder / f"python-{table}"
    wrapper.write_text(f'#!/bin/sh\nTUITRAIN_NVML_TABLE={path} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def node1_with_a_run(folder: Path, hosts: Any, pid: int) -> Path:
    """Settings where node1 has eight H100s, its GPU 2 used by rank 0 of a run there; node2 lacks tuitrain."""
    config = settings(folder, hosts, node1=str(nvml_python(folder, "eight_h100", pid)), node2="/usr/bin/python3")
    paths = RunPaths(folder / "node1-runs" / RUN_ID)
    paths.root.mkdir(parents=True)
    write_record(paths, new_record(RUN_ID, "demo", status="running", pids={"ranks": {"0": pid}}))
    return config


pytest_slow = pytest.mark.slow


@pytest_slow
def test_a_watched_box_streams_its_gpus_with_each_process_owner(hosts: Any, tmp_path: Path, sleeper: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from tuitrain import __version__
    from tuitrain.remote.runs_stream import RunsStream
    from tuitrain.remote.workstations import find, workstations

    monkeypatch.setenv("TUITRAIN_CONFIG", str(node1_with_a_run(tmp_path, hosts, sleeper.pid)))
    news: queue.Queue[Any] = queue.Queue()
    runs: queue.Queue[Any] = queue.Queue()
    stream = RunsStream(find("node1", workstations()), __version__, runs.put, on_gpus=news.put)
    stream.start()
    try:
        heard = next_news(news, lambda n: n.gpus is not None, 60, "node1's GPUs")
        assert heard.host == "node1" and heard.rows is None and set(heard.gpus) == {"nvml", "gpus", "mps"}
        gpus = gpu_report(heard.gpus).gpus
        assert len(gpus) == 8 and str(gpus[0].name).startswith("NVIDIA H100")
        (proc,) = gpus[2].processes
        assert (proc.pid, proc.used_memory) == (sleeper.pid, 6 * GiB)
        assert proc.owner is not None and proc.owner.describe() == f"rank 0 of run {RUN_ID}"
        assert next_news(runs, lambda n: n.rows is not None, 30, "node1's runs").rows[0]["id"] == RUN_ID
        assert tuitrain_processes(tmp_path, "workstations", "--stream", "--gpus")
    finally:
        stream.stop(wait=30)
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations", "--stream"), 60, "no tuitrain left on node1")


def all_hosts(local: Path, as_json: bool, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from tuitrain.cli.gpus import cmd_gpus

    capsys.readouterr()
    code = cmd_gpus(argparse.Namespace(json=as_json, all_hosts=True, watch=False, profile=None, runs_root=local))
    return code, capsys.readouterr().out


@pytest_slow
def test_gpus_all_hosts_prints_every_box_and_one_line_for_one_that_cannot_answer(
        hosts: Any, tmp_path: Path, sleeper: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TUITRAIN_CONFIG", str(node1_with_a_run(tmp_path, hosts, sleeper.pid)))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / "four_gpu_mixed.json"))
    local = tmp_path / "local-runs"
    local.mkdir()
    code, out = all_hosts(local, True, capsys)
    found = json.loads(out)
    assert code == 1 and list(found) == ["local", "node1", "node2"]
    assert len(found["local"]["gpus"]) == 4 and len(found["node1"]["gpus"]) == 8
    owner = found["node1"]["gpus"][2]["processes"][0]["owner"]
    assert owner["run_id"] == RUN_ID and owner["rank"] == 0
    assert found["node2"] == {"error": "node2: tuitrain is not installed for /usr/bin/python3 there; install it "
                                       "there, or set python"}
    code, out = all_hosts(local, False, capsys)
    blocks = out.split("== ")
    assert code == 1 and [b.splitlines()[0] for b in blocks[1:]] == ["local", "node1", "node2"], out
    assert f"rank 0 of run {RUN_ID}" in blocks[2] and "H100" in blocks[2]
    why = "node2: tuitrain is not installed for /usr/bin/python3 there; install it there, or set python"
    assert blocks[3].strip().splitlines()[1:] == [why]
    assert "Traceback" not in out


def cells(table: Any, key: str) -> list[str]:
    return [str(getattr(c, "plain", c)) for c in table.get_row(key)]


def keys(table: Any) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


@pytest_slow
def test_the_gpus_screen_lists_each_box_gpus_under_its_heading_read_only(
        hosts: Any, tmp_path: Path, sleeper: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import DataTable

    monkeypatch.setenv("TUITRAIN_CONFIG", str(node1_with_a_run(tmp_path, hosts, sleeper.pid)))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / "four_gpu_mixed.json"))
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)
    mine = f"node1/2:{sleeper.pid}"

    async def script(pilot: Any) -> None:
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        table = app.screen.query_one("#gpu-table", DataTable)
        await until(pilot, lambda: mine in keys(table), 60, what="node1's GPUs and its run's rank")
        await until(pilot, lambda: "unreachable" in cells(table, "host:node2")[3], 60, what="why node2 is not seen")
        order = keys(table)
        headings = [k for k in order if k.startswith("host:")]
        assert headings == ["host:local", "host:node1", "host:node2"]
        assert order.index("host:local") < order.index("gpu:0") < order.index("host:node1") < order.index("node1/gpu:0")
        assert [k for k in order if k.startswith("node1/gpu:")] == [f"node1/gpu:{i}" for i in range(8)]
        assert cells(table, "host:node1")[0] == "node1" and cells(table, "host:node1")[3].startswith("8 GPU(s), ")
        assert cells(table, "host:node2")[3].startswith("unreachable: tuitrain is not installed for /usr/bin/python3")
        row = cells(table, mine)
        assert row[1] == str(sleeper.pid) and row[4] == "6.0 GiB" and row[5].startswith("rank 0 · ")
        table.move_cursor(row=table.get_row_index(mine), animate=False)
        await pilot.pause(0.05)
        assert str(app.screen.query_one("#gpus-detail").render()).startswith(f"node1: pid {sleeper.pid} ")
        await pilot.press("k")  # another box's process: said where it runs, nothing asked or killed here
        await until(pilot, lambda: any(f"pid {sleeper.pid} runs on node1" in n.message for n in app._notifications),
                    what="that it runs on node1")
        assert type(app.screen).__name__ == "GpusScreen" and sleeper.poll() is None

    run(script, app, size=(140, 60), notifications=True)
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations", "--stream"), 60, "no tuitrain left on node1")


@pytest_slow
def test_queue_all_hosts_shows_each_box_queue_and_one_line_for_one_that_cannot_answer(
        hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """node1 queues a run for its GPU 2, which a stranger holds: `queue --all-hosts` shows it under node1."""
    from queue_tables import gpu_two
    from tuitrain.cli.workstations import cmd_queue

    table = tmp_path / "node1-nvml.json"
    gpu_two(table, taken=True)
    node1_queue = tmp_path / "node1-queue"
    python = tmp_path / "python-node1"
    python.write_text(f'#!/bin/sh\nTUITRAIN_NVML_TABLE={table} TUITRAIN_QUEUE_DIR={node1_queue} '
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    config = settings(tmp_path, hosts, node1=str(python), node2="/usr/bin/python3")
    monkeypatch.setenv("TUITRAIN_CONFIG", str(config))
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "local-queue"))
    runs = tmp_path / "node1-runs"
    there = ["ssh", "-F", str(hosts.ssh_config), "node1", str(python), "-m", "tuitrain", "--runs-dir", str(runs)]
    done = subprocess.run([*there, "run", "demo", "--queue", "--set", "hardware.accelerator=cuda",
                           "--set", "hardware.gpus=[2]"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = done.stdout.strip()
    args = argparse.Namespace(json=True, all_hosts=True, action=None, run=None, top=False, runs_root=tmp_path / "local")
    try:
        capsys.readouterr()
        code = cmd_queue(args)
        found = json.loads(capsys.readouterr().out)
        assert code == 1 and list(found) == ["local", "node1", "node2"]
        assert found["local"] == {"queue_dir": str(tmp_path / "local-queue"), "runs": [], "damaged": []}
        assert found["node1"]["queue_dir"] == str(node1_queue)
        (waiting,) = found["node1"]["runs"]
        assert waiting["run"] == run_id and waiting["position"] == 1 and waiting["waits"][0].startswith("GPU 2: 95%")
        assert found["node2"]["error"].startswith("node2: tuitrain is not installed for /usr/bin/python3 there")
        code = cmd_queue(argparse.Namespace(**{**vars(args), "json": False}))
        out = capsys.readouterr().out
        local, node1, node2 = out.split("== ")[1:]
        assert local.startswith("local\nno queued runs on this machine")
        assert node1.startswith("node1\n  1  " + run_id), node1
        assert node2.splitlines()[1].startswith("node2: tuitrain is not installed") and code == 1
    finally:
        subprocess.run([*there, "cancel", run_id], capture_output=True, text=True, timeout=120)
    wait_for(lambda: json.loads((runs / run_id / "run.json").read_text())["status"] == "cancelled", 60,
             "the queued run cancelled there")
    wait_for(lambda: not tuitrain_processes(tmp_path, "supervise"), 60, "its waiting supervisor gone")


@pytest_slow
def test_a_box_whose_stream_cannot_carry_gpus_is_one_line_naming_why(hosts: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tuitrain import __version__
    from tuitrain.remote.runs_stream import RunsStream
    from tuitrain.remote.workstations import find, workstations

    older = tmp_path / "python-older"  # a tuitrain that streams runs, from before their GPUs
    older.write_text("#!/bin/sh\necho 'tuitrain: error: unrecognized arguments: --gpus' >&2\nexit 2\n")
    older.chmod(0o755)
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts, node1=str(older))))
    news: queue.Queue[Any] = queue.Queue()
    stream = RunsStream(find("node1", workstations()), __version__, news.put, on_gpus=news.put)
    stream.start()
    try:
        said = next_news(news, lambda n: n.problem is not None, 60, "why node1 cannot be watched")
        assert said.problem.startswith("node1: tuitrain without `workstations --stream --gpus` there, "), said
        assert "install the same version" in said.problem
    finally:
        stream.stop(wait=30)
