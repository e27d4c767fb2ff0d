"""Another machine's GPU report (a workstation's stream, a node agent's sample mirrored home) as it may come: from
another version, or broken. It is checked where it enters (`read_report`): one that checks is shown as this
machine's own figures are, one that does not is one line naming the key, and nothing the app draws of it raises.
(Before the check, `{"index": "x"}` from a box raised ValueError in the app's message handler: the app died.)"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text

from test_run_record_property import FUZZ, JSON, records
from tuitrain.hardware.mapping import pci_order
from tuitrain.hardware.na import plain
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.hardware.report import GpuJson, GpuReport, HostJson, read_report, to_json
from tuitrain.hardware.sampler import Sampler
from tuitrain.remote.runs_stream import HostNews
from tuitrain.tui.widgets.gpu_panel import box_panel, remote_lines
from tuitrain.tui.widgets.hardware_strip import strip_text
from tuitrain.tui.workstation_streams import BoxGpus, box_gpus

TABLES = Path(__file__).parent / "fixtures" / "nvml"
RECORD = {"id": "r1", "status": "running", "accelerator": "cuda", "env": {"CUDA_VISIBLE_DEVICES": "0,1"}}


def report_of(table: str) -> dict[str, Any]:
    with Sampler(RecordedNvml(load_table(str(TABLES / f"{table}.json"))), history=1) as sampler:
        return json.loads(json.dumps(to_json(sampler.sample(), mps=False)))


@pytest.mark.parametrize("table", sorted(p.stem for p in TABLES.glob("*.json")))
def test_a_report_reads_back_as_the_gpus_it_was_written_from(table: str) -> None:
    with Sampler(RecordedNvml(load_table(str(TABLES / f"{table}.json"))), history=1) as sampler:
        snapshot = sampler.sample()
    report = read_report(json.loads(json.dumps(to_json(snapshot, mps=False))))
    assert isinstance(report, GpuReport), report
    assert [plain(g) for g in report.gpus] == [plain(g) for g in pci_order(snapshot.gpus)]
    assert report.status == snapshot.discovery.status_line and report.host == snapshot.host


def test_every_field_of_a_gpu_its_processes_and_the_host_is_in_its_json_keys() -> None:
    """A field added to GpuInfo, GpuProcess, MigDevice or HostInfo is checked where another machine's report is
    read, or this fails."""
    from tuitrain.hardware.devices import GpuInfo, GpuProcess, MigDevice
    from tuitrain.hardware.host import HostInfo
    from tuitrain.hardware.report import MigJson, ProcessJson

    for fields, keys in ((GpuInfo, GpuJson), (GpuProcess, ProcessJson), (MigDevice, MigJson), (HostInfo, HostJson)):
        assert set(fields.__dataclass_fields__) <= set(typing.get_type_hints(keys)), fields


def test_a_process_name_that_is_not_utf8_there_reads_with_a_replacement_not_a_lost_report() -> None:
    """psutil spells a name's bytes that are not UTF-8 as half surrogates, and JSON carries them: an older box's
    report with one (anyone's process on its GPUs) is read with U+FFFD there, not refused whole."""
    from tuitrain.rundir.json_shape import sendable

    gpu = {**BASE["gpus"][0], "processes": [{"pid": 7, "command": "py\udcff", "user": "\ud800x"}]}
    report = read_report(json.loads(json.dumps({**BASE, "gpus": [gpu]})))
    assert isinstance(report, GpuReport), report
    (process,) = report.gpus[0].processes
    assert (process.command, process.user) == ("py\ufffd", "?x")
    assert sendable("caf\udcc3\udca9") == "café" and sendable("plain") == "plain"


def test_a_machines_sample_that_does_not_read_says_why_in_its_card(tmp_path: Path) -> None:
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.runs.keeper.mirror import read_machine_samples

    paths = RunPaths(tmp_path)
    paths.machine_gpus(1).parent.mkdir(parents=True)
    paths.machine_gpus(1).write_text(json.dumps({**BASE, "time": "soon"}))
    paths.machine_gpus(2).write_text(json.dumps(BASE))
    samples = read_machine_samples(paths)
    assert samples[1] == "time: 'soon' is not a number" and isinstance(samples[2], GpuReport)
    out = Text()
    remote_lines(out, samples[1], "r1", now=1e9)
    assert out.plain == "    its figures do not read (time: 'soon' is not a number)\n"


BASE = report_of("h100_launch_bound")
GPU_HINTS = typing.get_type_hints(GpuJson)
HOST_HINTS = typing.get_type_hints(HostJson)


@st.composite
def reports(draw: st.DrawFn) -> Any:
    """A real report with its GPUs' and host's keys given values of their own types, dropped, or any JSON; or any
    JSON where the report, its GPUs or its host should be."""
    report = dict(BASE)
    report["gpus"] = draw(st.lists(records(BASE["gpus"][0], GPU_HINTS) | JSON, max_size=3))
    report["host"] = draw(records(BASE["host"], HOST_HINTS) | JSON)
    for key in draw(st.lists(st.sampled_from(["time", "nvml", "mps", "ranks"]), max_size=2, unique=True)):
        report[key] = draw(JSON)
    return report if draw(st.integers(0, 5)) else draw(JSON)


@FUZZ
@given(data=reports())
def test_a_report_as_it_comes_is_shown_or_said_never_a_crash(data: Any) -> None:
    report = read_report(data)  # a mirrored sample's JSON; a stream passes on an object only
    news = box_gpus(HostNews("node1", gpus=data)) if isinstance(data, dict) else BoxGpus("node1", None, report)
    if isinstance(report, str):
        assert news.gpus is None and news.problem is not None and report in news.problem and "\n" not in report
        return
    assert news == BoxGpus("node1", report)
    out = Text()
    remote_lines(out, report, "r1", now=1e9)
    assert strip_text("CPU 3%", {"node1": report}, 80).startswith("CPU 3%")  # type: ignore[union-attr]
    box_panel("node1", news, RECORD, "r1", live=True)  # type: ignore[arg-type]
