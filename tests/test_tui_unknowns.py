"""What cannot be known now is shown as not known (issue 34, item 3): a hung? run's header kept `2.00 steps/s
ETA 8s`; a failed run that logged nothing said "waiting for values…" in its Metrics tab; an ended run of another
workstation kept "so far: N samples" in its GPUs tab; a run whose box is not heard kept `running` with an elapsed
time that ticked on. Fixed run directories (test_tui_fixtures.make_runs); another box's run is its cache folder
here, as the mirror writes it (remote.run_mirror), with the box out of the settings so that no mirror runs."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import gpu_report
from test_tui_app import base, make_app, until  # noqa: F401 (base: a fixture)
from test_tui_fixtures import FAILED, RUNNING, T0
from test_tui_hangs import header, write_beat
from test_tui_home_table import copy_run
from test_tui_multinode import open_monitor, run_app
from test_tui_narrow import shown_rows

NOTHING_LOGGED = "20260101-003000-demo"


def test_a_hung_runs_header_gives_no_rate_and_no_eta(base):  # noqa: F811
    write_beat(base / "runs" / RUNNING, 0, age=300)

    async def script(pilot):
        monitor = await open_monitor(pilot, RUNNING)
        said = await until(pilot, lambda: "hung?" in header(monitor) and header(monitor), what="hung? in the header")
        line2 = said.splitlines()[1]
        assert "steps/s and ETA unknown (no progress: hung?)" in line2 and "ETA 8s" not in line2, said
        assert "2.00 steps/s" not in line2, said
        write_beat(base / "runs" / RUNNING, 0, age=1)  # it moves again: its rate and ETA come back
        await until(pilot, lambda: "ETA 8s" in header(monitor), what="the ETA again")

    run_app(make_app(base), script)


def test_a_run_that_ended_before_logging_says_so_in_its_metrics_tab(base):  # noqa: F811
    copy_run(base, FAILED, NOTHING_LOGGED, "demo", T0 + 1800)
    run_dir = base / "runs" / NOTHING_LOGGED
    (run_dir / "profile.toml").write_text('[training]\nmax_steps = 40\neval_strategy = "steps"\neval_steps = 10\n')
    (run_dir / "events.jsonl").write_text(json.dumps({"event": "train_begin", "time": T0 + 1810, "step": 0,
                                                      "max_steps": 40}) + "\n")

    async def script(pilot):
        monitor = await open_monitor(pilot, NOTHING_LOGGED)
        await pilot.press("m")
        await until(pilot, lambda: monitor.query_one("#tabs").active == "tab-metrics", what="the Metrics tab")
        await pilot.pause(0.2)
        for plot in ("#plot-loss", "#plot-lr", "#plot-eval"):
            text = " ".join(row.strip() for row in shown_rows(monitor.query_one(plot)))
            assert "waiting for values" not in text and "none: the run ended (failed) before" in text, (plot, text)

    run_app(make_app(base), script)


@pytest.fixture
def box_run(base, tmp_path, monkeypatch):  # noqa: F811
    """RUNNING of the box node1 in its cache folder here, last written 20 minutes after it started; the settings
    name no node1 (so nothing mirrors it: the box is not heard), and its GPUs are as Home's stream last carried them."""
    from tuitrain.remote.run_mirror import cache_dir
    from tuitrain.runs.keeper.samples import SampleLog, samples_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = cache_dir("node1", RUNNING)
    shutil.copytree(base / "runs" / RUNNING, folder)
    record = json.loads((folder / "run.json").read_text())
    record.update(accelerator="cuda", env={"CUDA_VISIBLE_DEVICES": "0"}, pids={})
    (folder / "run.json").write_text(json.dumps(record))
    log = SampleLog(2.0, meta={"machine_rank": 0, "host": "node1", "run_id": RUNNING, "cpu_count": 16, "ranks": [0],
                               "memory_total": 257000, "gpus": [{"index": 0, "name": "NVIDIA H100", "memory_total": 81559}]})
    for i in range(3):
        log.add(T0 + 1211 + 2 * i, {"gpu.0.util": 90.0, "gpu.0.mem": 30000.0, "host.cpu": 20.0})
    samples_path(folder, 0).parent.mkdir(exist_ok=True)
    samples_path(folder, 0).write_text(json.dumps(log.to_json()))
    heard = record["started"] + 1200
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (heard, heard), follow_symlinks=False)
    return folder


def test_a_run_whose_box_is_not_heard_is_not_said_to_be_running(base, box_run):  # noqa: F811
    app = make_app(base, open_run=box_run)  # opened at start (kept from the pruning of old mirrors)

    async def script(pilot):
        monitor = await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen._landed
                              and app.screen, what="the box's run's monitor")
        said = await until(pilot, lambda: "not heard" in header(monitor) and header(monitor), what="not heard")
        line1, line2 = said.splitlines()[:2]
        assert line1.startswith("● not heard · running when last heard (00:40:01) · step 23/40"), said
        assert "elapsed ≥ 20m00s" in line2 and "steps/s and ETA unknown" in line2, said  # not a ticking clock
        assert "not a workstation" in said  # why: the mirror's problem

    run_app(app, script)


def test_a_box_runs_gpus_tab_says_while_it_ran_once_it_has_ended(base, box_run):  # noqa: F811
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip
    from tuitrain.tui.workstation_streams import BoxGpus

    app = make_app(base, open_run=box_run)
    sample = {"nvml": {"status": "NVML: 1 GPU"}, "gpus": [{"index": 0, "name": "NVIDIA H100", "memory_used": 1,
                                                          "memory_total": 80 * 2**30, "processes": []}]}

    async def script(pilot):
        monitor = await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen" and app.screen._landed
                              and app.screen, what="the box's run's monitor")
        await pilot.press("u")
        gpus = monitor.query_one("#gpus")
        app.post_message(HardwareStrip.HostGpus(BoxGpus("node1", gpus=gpu_report(sample))))  # Home's stream of node1
        await until(pilot, lambda: "so far: 3 samples" in str(gpus.content), what="the samples so far")
        record = json.loads((box_run / "run.json").read_text())  # the box's word that it finished, mirrored
        record.update(status="finished", ended=record["started"] + 1300)
        (box_run / "run.json").write_text(json.dumps(record))
        await until(pilot, lambda: "while it ran: 3 samples" in str(gpus.content), what="what it used while it ran")
        assert "so far" not in str(gpus.content)

    run_app(app, script)
