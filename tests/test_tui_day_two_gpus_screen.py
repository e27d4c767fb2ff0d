"""The GPUs screen on day two (issue 21, item 7), as a user sees it at 80×24 and 120×40: every column that matters
stays readable at 80 columns (the run and rank, the memory; the command cut at its end with an ellipsis, whole on
the line under the table); each GPU has text bars of its utilisation and memory that read without colour; a
MIG-enabled GPU lists its instances under it. The GPUs are recorded NVML tables (the one stand-in allowed) listing
a real process this test starts, so its command line is real."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_tui_app import make_app, run, until
from test_tui_fixtures import FIXED_CLOCK
from tuitrain.hardware.processes import short_command
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
GiB = 2**30
# a run started half an hour before the app's clock: its label is its time and name
RUN_ID = time.strftime("%Y%m%d-%H%M%S", time.localtime(FIXED_CLOCK - 1800)) + "-demo"
LABEL = time.strftime("%H:%M", time.localtime(FIXED_CLOCK - 1800)) + " demo"
ARGS = ["--epochs", "3", "--profile", "profiles/a-long-profile-name-for-the-demo.toml"]
SIZES = [(80, 24), (120, 40)]


@pytest.fixture
def trainer():
    """A real process with a long command line: the interpreter, a script, and arguments."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *ARGS])
    yield proc
    proc.kill()
    proc.wait()


def command_of(proc: subprocess.Popen) -> str:
    import shlex

    return shlex.join([sys.executable, "-c", "import time; time.sleep(120)", *ARGS])


def machine(tmp_path: Path, monkeypatch, table: str, gpu: int, pid: int) -> None:
    """`table`'s GPUs, with `pid` as rank 0 of a run using 10 GiB on GPU `gpu`."""
    data = json.loads((FIXTURES / f"{table}.json").read_text())
    data["devices"][gpu]["compute_processes"] = [{"pid": pid, "used_memory": 10 * GiB}]
    path = tmp_path / "table.json"
    path.write_text(json.dumps(data))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(path))
    paths = RunPaths(tmp_path / "runs" / RUN_ID)
    paths.root.mkdir(parents=True)
    write_record(paths, new_record(RUN_ID, "demo", status="running", pids={"ranks": {"0": pid}}))


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def keys(table) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


async def open_gpus(pilot, key: str):
    from textual.widgets import DataTable

    app = pilot.app
    await pilot.press("g")
    await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
    table = app.screen.query_one("#gpu-table", DataTable)
    await until(pilot, lambda: key in keys(table), timeout=20, what="the processes")
    return app.screen, table


def line_with(lines: list[str], text: str) -> str:
    found = [line for line in lines if text in line]
    assert found, f"{text!r} is not on the screen:\n" + "\n".join(lines)
    return found[0]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_run_rank_memory_and_the_command_with_its_arguments_show(tmp_path, monkeypatch, trainer, size):
    machine(tmp_path, monkeypatch, "four_gpu_mixed", 2, trainer.pid)
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.2)
    command = command_of(trainer)

    async def script(pilot):
        screen, table = await open_gpus(pilot, f"2:{trainer.pid}")
        await until(pilot, lambda: str(table.get_row(f"2:{trainer.pid}")[3]).startswith("python -c"), timeout=20,
                    what="the command line read")
        await pilot.pause(0.2)
        lines = screen_lines(app)
        assert all(len(line) <= size[0] for line in lines)
        row = line_with(lines, str(trainer.pid))
        # the memory and the run and rank stay whole, the command shows its start and ends in an ellipsis
        assert "10.0 GiB" in row and f"rank 0 · {LABEL}" in row
        shown = row.split(str(trainer.pid), 1)[1].split("10.0 GiB")[0].strip()
        user_and_command = shown
        user, cell = user_and_command.split(None, 1)
        # the program without its folder, then its arguments, cut at the end
        assert user and cell.endswith("…") and cell.startswith("python") and len(cell) >= 16
        assert short_command(command).startswith(cell[:-1])
        if size[0] >= 120:
            assert "-c 'import time; time.sleep(120)' --epochs 3" in cell
        # every GPU's memory figure shows, and the other GPUs' strangers' processes too
        for figure in ("0.4/11.0 GiB", "46.2/48.0 GiB", "30.0 GiB", "16.0 GiB", "0.2 GiB"):
            line_with(lines, figure)
        # the highlighted process's full command on the line under the table
        table.move_cursor(row=table.get_row_index(f"2:{trainer.pid}"), animate=False)
        await until(pilot, lambda: command in str(screen.query_one("#gpus-detail").content), what="the detail line")
        detail = " ".join(line.strip() for line in screen_lines(app)[-5:-2])
        assert ARGS[-1] in detail and f"rank 0 of run {RUN_ID}" in detail

    run(script, app, size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_each_gpu_has_bars_of_its_utilisation_and_memory_that_read_without_colour(tmp_path, monkeypatch, trainer,
                                                                                  size):
    machine(tmp_path, monkeypatch, "four_gpu_mixed", 2, trainer.pid)
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.2)

    async def script(pilot):
        await open_gpus(pilot, f"2:{trainer.pid}")
        await until(pilot, lambda: len(app.hardware_view.gpu_history.get(1, ())) >= 2, timeout=20, what="history")
        await pilot.pause(0.3)
        lines = screen_lines(app)
        busy = lines[lines.index(line_with(lines, " GPU 1 ")) + 1]  # GPU 1: 97% busy, 46.2 of 48 GiB
        assert "81°C" in busy and "util █" in busy and " 97%" in busy and " 96%" in busy
        util_bar = busy.split("util ", 1)[1].split(" 97%")[0].strip()
        assert set(util_bar) <= set("█▏▎▍▌▋▊▉·") and util_bar.count("█") >= 0.9 * len(util_bar)
        idle = lines[lines.index(line_with(lines, " GPU 2 ")) + 1]  # GPU 2: idle
        assert "util ····" in idle and "   0%" in idle
        assert "util ▁" in idle or "util  " in idle  # its utilisation's history, beside the power

    run(script, app, size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_mig_gpu_lists_its_instances_with_their_memory(tmp_path, monkeypatch, trainer, size):
    machine(tmp_path, monkeypatch, "mig_a100", 1, trainer.pid)
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.2)

    async def script(pilot):
        screen, table = await open_gpus(pilot, f"1:{trainer.pid}")
        order = keys(table)
        assert order[:5] == ["gpu:0", "mig:0:0", "mig:0:1", "mig:0:2", "0:4100200"]
        assert order.index("gpu:1") > order.index("0:4100200")
        await pilot.pause(0.2)
        lines = screen_lines(app)
        for profile, memory in (("3g.40gb", "11.0/39.2 GiB"), ("2g.20gb", "0.0/19.5 GiB"), ("1g.10gb", "0.0/9.5 GiB")):
            assert memory in line_with(lines, f"└ MIG {profile}")
        first = lines.index(line_with(lines, "MIG 3g.40gb"))
        assert "A100-SXM4-80GB" in lines[first - 2] and "util" in lines[first - 1] and " N/A" in lines[first - 1]
        # a highlighted instance says its whole name and UUID; it is no process to kill
        table.move_cursor(row=table.get_row_index("mig:0:0"), animate=False)
        await until(pilot, lambda: "MIG-0c1d2e3f-4a5b-5c6d-8e7f-9a0b1c2d3e01" in str(screen.query_one("#gpus-detail")
                                                                                       .content), what="the detail")
        await pilot.press("k")
        await until(pilot, lambda: any("select a process" in n.message for n in app._notifications), what="a refusal")

    run(script, app, size=size, notifications=True)
