"""Issue 35, item 5: what each process uses of a GPU, where the driver gives it: its SM share
(nvmlDeviceGetProcessUtilization) and, with accounting mode on, its peak memory; N/A said plainly, with why,
elsewhere. On the recorded tables: an H100 that gives both, a GeForce workstation that gives neither, and tables
recorded before these were asked (they still read)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tuitrain.hardware.devices import discover, no_identity
from tuitrain.hardware.na import NA
from tuitrain.hardware.processes import use_notes, use_words
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.hardware.report import read_report, to_json
from tuitrain.hardware.sampler import Sampler
from tuitrain.runs.view.owners import RankOwner
from tuitrain.tui.screens.gpus import gpu_detail, process_cells
from tuitrain.tui.widgets.gpu_panel import run_panel

TABLES = Path(__file__).parent / "fixtures" / "nvml"
GiB = 2**30


def gpus(name: str, table: dict | None = None):
    return discover(RecordedNvml(table or load_table(TABLES / f"{name}.json")), no_identity).gpus


def test_each_process_has_its_sm_share_and_peak_memory_where_the_driver_gives_them():
    (h100,) = gpus("h100_launch_bound")
    (rank,) = h100.processes
    assert (h100.process_sm, h100.accounting) == (True, True)
    assert rank.sm_util == 15 and rank.peak_memory == 4 * GiB  # the mean of its samples (14%, 16%)
    assert use_words(h100, rank) == "SM 15% of late · peak 4.0 GiB" and use_notes((h100,)) == []
    desktop, starting = gpus("workstation_desktop")
    assert all(p.sm_util is NA and p.peak_memory is NA for p in (*desktop.processes, *starting.processes))
    assert use_notes((desktop, starting)) == [
        "SM share per process: N/A on GPU 0, 1 (the driver gives no per-process samples there)",
        "peak memory per process: N/A on GPU 0, 1 (no accounting mode there)"]
    old = gpus("four_gpu_mixed")[1]  # recorded before: NOT_SUPPORTED, as an old driver answers
    assert old.process_sm is NA and all(p.sm_util is NA for p in old.processes)


def test_accounting_off_names_the_command_that_turns_it_on_and_no_samples_is_no_kernel_run():
    table = load_table(TABLES / "h100_launch_bound.json")
    table["devices"][0].update(accounting_mode=0, process_utilization=[])  # NOT_FOUND: no kernel since
    (h100,) = gpus("", table)
    assert h100.process_sm is True and h100.processes[0].sm_util == 0 and h100.accounting is False
    assert use_notes((h100,)) == [("peak memory per process: N/A on GPU 0 (accounting mode is off: "
                                  "`sudo nvidia-smi -i 0 -am 1` turns it on)")]


def test_the_figures_travel_in_the_json_another_workstation_streams():
    with Sampler(RecordedNvml(load_table(TABLES / "h100_launch_bound.json"))) as sampler:
        snapshot = sampler.sample()
    report = read_report(json.loads(json.dumps(to_json(snapshot, mps=False))))
    assert not isinstance(report, str), report
    (back,) = report.gpus
    assert (back.process_sm, back.accounting, back.processes[0].sm_util, back.processes[0].peak_memory) == \
        (True, True, 15, 4 * GiB)


def test_tuitrain_gpus_shows_them_and_says_why_not_where_they_are_missing(tmp_path):
    def shown(table: str) -> str:
        done = subprocess.run([sys.executable, "-m", "tuitrain", "gpus"], capture_output=True, text=True, timeout=120,
                              env={"PATH": "/usr/bin:/bin", "TUITRAIN_NVML_TABLE": str(TABLES / f"{table}.json"),
                                   "TUITRAIN_RUNS_DIR": str(tmp_path)})
        assert done.returncode == 0, done.stderr
        return done.stdout

    h100 = shown("h100_launch_bound")
    header, row = (line for line in h100.splitlines() if line.startswith(("GPU  pid", "0    4100401")))
    assert header.split()[4:9] == ["GPU", "memory", "peak", "SM", "kind"] and row.split()[4:9] == \
        ["3.8", "GiB", "4.0", "GiB", "15%"], h100
    assert "N/A on GPU" not in h100
    desktop = shown("workstation_desktop")
    assert "SM share per process: N/A on GPU 0, 1 (the driver gives no per-process samples there)" in desktop


def test_the_gpus_screen_and_the_monitor_show_a_ranks_sm_share():
    (h100,) = gpus("h100_launch_bound")
    from tuitrain.hardware.processes import GpuProcessRow

    row = GpuProcessRow(0, h100.processes[0])
    assert process_cells(row, "me")[4].plain == "3.8 GiB · SM 15%"
    desktop, _ = gpus("workstation_desktop")
    assert gpu_detail(desktop).splitlines()[1:] == [
        "SM share per process: N/A (the driver gives no per-process samples there)",
        "peak memory per process: N/A (no accounting mode there)"]
    with Sampler(RecordedNvml(load_table(TABLES / "h100_launch_bound.json")),
                 owners=lambda: {4100401: RankOwner("r1", 0)}) as sampler:
        view = sampler.view()
    panel = run_panel(view, {"accelerator": "cuda", "env": {"CUDA_VISIBLE_DEVICES": "0"}}, "r1", live=True).plain
    assert "    rank 0 of run r1: 3.8 GiB, peak 4.0 GiB, SM 15%" in panel, panel
