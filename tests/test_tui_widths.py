"""What is cut, and what reads run together (issue 28, item 9): the GPUs screen shows the run and rank owning a
process whole at 120 columns (the command, then the user, give way), and the monitor's header keeps the run's
status apart from its step.

The GPUs are a recorded NVML table (the one stand-in allowed) listing a real process this test starts, named
by a run record as the run's rank 0."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import RUNNING
from test_tui_narrow import shown_rows
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
RUN_ID = "20261124-193012-bert-base-mrpc"
GiB = 2**30


@pytest.fixture
def h100_rank(tmp_path, monkeypatch):
    """An 8× H100 box whose GPU 0 runs rank 0 of a running run (a real process, 31 GiB)."""
    rank = subprocess.Popen(["sleep", "120"])
    try:
        table = json.loads((FIXTURES / "eight_h100.json").read_text())
        table["devices"][0]["compute_processes"] = [{"pid": rank.pid, "used_memory": 31 * GiB}]
        path = tmp_path / "table.json"
        path.write_text(json.dumps(table))
        monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(path))
        paths = RunPaths(tmp_path / "runs" / RUN_ID)
        paths.root.mkdir(parents=True)
        write_record(paths, new_record(RUN_ID, "bert-base-mrpc", status="running", pids={"ranks": {"0": rank.pid}}))
        yield rank
    finally:
        rank.kill()
        rank.wait()


@pytest.mark.parametrize("width", [120, 100])
def test_the_gpus_screen_shows_the_run_and_rank_whole(tmp_path, h100_rank, width):
    from textual.widgets import DataTable

    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)
    owner = "rank 0 · 11-24 19:30 bert-base-mrpc"  # the rank and its run's label: time and name (date: not today)

    async def script(pilot):
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        table = app.screen.query_one("#gpu-table", DataTable)
        key = f"0:{h100_rank.pid}"
        await until(pilot, lambda: any(str(r.key.value) == key for r in table.ordered_rows), what="the rank's row")
        await pilot.pause(0.3)  # a few more samples drawn
        rows = shown_rows(table)
        assert max(len(r.rstrip()) for r in rows) <= table.size.width
        line = next(r for r in rows if str(h100_rank.pid) in r)
        assert line.rstrip().endswith(owner), rows
        assert "31.0 GiB" in line and "sleep" in line
        name = next(i for i, r in enumerate(rows) if r.lstrip().startswith("GPU 0 "))
        assert "31.6/79.6 GiB" in rows[name], rows
        if width >= 120:  # the GPU's figures show whole too: its name over its utilisation, temperature and power
            assert "H100 80GB HBM3 " in rows[name] and "610/700 W" in rows[name], rows
            assert re.search(r"^ +\d+°C +util [█▏▎▍▌▋▊▉·]+ +\d+% +[█▏▎▍▌▋▊▉·]+ +\d+% +util ", rows[name + 1]), rows
        else:  # they give way first, with an ellipsis
            assert "H100 80GB HBM3" in rows[name] and "util" in rows[name + 1], rows

    run(script, app, size=(width, 40))


def test_the_monitor_header_keeps_the_status_apart_from_the_step(base):  # noqa: F811
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "step 23/40" in header.text, what="the run's step")
        shown = shown_rows(header)[0]
        assert shown.startswith("● running · step 23/40 · epoch 0.359 · loss 0.2777 · best eval_loss 0.3394 @20"), shown
        # read as a screenshot's text is read where each styled run's blanks are dropped: the status and the
        # step still read apart
        svg = app.export_screenshot()
        runs = [html.unescape(t).strip().replace("\xa0", " ") for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
        assert re.search(r"running\W+step 23/40", "".join(runs)), "".join(runs)[:400]

    run(script, app, size=(120, 40))
