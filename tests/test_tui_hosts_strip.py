"""Each workstation's GPUs in Home's hardware strip (issue 23): Home's own stream of each box carries its GPUs
(`RunsStream(on_gpus=…)`, no second connection), and the strip adds a short part per box after this machine's
line (`node1: 8 GPUs, 8 busy`: the recorded table has a process on each). Without workstations the strip is as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import gpu_report, wait_for
from test_tui_app import make_app, run, until
from test_workstations import tuitrain_processes
from test_workstations_gpus import node1_with_a_run, sleeper  # noqa: F401  (sleeper: the fixture)
from tuitrain.tui.widgets.hardware_strip import host_part, strip_text

GPU = {"index": 0, "name": "NVIDIA H100", "processes": []}
BUSY = {**GPU, "index": 1, "processes": [{"pid": 7, "used_memory": 1}]}


def test_each_box_is_a_short_part_after_this_machines_line() -> None:
    assert host_part("node1", gpu_report({"gpus": [GPU, BUSY]})) == "node1: 2 GPUs, 1 busy"
    assert host_part("node2", gpu_report({"gpus": [GPU]})) == "node2: 1 GPU, 0 busy"
    assert host_part("node3", gpu_report({"gpus": []})) == "node3: no GPUs"
    assert strip_text("CPU 3%", {}) == "CPU 3%"
    assert strip_text("CPU 3%", {"node1": gpu_report({"gpus": [BUSY]}), "node3": gpu_report({})}) == \
        "CPU 3% · node1: 1 GPU, 1 busy · node3: no GPUs"


@pytest.mark.slow
def test_homes_strip_shows_each_boxs_gpus_from_its_own_stream(hosts: Any, tmp_path: Path, sleeper: Any,  # noqa: F811
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip

    monkeypatch.setenv("TUITRAIN_CONFIG", str(node1_with_a_run(tmp_path, hosts, sleeper.pid)))
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def script(pilot: Any) -> None:
        strip = app.screen.query_one(HardwareStrip)
        await until(pilot, lambda: "node1: 8 GPUs, 8 busy" in strip.text, 60, what="node1's GPUs in the strip")
        assert strip.text.startswith(app.hardware_line), strip.text  # this machine's line first, as before
        assert "node2" not in strip.text  # a box that cannot answer has its line under Home's runs, not here
        there = [p for p in tuitrain_processes(tmp_path / "node1-runs", "workstations", "--stream")
                 if " ssh " not in f" {p.split(': ', 1)[1]}"]  # node1's tuitrain, not the ssh client here
        assert len(there) == 1 and "--gpus" in there[0], there  # Home's one stream of node1 carries its GPUs

    run(script, app, size=(120, 30))
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations", "--stream"), 60, "no tuitrain left on node1")
