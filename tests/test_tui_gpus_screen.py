"""The GPUs screen (issue 13): every process on every GPU of the machine, as nvitop shows them, with
the run and rank owning each; sorted by a key; one's own process killed from it (asked first), a
stranger's or a run's rank refused. The GPUs are a recorded NVML table (the one stand-in allowed)
listing real processes this test starts, so user, command and the kill are real."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from test_tui_app import make_app, run, until
from tuitrain.hardware.host import current_user
from tuitrain.humanize import gpu_memory
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
RUN_ID = "20240101-120000-demo"
GiB = 2**30


@pytest.fixture
def sleepers():
    """Three real processes: mine, a run's rank 0 (mine too, but the run's), and another user's."""
    started = []

    def start(**kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(["sleep", "120"], **kwargs)
        started.append(proc)
        return proc

    mine, rank = start(), start()
    if os.getuid() == 0:  # root here: a process of 'nobody' is a stranger's
        stranger = start(user=65534).pid
    else:
        stranger = 1  # init, root's
    yield mine, rank, stranger
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def machine(tmp_path: Path, mine: int, rank: int, stranger: int, monkeypatch) -> dict:
    """A four-GPU box whose GPU 2 runs my process (2 GiB) and the run's rank 0 (10 GiB), and GPU 3 a
    stranger's (1 GiB); the run's record names its rank's pid. The app reads both, as it would live."""
    table = json.loads((FIXTURES / "four_gpu_mixed.json").read_text())
    table["devices"][2]["compute_processes"] = [{"pid": mine, "used_memory": 2 * GiB},
                                                {"pid": rank, "used_memory": 10 * GiB}]
    table["devices"][3]["compute_processes"] = [{"pid": stranger, "used_memory": GiB}]
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(path))
    paths = RunPaths(tmp_path / "runs" / RUN_ID)
    paths.root.mkdir(parents=True)
    write_record(paths, new_record(RUN_ID, "demo", status="running", pids={"ranks": {"0": rank}}))
    return table


def cells(table, key: str) -> list[str]:
    return [str(getattr(c, "plain", c)) for c in table.get_row(key)]


def keys(table) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


def messages(app) -> list[str]:
    return [n.message for n in app._notifications]


async def open_gpus(pilot, pid: int):
    from textual.widgets import DataTable

    app = pilot.app
    await pilot.press("g")
    await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
    table = app.screen.query_one("#gpu-table", DataTable)
    await until(pilot, lambda: f"2:{pid}" in keys(table), what="the processes")
    await until(pilot, lambda: cells(table, f"2:{pid}")[3] == "sleep 120", what="its command line read")
    return app.screen, table


async def select(pilot, table, key: str) -> None:
    table.move_cursor(row=table.get_row_index(key), animate=False)
    await pilot.pause(0.05)


def test_every_gpu_and_process_with_user_command_memory_and_owner(tmp_path, sleepers, monkeypatch):
    mine, rank, stranger = sleepers
    table_data = machine(tmp_path, mine.pid, rank.pid, stranger, monkeypatch)
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)
    me = current_user()

    async def script(pilot):
        screen, table = await open_gpus(pilot, mine.pid)
        assert [k for k in keys(table) if k.startswith("gpu:")] == ["gpu:0", "gpu:1", "gpu:2", "gpu:3"]
        for index, device in enumerate(table_data["devices"]):
            row = [cell.split("\n") for cell in cells(table, f"gpu:{index}")]
            assert row[0] == [f"GPU {index}", f"{device['temperature']}°C"] and row[3][0] == device["name"].removeprefix("NVIDIA ")
            util, memory = device["utilization"]["gpu"], device["memory"]["used"] / device["memory"]["total"]
            assert row[3][1].startswith("util ") and row[3][1].endswith(f" {util:>3}%")  # a bar, then its figure
            assert row[4][0] == gpu_memory(device["memory"]["used"], device["memory"]["total"])
            assert row[4][1].endswith(f" {memory * 100:>3.0f}%")
            assert row[5][0] == f"{device['power_usage'] // 1000}/{device['power_limit'] // 1000} W"
        # the command with its arguments, once a worker has read it; the run's short label beside the rank
        await until(pilot, lambda: cells(table, f"2:{mine.pid}")[3] == "sleep 120", what="the command line")
        assert cells(table, f"2:{mine.pid}")[1:] == [str(mine.pid), me, "sleep 120", "2.0 GiB", "-"]
        rank_row = cells(table, f"2:{rank.pid}")
        assert rank_row[1:5] == [str(rank.pid), me, "sleep 120", "10.0 GiB"]
        assert rank_row[5].startswith("rank 0 · ") and rank_row[5].endswith("12:00 demo")
        assert cells(table, f"3:{stranger}")[2] not in (me, "N/A")
        assert cells(table, "1:4100001")[1:3] == ["4100001", "N/A"]  # another container's: no user to see
        # each GPU's processes sit under it
        order = keys(table)
        assert order.index("gpu:2") < order.index(f"2:{mine.pid}") < order.index("gpu:3") < order.index(f"3:{stranger}")
        # the figures follow the sampler: a new sample redraws without losing the selection
        await select(pilot, table, f"2:{mine.pid}")
        samples = len(app.hardware_view.host_history)
        await until(pilot, lambda: len(app.hardware_view.host_history) >= samples + 2, what="two more samples")
        assert screen.selected().process.pid == mine.pid

    run(script, app, size=(140, 40))


def test_o_cycles_the_sort_by_memory_pid_and_user(tmp_path, sleepers, monkeypatch):
    mine, rank, stranger = sleepers
    machine(tmp_path, mine.pid, rank.pid, stranger, monkeypatch)
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    def gpu2(table) -> list[int]:
        return [int(k.split(":")[1]) for k in keys(table) if k.startswith("2:")]

    async def script(pilot):
        screen, table = await open_gpus(pilot, mine.pid)
        status = screen.query_one("#gpus-status")
        assert gpu2(table) == [rank.pid, mine.pid] and "sorted by GPU memory" in status.text  # 10 GiB, then 2 GiB
        await pilot.press("o")
        assert gpu2(table) == sorted([rank.pid, mine.pid]) and "sorted by pid" in status.text
        await pilot.press("o")
        assert "sorted by user" in status.text and gpu2(table) == sorted([rank.pid, mine.pid])  # one user: by pid
        await pilot.press("o")
        assert gpu2(table) == [rank.pid, mine.pid] and "sorted by GPU memory" in status.text

    run(script, app, size=(140, 40))


def test_killing_my_process_asks_then_ends_it_and_others_are_refused(tmp_path, sleepers, monkeypatch):
    mine, rank, stranger = sleepers
    machine(tmp_path, mine.pid, rank.pid, stranger, monkeypatch)
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        screen, table = await open_gpus(pilot, mine.pid)
        await select(pilot, table, f"3:{stranger}")
        await pilot.press("k")
        await until(pilot, lambda: any("only your own processes" in m for m in messages(app)), what="a refusal")
        assert app.screen is screen  # nothing asked

        await select(pilot, table, f"2:{rank.pid}")
        await pilot.press("k")
        await until(pilot, lambda: any(f"rank 0 of run {RUN_ID}" in m and "stop the run with s" in m
                                       for m in messages(app)), what="the run's stop pointed to")
        assert app.screen is screen and rank.poll() is None

        await select(pilot, table, "gpu:2")
        await pilot.press("k")
        await until(pilot, lambda: any("select a process" in m for m in messages(app)), what="a GPU is no process")

        await select(pilot, table, f"2:{mine.pid}")
        await pilot.press("k")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the question")
        assert f"Kill pid {mine.pid} (sleep 120, " in str(app.screen.query_one("#question").content)
        await pilot.press("n")
        await pilot.pause(0.2)
        assert mine.poll() is None  # "no" kills nothing

        await pilot.press("k")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the question again")
        await pilot.press("y")
        await until(pilot, lambda: mine.poll() is not None, what="my process to end")
        assert mine.returncode == -signal.SIGTERM
        await until(pilot, lambda: any(f"pid {mine.pid} ended on SIGTERM" in m for m in messages(app)),
                    what="the outcome said")
        assert rank.poll() is None and (stranger == 1 or os.path.exists(f"/proc/{stranger}"))

        # enter on the run's rank opens its run, where s stops every rank
        await select(pilot, table, f"2:{rank.pid}")
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the run's monitor")

    run(script, app, size=(140, 40), notifications=True)


def test_g_is_in_the_help_and_the_palette(tmp_path):
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def script(pilot):
        assert "GPUs" in [c.title for c in app.get_system_commands(app.screen)]
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="the help")
        console = Console(width=100, record=True, file=io.StringIO())
        for static in app.screen.query("Static"):
            console.print(static.content)
        text = console.export_text()
        assert "every process on every GPU" in text
        await pilot.press("escape", "g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        await until(pilot, lambda: "sampling the machine" in app.screen.query_one("#gpus-status").text,
                    what="a word while no sample has come")  # this app has a fixed hardware line: no sampler

    run(script, app)
