"""A remote run's monitor shows its box's GPUs in its GPUs tab (issue 23), as a local run's shows this machine's:
the run's devices there (by its CUDA_VISIBLE_DEVICES) and the processes on them, carried by Home's one stream of that
box (the app's `host_gpus`), never a connection of the monitor's own. On the namespace hosts (tests/hosts.py); node1
answers NVML from a recorded table (eight H100s, its GPU 2 used by the run's rank 0), this machine from another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from conftest import gpu_report, wait_for
from test_tui_app import make_app, run, until
from test_workstations import tuitrain_processes
from test_workstations_gpus import FIXTURES, RUN_ID, node1_with_a_run, sleeper  # noqa: F401  (sleeper: the fixture)
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import read_record, write_record
from tuitrain.tui.widgets.gpu_panel import box_panel
from tuitrain.tui.workstation_streams import BoxGpus

SAMPLE = {"nvml": {"status": "NVML: 2 GPUs"}, "gpus": [
    {"index": 0, "name": "NVIDIA H100", "memory_used": 1, "memory_total": 80 * 2**30, "processes": []},
    {"index": 1, "name": "NVIDIA H100", "memory_used": 6 * 2**30, "memory_total": 80 * 2**30, "utilization": 97,
     "processes": [{"pid": 7, "used_memory": 6 * 2**30,
                    "owner": {"run_id": RUN_ID, "rank": 0, "describe": f"rank 0 of run {RUN_ID}"}}]}]}
RECORD = {"id": RUN_ID, "status": "running", "accelerator": "cuda", "env": {"CUDA_VISIBLE_DEVICES": "1"}}


def panel(news: BoxGpus | None) -> str:
    return box_panel("node1", news, RECORD, RUN_ID, live=True).plain  # type: ignore[arg-type]


def test_the_panel_shows_the_runs_devices_on_its_box_or_why_not() -> None:
    shown = panel(BoxGpus("node1", gpus=gpu_report(SAMPLE)))
    assert shown.startswith("on node1, as its tuitrain streams them\n")
    assert "cuda:0 = GPU 1  NVIDIA H100" in shown and "GPU 0" not in shown  # only the run's devices
    assert " 97%" in shown and f"rank 0 of run {RUN_ID}: 6.0 GiB" in shown, shown
    assert "waiting for node1's GPUs" in panel(None)
    down = panel(BoxGpus("node1", gpus=gpu_report(SAMPLE), problem="node1: no word for 7 s"))
    assert "node1: no word for 7 s (the GPUs below are as last heard)" in down and "cuda:0 = GPU 1" in down
    assert panel(BoxGpus("node1", problem="node1: connection refused")).splitlines()[1] == "node1: connection refused"
    gone = panel(BoxGpus("node1", gpus=gpu_report({**SAMPLE, "gpus": SAMPLE["gpus"][:1]})))
    assert "none of this run's GPUs is on node1 now (NVML: 2 GPUs)" in gone


def node1_streams(folder: Path) -> list[str]:
    """The tuitrain processes streaming node1 there and the ssh clients carrying them here (node1's runs folder is
    named in both command lines)."""
    return tuitrain_processes(folder / "node1-runs", "workstations", "--stream")


@pytest.mark.slow
def test_a_remote_runs_monitor_shows_its_boxs_gpus_from_homes_stream(hosts: Any, tmp_path: Path, sleeper: Any,  # noqa: F811
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from test_tui_home_table import shown_ids
    from tuitrain.tui.screens.monitor import MonitorScreen

    monkeypatch.setenv("TUITRAIN_CONFIG", str(node1_with_a_run(tmp_path, hosts, sleeper.pid)))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / "four_gpu_mixed.json"))  # this machine's GPUs
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    there = RunPaths(tmp_path / "node1-runs" / RUN_ID)
    write_record(there, {**read_record(there), "accelerator": "cuda", "env": {"CUDA_VISIBLE_DEVICES": "2"}})
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: f"node1:{RUN_ID}" in shown_ids(app), 60, what="node1's run in Home")
        await until(pilot, lambda: app.host_gpus.get("node1") and app.host_gpus["node1"].gpus, 60,
                    what="node1's GPUs from Home's stream")
        streams = node1_streams(tmp_path)
        app.screen.query_one("#runs").move_cursor(row=shown_ids(app).index(f"node1:{RUN_ID}"))
        await pilot.press("enter")
        monitor = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#gpus")
                              and app.screen, 60, what="the remote run's monitor, composed")
        await pilot.press("u")
        gpus = monitor.query_one("#gpus")

        def tab() -> str:
            shown = gpus.render()
            return shown.plain if isinstance(shown, Text) else str(shown)

        await until(pilot, lambda: "cuda:0 = GPU 2  NVIDIA H100" in tab(), 60, what="node1's GPU 2 in the GPUs tab")
        shown = tab()
        assert shown.startswith("on node1, as its tuitrain streams them"), shown
        assert f"rank 0 of run {RUN_ID}: 6.0 GiB" in shown, shown
        assert "A6000" not in shown and "this machine" not in shown, "none of this machine's GPUs"
        assert node1_streams(tmp_path) == streams, "the monitor opened no stream of node1 of its own"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MonitorScreen), what="back home")

    run(script, app, size=(140, 40))
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations"), 60, "no tuitrain left on node1")
