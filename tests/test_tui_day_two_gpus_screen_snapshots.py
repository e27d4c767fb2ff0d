"""Screenshots of the GPUs screen (issue 21, item 7) at 80×24 and 120×40: four mixed GPUs with a run's ranks and a
stranger's process, and two A100s, one split into MIG instances. The figures are a fixed sample of a recorded NVML
table with fixed processes (users, command lines, owners), a fixed utilisation and memory history and a fixed host, so a
screenshot is the same on every machine (the pids are the recorded box's: none lives here, so no command line is
read from this machine).

Update after a deliberate change of the look:
pytest tests/test_tui_day_two_gpus_screen_snapshots.py --snapshot-update
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from test_tui_app import make_app, until
from test_tui_fixtures import FINISHED
from test_tui_snapshots import SIZES, base, training_args_as_shipped  # noqa: F401 - fixtures

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
COMMANDS = {
    4100001: ("alice", "/opt/conda/bin/python train.py --model llama-3-8b --lr 2e-5 --batch-size 8 --epochs 3"),
    4100002: ("alice", "/opt/conda/bin/python -m jupyter_server --port 8890"),
    4100010: ("root", "/usr/lib/xorg/Xorg :0 -nolisten tcp"),
    4100200: ("bob", "/usr/bin/python3 serve.py --model mistral-7b --port 9000"),
}
RANK_PIDS = {4100001: 0}  # pid → its rank in the run FINISHED


def fixed_view(table: str):
    """A sample of the recorded `table` with fixed processes, a fixed utilisation history and host."""
    from tuitrain.hardware.host import HostInfo
    from tuitrain.hardware.na import NA
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.hardware.sampler import GpuPoint, Sampler
    from tuitrain.runs.view.owners import RankOwner

    with Sampler(RecordedNvml(load_table(FIXTURES / f"{table}.json"))) as sampler:
        view = sampler.view()
    gpus = []
    for gpu in view.snapshot.gpus:
        processes = []
        for proc in gpu.processes:
            user, command = COMMANDS.get(proc.pid, ("carol", "python3 job.py"))
            owner = RankOwner(FINISHED, RANK_PIDS[proc.pid]) if proc.pid in RANK_PIDS else None
            processes.append(dataclasses.replace(proc, user=user, command=command, owner=owner))
        gpus.append(dataclasses.replace(gpu, processes=tuple(processes)))
    discovery = dataclasses.replace(view.snapshot.discovery, gpus=tuple(gpus))
    host = HostInfo(cpu_count=16, physical_cores=8, cpu_percent=25.0, memory_total=64 * 2**30, memory_used=12 * 2**30)
    snapshot = dataclasses.replace(view.snapshot, discovery=discovery, host=host, ranks=())
    history = {gpu.index: tuple(GpuPoint(float(t), (t * 7 + gpu.index * 30) % 101,
                                         (t * gpu.index * 2**27) % (gpu.memory_total or 1) if gpu.memory_total is not NA
                                         else NA, 40, 100.0) for t in range(40))
               for gpu in gpus}
    return dataclasses.replace(view, snapshot=snapshot, gpu_history=history, host_history=(), rank_history={})


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(("table", "selected"), [("four_gpu_mixed", "1:4100001"), ("mig_a100", "mig:0:0")],
                         ids=["four_gpu_mixed", "mig_a100"])
def test_gpus_screen(snap_compare, base, size, table, selected):  # noqa: F811 - the fixture
    async def before(pilot):
        from tuitrain.tui.messages import HardwareSampled

        app = pilot.app
        await until(pilot, lambda: app.polls > 1, what="the runs")
        app.post_message(HardwareSampled(app.hardware_line, fixed_view(table)))  # as the app's sampler hands it
        await until(pilot, lambda: app.hardware_view is not None, what="the sample")
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        grid = app.screen.query_one("#gpu-table")
        await until(pilot, lambda: selected in grid.rows, what="the rows")
        grid.move_cursor(row=grid.get_row_index(selected), animate=False)
        await until(pilot, lambda: not app.screen._asked, what="the command lines looked for")
        await pilot.pause(0.3)

    assert snap_compare(make_app(base), terminal_size=size, run_before=before)
