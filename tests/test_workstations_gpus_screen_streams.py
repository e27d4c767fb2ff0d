"""The GPUs screen shows each workstation's GPUs from the one stream Home holds of that box (issue 23: one
connection per box): opening it starts no ssh connection and no tuitrain process there, and closing it ends none.
On the namespace hosts (tests/hosts.py); node1 answers NVML from a recorded table, node2 has no tuitrain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from test_tui_app import make_app, run, until
from test_workstations import tuitrain_processes
from test_workstations_gpus import FIXTURES, cells, keys, node1_with_a_run, sleeper  # noqa: F401  (sleeper: the fixture)

pytestmark = pytest.mark.slow


def node1_streams(folder: Path) -> list[str]:
    """node1's stream: the tuitrain there and the ssh client here carrying it (both name node1's runs folder)."""
    return tuitrain_processes(folder / "node1-runs", "workstations", "--stream")


def test_the_gpus_screen_starts_no_connection_to_a_box_home_streams(hosts: Any, tmp_path: Path, sleeper: Any,  # noqa: F811
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import DataTable

    monkeypatch.setenv("TUITRAIN_CONFIG", str(node1_with_a_run(tmp_path, hosts, sleeper.pid)))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / "four_gpu_mixed.json"))
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: app.host_gpus.get("node1") and app.host_gpus["node1"].gpus, 60,
                    what="node1's GPUs from Home's stream")
        await until(pilot, lambda: app.host_gpus.get("node2") and app.host_gpus["node2"].problem, 60,
                    what="why node2 cannot be watched, from Home's stream")
        streams = node1_streams(tmp_path)
        assert len([s for s in streams if " ssh " not in f" {s.split(': ', 1)[1]}"]) == 1, streams  # Home's, there
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        table = app.screen.query_one("#gpu-table", DataTable)
        await until(pilot, lambda: "node1/gpu:7" in keys(table), 30, what="node1's GPUs on the GPUs screen")
        await until(pilot, lambda: "host:node2" in keys(table) and "unreachable" in cells(table, "host:node2")[3], 30,
                    what="why node2 is not seen, on the GPUs screen")
        assert cells(table, "host:node1")[3].startswith("8 GPU(s), ")
        assert node1_streams(tmp_path) == streams, "the GPUs screen opened no connection of its own to node1"
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="back home")
        assert node1_streams(tmp_path) == streams, "Home's stream goes on after the GPUs screen closed"

    run(script, app, size=(140, 60))
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations"), 60, "no tuitrain left on node1")
