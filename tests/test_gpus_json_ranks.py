"""`tuitrain gpus --json` during a run (issue 28, item 5): the live ranks (each with its GPUs, CPU% and RSS)
and the host's CPU% are filled, as the text view fills them: both come from one look of the sampler (two
samples 0.1 s apart while a rank lives: a CPU percentage is the difference of two).

The GPUs are a recorded NVML table (the one stand-in allowed) listing a real process this test starts,
named by a run record as the run's rank 3, as a rank is named while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tuitrain.cli import main
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
RUN_ID = "20261124-193012-demo"
GiB = 2**30


@pytest.fixture
def rank_on_gpu_2(tmp_path, monkeypatch):
    """A real process, rank 3 of a running run, using 31 GiB of GPU 2 of an 8× H100 box."""
    rank = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"])
    try:
        table = json.loads((FIXTURES / "eight_h100.json").read_text())
        table["devices"][2]["compute_processes"] = [{"pid": rank.pid, "used_memory": 31 * GiB}]
        path = tmp_path / "table.json"
        path.write_text(json.dumps(table))
        monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(path))
        paths = RunPaths(tmp_path / "runs" / RUN_ID)
        paths.root.mkdir(parents=True)
        write_record(paths, new_record(RUN_ID, "demo", status="running", pids={"ranks": {"3": rank.pid}}))
        yield rank, tmp_path / "runs"
    finally:
        rank.kill()
        rank.wait()


def test_json_names_the_runs_ranks_with_cpu_and_the_hosts_cpu(rank_on_gpu_2, capsys):
    rank, runs = rank_on_gpu_2
    assert main(["gpus", "--json", "--runs-dir", str(runs)]) == 0
    data = json.loads(capsys.readouterr().out)
    (usage,) = data["ranks"]
    assert usage["owner"] == {"run_id": RUN_ID, "rank": 3, "role": "rank", "profile": "demo"}
    assert usage["pid"] == rank.pid and usage["gpus"] == [[2, 31 * GiB]]
    assert isinstance(usage["cpu_percent"], (int, float)) and usage["cpu_percent"] >= 0
    assert isinstance(usage["rss"], int) and usage["rss"] > 0
    assert usage["describe"] == f"rank 3 of run {RUN_ID} on GPU 2, 31 GiB"
    assert isinstance(data["host"]["cpu_percent"], (int, float)) and 0 <= data["host"]["cpu_percent"] <= 100
    # the process row still names its owner
    assert data["gpus"][2]["processes"][0]["owner"]["rank"] == 3


def test_text_and_json_say_the_same_ranks(rank_on_gpu_2, capsys):
    _rank, runs = rank_on_gpu_2
    assert main(["gpus", "--runs-dir", str(runs)]) == 0
    text = capsys.readouterr().out
    assert main(["gpus", "--json", "--runs-dir", str(runs)]) == 0
    data = json.loads(capsys.readouterr().out)
    (line,) = [row for row in text.splitlines() if row.startswith("rank 3 of run")]
    assert line.startswith(data["ranks"][0]["describe"] + "; CPU ") and "N/A" not in line
    host = next(row for row in text.splitlines() if row.startswith("host: "))
    assert "% busy" in host


def test_no_run_one_quick_look(tmp_path, monkeypatch, capsys):
    """No run's rank to measure: one look, no waiting for a second (the host's CPU% needs two: null)."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / "eight_h100.json"))
    assert main(["gpus", "--json", "--runs-dir", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ranks"] == [] and data["host"]["cpu_percent"] is None
    assert all(p["owner"] is None for gpu in data["gpus"] for p in gpu["processes"])
