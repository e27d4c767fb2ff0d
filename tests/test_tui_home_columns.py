"""Home at 120 columns gives its width to what tells runs apart (issue 34, item 4): a sweep's runs read apart by
their values (the RUN column was cut to 13 characters: `23:19 demo-…` for all of them), no STARTED column repeats
the time their RUN label says (nor gives a queued run a start), TIME shows whole beside a HOST column (it shrank to
`1`), what repeats from row to row gives way first, and the hardware strip shows every box's part (this machine's
line gives way instead)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import gpu_report
from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FINISHED, RUNNING, T0
from test_tui_home_table import copy_run, shown_ids
from test_tui_narrow import shown_rows

VALUES = ("1e-05", "3e-05", "1e-04")
SWEEP = [f"20260101-0025{i:02d}-demo-learning_rate-{v}" for i, v in enumerate(VALUES)]
QUEUED = "20260101-003500-demo"
LONG_HOST = "gpu-workstation-02.lab"


def sweep_runs(folder: Path) -> None:
    """Three ended runs of one sweep, as `run --sweep training.learning_rate=…` names and records them, and a run
    still waiting in the queue."""
    for i, (run_id, value) in enumerate(zip(SWEEP, VALUES, strict=True)):
        copy_run(folder, FINISHED, run_id, f"demo learning_rate={value}", T0 + 1500 + i)
        path = folder / "runs" / run_id / "run.json"
        record = json.loads(path.read_text())
        record["queue"] = {"sweep": {"id": "20260101-002500-demo", "index": i + 1, "of": 3,
                                     "label": f"learning_rate={value}"}}
        path.write_text(json.dumps(record))
    copy_run(folder, FINISHED, QUEUED, "demo", T0 + 2100)
    path = folder / "runs" / QUEUED / "run.json"
    record = json.loads(path.read_text())
    record.update(status="queued", started=None, ended=None, pids={})
    path.write_text(json.dumps(record))
    (folder / "runs" / QUEUED / "events.jsonl").write_text("")


def painted(app) -> dict[str, str]:
    """Each run's line as the table paints it (cut as it is cut), by the row's key."""
    table = app.screen.query_one("#runs")
    lines = shown_rows(table)[1:1 + table.row_count]
    return dict(zip(shown_ids(app), lines, strict=True))


def header(app) -> list[str]:
    return shown_rows(app.screen.query_one("#runs"))[0].split()


def a_box_answers(app, host: str) -> None:
    """A workstation's stream says its runs (what remote.runs_stream hands Home, on the stream's thread): the
    same runs as this machine's, as dicts."""
    from tuitrain.remote.runs_stream import HostNews

    rows = [{**dataclasses.asdict(r), "queue": None} for r in app.rows]
    app.screen._heard(HostNews(host, rows=rows))


def listed_but_not_streamed(folder: Path, monkeypatch: pytest.MonkeyPatch, hosts: list[str]) -> None:
    """Settings that name these workstations; Home lists them but opens no ssh stream (what a stream would say
    comes from the test: `a_box_answers`)."""
    from tuitrain.tui.workstation_streams import WorkstationStreams

    (folder / "config.toml").write_text("".join(f'[[workstations]]\nhost = "{host}"\n' for host in hosts))
    monkeypatch.setenv("TUITRAIN_CONFIG", str(folder / "config.toml"))
    monkeypatch.setattr(WorkstationStreams, "follow", lambda self, stations: [s.host for s in stations])


@pytest.mark.parametrize("with_host", [False, True], ids=["here", "with-HOST"])
def test_at_120_columns_a_sweeps_runs_read_apart_and_time_shows_whole(base, with_host, monkeypatch):  # noqa: F811
    sweep_runs(base)
    if with_host:
        listed_but_not_streamed(base, monkeypatch, [LONG_HOST])
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: len(shown_ids(app)) == 7 + with_host, what="seven runs (and the box's line)")
        if with_host:
            await until(pilot, lambda: header(app)[0] == "HOST", what="the HOST column")
            a_box_answers(app, LONG_HOST)
            await until(pilot, lambda: len(shown_ids(app)) == 14, what="the box's runs too")
        await pilot.pause(0.3)
        table = app.screen.query_one("#runs")
        lines = painted(app)
        assert "STARTED" not in header(app), header(app)  # the RUN label says when
        assert max(len(line.rstrip()) for line in lines.values()) <= table.size.width
        for run_id, value in zip(SWEEP, VALUES, strict=True):
            assert f"learning_rate={value}" in lines[run_id], lines[run_id]  # its values, whole
            assert lines[run_id].rstrip().endswith(" 39s"), lines[run_id]  # TIME whole at the right
        assert lines[RUNNING].rstrip().endswith(" 39m59s"), lines[RUNNING]
        queued = lines[QUEUED].split()[1 if with_host else 0:]
        assert queued[:3] == ["00:35", "demo", "queued"] and queued[-1] == "-", queued  # no start, no time
        if with_host:
            box = painted(app)[f"{LONG_HOST}:{SWEEP[1]}"]
            assert box.split()[0].startswith("gpu-") and "learning_rate=3e-05" in box and box.rstrip().endswith("39s")

    run(script, app, size=(120, 30))


def test_what_repeats_gives_way_before_the_run_label_is_cut():
    from rich.text import Text

    from tuitrain.tui.run_columns import COLUMNS, fit_columns

    cells = [{"RUN": Text("00:25 demo learning_rate=3e-05"), "STATUS": Text("failed r1"), "STEP": "17/40 ██▏··",
              "LOSS": "0.3657", "BEST": Text("eval_loss 0.4954"), "TIME": "1h02m"}]
    short = [{"STEP": "17/40", "BEST": "0.4954"}]
    assert fit_columns(COLUMNS, cells, short, 200).widths == (None,) * 6  # all fits: nothing given way
    # 30 + 9 + 11 + 6 + 16 + 5 cells and 11 of padding: 88; at 80, the bar (6) and the metric's name (10) go first
    layout = fit_columns(COLUMNS, cells, short, 80)
    assert layout.short == {"STEP", "BEST"} and layout.widths == (None,) * 6
    layout = fit_columns(COLUMNS, cells, short, 60)  # then RUN is cut, never STATUS nor TIME
    widths = dict(zip(COLUMNS, layout.widths, strict=True))
    assert widths["RUN"] == 30 - 12 and widths["STATUS"] is None and widths["TIME"] is None


def test_a_run_label_is_cut_in_its_middle_keeping_its_time_and_its_values():
    from tuitrain.tui.run_table import cut_label, run_labels

    assert cut_label("00:25 demo learning_rate=3e-05", 40) == "00:25 demo learning_rate=3e-05"
    assert cut_label("00:25 demo learning_rate=3e-05", 20) == "00:25 demo…ate=3e-05"
    assert cut_label("2025-12-31 23:59 bert-base-uncased-finetuned-mrpc", 30) == "2025-12-31 23:59 bert…ned-mrpc"
    assert len(cut_label("my-own-folder-named-otherwise", 12)) == 12
    now = T0 + 3600
    # a sweep's run: its name with the values whole (its id's is folder-safe and cut to 40 characters)
    long_id = "20260101-002500-demo-learning_rate-3e-05-per_device_train_ba"
    assert run_labels([long_id], now, {long_id: "demo learning_rate=3e-05 per_device_train_batch_size=8"}) == {
        long_id: "00:25 demo learning_rate=3e-05 per_device_train_batch_size=8"}


def test_the_hardware_strip_cuts_this_machines_line_so_every_box_shows(base):  # noqa: F811
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip
    from tuitrain.tui.workstation_streams import BoxGpus

    long_line = ("CPU  12% ▋···· 16 cores · RAM 61.5 GiB/251.5 GiB · GPU0 71.2/80.0 GiB 98% · GPU1 70.9/80.0 GiB 97% "
                 "· GPU2 70.1/80.0 GiB 96%")
    app = make_app(base, hardware_line=long_line)
    gpus = {"gpus": [{"index": 0, "name": "NVIDIA H100", "processes": [{"pid": 7, "used_memory": 1}]}]}

    async def script(pilot):
        strip = app.screen.query_one(HardwareStrip)
        for host in ("node1", "node2"):
            strip.gpus_heard(BoxGpus(host, gpus=gpu_report(gpus)))
        await until(pilot, lambda: len(strip.hosts) == 2, what="both boxes' GPUs")
        await pilot.pause(0.2)
        shown = shown_rows(strip)[0]
        assert shown.rstrip().endswith("node1: 1 GPU, 1 busy · node2: 1 GPU, 1 busy"), shown
        assert shown.startswith("CPU  12%") and "…" in shown and len(shown.rstrip()) <= strip.size.width

    run(script, app, size=(120, 30))
