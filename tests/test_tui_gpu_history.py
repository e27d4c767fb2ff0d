"""History at a glance (issue 38), as nvitop and btop show it: each GPU's recent utilisation and memory as sparklines
on the GPUs screen and in Home's hardware strip, this machine's and each workstation's, kept in one model
(tui.gpu_history), not in the widgets. The GPUs are a recorded NVML table (the one stand-in allowed) whose figures
change while the app samples it, as a GPU's do when a job starts on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import gpu_report
from test_tui_app import make_app, run, until
from test_tui_home_columns import listed_but_not_streamed

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
SPARKS = "▁▂▃▄▅▆▇█"


def test_the_model_keeps_each_gpus_fractions_by_host():
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.hardware.sampler import Sampler
    from tuitrain.tui.gpu_history import GpuHistory

    nvml = RecordedNvml(load_table(FIXTURES / "four_gpu_mixed.json"))
    history = GpuHistory(length=3)
    with Sampler(nvml) as sampler:
        for busy in (0, 50, 100):
            nvml.devices[2]["utilization"] = {"gpu": busy, "memory": busy}
            sampler.sample()
        view = sampler.view()  # one sample more, as the app's sampler takes them
    history.local("local", view)
    trace = history.trace("local", 2)
    assert trace.utilization == (0.5, 1.0, 1.0)  # the last three of the sampler's ring
    total = view.snapshot.gpus[2].memory_total
    assert trace.memory == (view.snapshot.gpus[2].memory_used / total,) * 3
    history.add("node1", view.snapshot.gpus)
    history.add("node1", view.snapshot.gpus)
    assert len(history.traces("node1")) == 4 and history.trace("node1", 2).utilization == (1.0, 1.0)
    history.keep(["local"])
    assert not history.trace("node1", 2) and history.trace("local", 2)


def test_the_strip_gives_the_history_the_room_the_words_leave():
    from tuitrain.tui.gpu_history import Trace
    from tuitrain.tui.widgets.hardware_strip import HERE_FLOOR, strip_text

    rising = Trace((0.0, 0.25, 0.5, 1.0), (0.5, 0.5, 0.75, 1.0))
    line = "CPU  12% ▋···· 16 cores · RAM 12.0 GiB/64.0 GiB · GPU0 10.0/80.0 GiB  45%"
    assert strip_text(line, {}) == line and strip_text(line, {}, 120, {}) == line  # no history: as before
    wide = strip_text(line, {}, 120, {"local": [rising]})
    assert wide.startswith(line + " · util ") and "▁▃▅█" in wide and " mem " in wide and len(wide) <= 120
    narrow = strip_text(line, {"node1": gpu_report({"gpus": []})}, 100, {"local": [rising] * 2, "node1": [rising]})
    assert len(narrow) <= 100 and "node1: no GPUs util " in narrow  # every box's part and history shows
    assert narrow.index("…") >= HERE_FLOOR - 1  # this machine's line gave way, to its floor at most
    tight = strip_text(line, {"node1": gpu_report({"gpus": []})}, 80, {"local": [rising] * 2, "node1": [rising]})
    assert len(tight) <= 80 and tight.endswith("· node1: no GPUs") and " util " in tight  # the first that fits
    crowded = strip_text(line, {"node1": gpu_report({"gpus": []})}, 60, {"local": [rising] * 8, "node1": [rising] * 8})
    assert len(crowded) <= 60 + 1 and "util" not in crowded  # no room for a trend: none drawn, words whole


@pytest.fixture
def changing_gpus(monkeypatch):
    """The app's sampler reads a recorded table the test changes as it goes (what `library_from_env` would load)."""
    from tuitrain.hardware import recorded

    nvml = recorded.RecordedNvml(json.loads((FIXTURES / "four_gpu_mixed.json").read_text()))
    monkeypatch.setattr(recorded, "library_from_env", lambda env: nvml)
    return nvml


def test_a_gpu_that_gets_busy_draws_rising_sparklines_here_and_for_a_box(tmp_path, monkeypatch, changing_gpus):
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.hardware.report import gpu_sample
    from tuitrain.hardware.sampler import Sampler
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip
    from tuitrain.tui.workstation_streams import BoxGpus

    (tmp_path / "runs").mkdir()
    listed_but_not_streamed(tmp_path, monkeypatch, ["node1"])
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.4)
    idle = changing_gpus.devices[2]

    async def script(pilot):
        home = app.screen
        strip = home.query_one(HardwareStrip)
        await until(pilot, lambda: len(app.gpu_history.trace("local", 2).utilization) >= 8, 20, "idle samples")
        assert set(app.gpu_history.trace("local", 2).utilization) == {0.0}
        idle["utilization"] = {"gpu": 100, "memory": 90}
        idle["memory"] = {**idle["memory"], "used": idle["memory"]["total"] - 2**28}
        await until(pilot, lambda: app.gpu_history.trace("local", 2).utilization[-2:] == (1.0, 1.0), 20, "busy")
        app.workers.cancel_group(app, "hardware")  # the sampling ends: what it kept stays as it is from here
        await until(pilot, lambda: not [w for w in app.workers if w.group == "hardware" and w.is_running], 10,
                    "the sampler ended")
        # Home's strip: this machine's GPUs' utilisation and memory, rising at the end
        await until(pilot, lambda: " util " in strip.render().plain, 10, "the history in the strip")
        said = strip.render().plain
        util, memory = said.split(" util ", 1)[1].split(" mem ")
        assert util.split()[2][-1] == "█" and set(util.split()[3]) == {"▁"}  # GPU 2 busy now, GPU 3 idle
        assert util.split()[2][0] == "▁"  # and idle before
        assert memory.split()[2][-1] == "█" and len(util.split()) == 4
        # a box's GPUs, as Home's stream of it carries them (sampled there: here, another recorded table)
        there = RecordedNvml(load_table(FIXTURES / "h100_reserved.json"))
        with Sampler(there) as sampler:
            for busy in (0, 0, 40, 100):
                there.devices[0]["utilization"] = {"gpu": busy, "memory": busy}
                strip.gpus_heard(BoxGpus("node1", gpus=gpu_report(gpu_sample(sampler.sample(), False))))
                await pilot.pause(0.05)
        await until(pilot, lambda: len(app.gpu_history.trace("node1", 0).utilization) == 4, 10, "node1's samples")
        await until(pilot, lambda: "node1: 2 GPUs" in strip.render().plain, 10, "node1's part")
        box = strip.render().plain.split("node1: 2 GPUs, ", 1)[1]
        assert " util " in box and box.split(" util ", 1)[1].split()[0] == "▄█"  # 40 %, then 100 %
        # the GPUs screen: each GPU's two sparklines, this machine's and node1's
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        grid = app.screen.query_one("#gpu-table")
        await until(pilot, lambda: "node1/gpu:0" in grid.rows and "gpu:2" in grid.rows, 10, "both machines' GPUs")
        await pilot.pause(0.3)
        def spark_of(key: str, which: str) -> str:
            """A GPU row's sparkline of `which` (util, mem), as its cell draws it."""
            cell = grid.get_row(key)[-1].plain.splitlines()[-1]
            return cell.split(f"{which} ", 1)[1].split(" mem ")[0].strip()

        util, memory = spark_of("gpu:2", "util"), spark_of("gpu:2", "mem")
        busy = sum(1 for value in app.gpu_history.trace("local", 2).utilization if value == 1.0)
        assert len(util) > busy and util[0] == "▁" and util[-busy:] == "█" * busy  # idle, then busy
        assert memory[0] == "▁" and memory[-busy:] == "█" * busy
        assert spark_of("gpu:3", "util") == "▁" * len(spark_of("gpu:3", "util"))
        assert spark_of("node1/gpu:0", "util")[-3:] == "▁▄█"  # 0 %, 40 %, 100 %
        assert spark_of("node1/gpu:1", "util")  # its other GPU, idle all along

    run(script, app, size=(160, 40))  # room on the strip for both machines' history


def test_sparks_are_the_eight_levels():
    from tuitrain.tui.widgets.gpu_panel import spark

    assert spark([0.0, 0.5, 1.0], 1.0, 3) == "▁▅█" and set(spark([0.3], 1.0, 1)) <= set(SPARKS)
