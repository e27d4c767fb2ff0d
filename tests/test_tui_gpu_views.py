"""The app's GPU views (Home's strip, a run's GPUs tab) against every recorded machine: each
field the driver cannot give reads N/A, a lost GPU says so, no driver is a normal state."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import gpu_report
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.hardware.sampler import Sampler
from tuitrain.tui.widgets.gpu_panel import run_panel, spark, strip_line

TABLES = Path(__file__).parent / "fixtures" / "nvml"
ALL_GPUS = {"accelerator": "cuda", "env": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}


def views(name: str, samples: int = 5):
    sampler = Sampler(RecordedNvml(load_table(TABLES / f"{name}.json")))
    try:
        return [sampler.view() for _ in range(samples)]
    finally:
        sampler.close()


@pytest.mark.parametrize("name", ["four_gpu_mixed", "eight_h100", "mig_a100", "not_supported", "gpu_lost"])
def test_every_gpu_of_a_run_is_shown_with_its_figures(name):
    view = views(name)[-1]
    panel = run_panel(view, ALL_GPUS, "some-run", live=True).plain
    strip = strip_line(view)
    for cuda_index, gpu in enumerate(sorted(view.snapshot.gpus, key=lambda g: str(g.pci_bus_id))):
        assert f"cuda:{cuda_index} = GPU {gpu.index}  {gpu.name}" in panel
    assert panel.count("  util ") == panel.count("  memory ") == len(view.snapshot.gpus)
    assert "GPU" in strip and "CPU" in strip


def test_fields_the_driver_refuses_read_na():
    view = views("not_supported")[-1]
    panel = run_panel(view, ALL_GPUS, "r", live=True).plain
    util = next(line for line in panel.splitlines() if line.startswith("  util"))
    memory = next(line for line in panel.splitlines() if line.startswith("  memory"))
    assert util.split()[1] == "N/A" and memory.split() == ["memory", "N/A"] and "N/A W" in panel
    assert "GPU0 N/A" in strip_line(view) and "nan" not in strip_line(view) + panel


def test_an_unknown_size_never_reads_nan():
    """The one rule of every GPU view, the editor's GPU picker included (issue 13, defect 7)."""
    from tuitrain.hardware.na import NA
    from tuitrain.humanize import gib, gpu_memory, size

    assert size(NA) == gib(NA) == gib(float("nan")) == gpu_memory(NA, NA) == "N/A"
    assert gpu_memory(NA, 2**34) == "—/16.0 GiB" and gpu_memory(2**33, 2**34) == "8.0/16.0 GiB"
    assert gpu_memory(2**33, 2**34, lost=True) == "LOST"


def test_a_lost_gpu_says_so_and_the_others_go_on():
    history = views("gpu_lost", samples=6)
    panel = run_panel(history[-1], ALL_GPUS, "r", live=True).plain
    assert "LOST" in panel.split("cuda:1")[1] and "LOST" not in panel.split("cuda:1")[0]
    assert next(line for line in panel.split("cuda:1")[1].splitlines() if line.startswith("  memory")).split() == \
        ["memory", "LOST"]
    strip = strip_line(history[-1])
    assert "GPU1 LOST" in strip and "GPU0 20.0/24.0 GiB" in strip and "N/A" not in strip.split("GPU0")[1]


def test_a_lost_gpu_on_another_machine_reads_lost():
    from rich.text import Text

    from tuitrain.tui.widgets.gpu_panel import remote_lines

    out = Text()
    remote_lines(out, gpu_report({"time": 0, "gpus": [{"index": 1, "name": "RTX 3090", "lost": True,
                                                        "memory_used": None, "memory_total": None}]}), "r", now=1)
    assert "memory LOST" in out.plain and "N/A/N/A" not in out.plain


def test_mig_instances_and_a_busy_box_fit_one_strip_line():
    strip = strip_line(views("eight_h100")[-1])
    assert strip.count(" · ") == 2 and "8 GPUs" in strip and "GiB in use" in strip and "busiest GPU" in strip
    assert "2 GPUs" not in strip_line(views("mig_a100")[-1])  # two GPUs are listed one by one


def test_no_driver_is_a_normal_state():
    view = views("no_driver")[-1]
    assert "no NVIDIA GPU" in strip_line(view)
    panel = run_panel(view, ALL_GPUS, "r", live=True).plain
    assert "none of this run's GPUs is on this machine now" in panel and "no NVIDIA GPU" in panel


def test_history_draws_as_a_sparkline():
    assert spark([0, 50, 100], 100, width=5) == "  ▁▅█"
    from tuitrain.hardware.na import NA

    assert spark([NA, 100], 100, width=2) == " █"
