"""Screenshots of the monitor's GPUs tab of a two-machine run whose hosts share one hostname (issue 21, item 5),
at 80×24 and 120×40: a card a machine, by index; this machine's figures from a fixed sample of a recorded NVML
table and a fixed host, the other's as its agent sent them home.

Update after a deliberate change of the look: pytest tests/test_tui_day_two_monitor_snapshots.py --snapshot-update
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from test_tui_app import make_app, until
from test_tui_day_two_monitor import make_shared_hostname_run
from test_tui_snapshots import SIZES, base, training_args_as_shipped  # noqa: F401 - fixtures

TABLE = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"


def fixed_view():
    """A sample of the recorded table, with a fixed host and no history: the same on every machine."""
    from tuitrain.hardware.host import HostInfo
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.hardware.sampler import Sampler

    with Sampler(RecordedNvml(load_table(TABLE))) as sampler:
        view = sampler.view()
    host = HostInfo(cpu_count=16, physical_cores=8, cpu_percent=25.0, memory_total=64 * 2**30, memory_used=12 * 2**30)
    snapshot = dataclasses.replace(view.snapshot, host=host, ranks=())
    return dataclasses.replace(view, snapshot=snapshot, gpu_history={}, host_history=(), rank_history={})


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_monitor_gpus_tab_of_a_two_machine_run(snap_compare, base, size):  # noqa: F811 - the fixture
    run_dir = make_shared_hostname_run(base / "runs")

    async def before(pilot):
        app = pilot.app
        await until(pilot, lambda: app.polls > 1, what="the runs")
        app.hardware_view = fixed_view()
        app.open_run(run_dir)
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen._landed, what="monitor")
        await until(pilot, lambda: "(this machine)" in app.screen.query_one("#header").text, timeout=30,
                    what="this machine named")
        await pilot.press("u")
        await until(pilot, lambda: "machine 1 · tt-host-b" in str(app.screen.query_one("#gpus").content),
                    what="the GPUs tab")
        await pilot.pause(0.3)

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)


