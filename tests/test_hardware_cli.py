"""`tuitrain gpus [--json] [--watch]`: real subprocesses on this driverless machine, and the same
command answering from a recorded table through TUITRAIN_NVML_TABLE (the sanctioned injection)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from conftest import as_in_a_terminal
from tuitrain.cli import main
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"


def gpus(*args: str, table: str | None = None, runs: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TUITRAIN_NVML_TABLE"}
    if table:
        env["TUITRAIN_NVML_TABLE"] = str(FIXTURES / f"{table}.json")
    return subprocess.run([sys.executable, "-m", "tuitrain", "gpus", "--runs-dir", str(runs), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.no_nvidia_driver
def test_no_driver_is_a_normal_state(tmp_path):
    done = gpus(runs=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "no NVIDIA GPU (NVML: driver not found)"
    assert lines[1].startswith(f"host: {os.cpu_count()} CPU core(s)") and "GiB used" in lines[1]
    assert done.stderr == ""


@pytest.mark.no_nvidia_driver
def test_no_driver_json(tmp_path):
    done = gpus("--json", runs=tmp_path)
    data = json.loads(done.stdout)
    assert done.returncode == 0
    assert data["nvml"] == {"available": False, "reason": "driver not found", "driver_version": None,
                            "status": "no NVIDIA GPU (NVML: driver not found)"}
    assert data["gpus"] == [] and data["host"]["cpu_count"] == os.cpu_count() and data["mps"] is False


def test_recorded_box_through_the_env_var(tmp_path):
    done = gpus(table="four_gpu_mixed", runs=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("4 NVIDIA GPU(s), driver 550.54.15; listed in PCI bus order")
    rows = [line.split() for line in out.splitlines()[2:6]]
    assert [r[:3] for r in rows] == [["0", "cuda:0", "cuda:3"], ["1", "cuda:1", "cuda:1"],
                                     ["2", "cuda:2", "cuda:0"], ["3", "cuda:3", "cuda:2"]]
    assert "NVIDIA GeForce GTX 1080 Ti" in out and "00000000:01:00.0" in out and "6.1" in out
    assert "46.2 / 48.0 GiB" in out and "97%" in out and "81°C" in out and "296 / 300 W" in out
    assert "4100001" in out and "30.0 GiB" in out


def test_recorded_box_json_has_every_field(tmp_path):
    data = json.loads(gpus("--json", table="eight_h100", runs=tmp_path).stdout)
    assert len(data["gpus"]) == 8
    gpu = data["gpus"][5]
    assert gpu["index"] == 5 and gpu["pci_bus_id"] == "00000000:AB:00.0"
    assert gpu["cuda_index"] == {"PCI_BUS_ID": 5, "FASTEST_FIRST": 5}
    assert gpu["compute_capability"] == [9, 0] and gpu["memory_total"] == 81559 * 2**20
    assert gpu["power_draw"] == 615.0 and gpu["power_limit"] == 700.0 and gpu["temperature"] == 60
    assert gpu["processes"] == [{"pid": 4100105, "used_memory": 31 * 2**30, "kind": "compute", "user": None,
                                 "command": None, "owner": None, "sm_util": None, "peak_memory": None}]
    assert gpu["process_sm"] is None and gpu["accounting"] is None  # a table recorded before they were asked


def test_not_supported_fields_show_na(tmp_path):
    done = gpus(table="not_supported", runs=tmp_path)
    assert done.returncode == 0 and "NVIDIA GeForce GT 730" in done.stdout
    header, row = done.stdout.splitlines()[1:3]
    assert row[header.index("memory"):].split()[0] == "N/A" and "nan" not in done.stdout  # one rule: humanize.gpu_memory
    data = json.loads(gpus("--json", table="not_supported", runs=tmp_path).stdout)
    assert data["gpus"][0]["uuid"] is None and data["gpus"][0]["utilization"] is None


def test_in_process_with_a_run_owning_a_gpu_process(tmp_path, monkeypatch, capsys):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        table = json.loads((FIXTURES / "eight_h100.json").read_text())
        table["devices"][2]["compute_processes"] = [{"pid": sleeper.pid, "used_memory": 31 * 2**30}]
        path = tmp_path / "table.json"
        path.write_text(json.dumps(table))
        runs = tmp_path / "runs"
        paths = RunPaths(runs / "20240101-120000-demo")
        paths.root.mkdir(parents=True)
        write_record(paths, new_record(paths.id, "demo", status="running", pids={"ranks": {"3": sleeper.pid}}))
        monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(path))
        assert main(["gpus", "--runs-dir", str(runs)]) == 0
        out = capsys.readouterr().out
        (line,) = [row for row in out.splitlines() if str(sleeper.pid) in row]
        assert line.split()[:4] == ["2", str(sleeper.pid), psutil.Process().username(), "sleep"]
        assert line.endswith("rank 3 of run 20240101-120000-demo")
        assert main(["gpus", "--json", "--runs-dir", str(runs)]) == 0
        data = json.loads(capsys.readouterr().out)
        owner = data["gpus"][2]["processes"][0]["owner"]
        assert owner == {"run_id": "20240101-120000-demo", "rank": 3, "role": "rank", "profile": "demo",
                         "describe": "rank 3 of run 20240101-120000-demo"}
    finally:
        sleeper.kill()
        sleeper.wait()


def test_watch_refreshes_until_interrupted(tmp_path):
    env = {**os.environ, "TUITRAIN_NVML_TABLE": str(FIXTURES / "gpu_lost.json")}
    proc = subprocess.Popen([sys.executable, "-m", "tuitrain", "gpus", "--watch", "--json", "--runs-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=as_in_a_terminal)
    try:
        lines = [proc.stdout.readline() for _ in range(5)]  # one JSON line a second
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # generous: the suite runs beside CPU-heavy work
    assert proc.returncode == 0, err
    samples = [json.loads(line) for line in lines]
    assert [s["gpus"][1]["lost"] for s in samples] == [False, False, False, True, True]
    assert samples[3]["gpus"][1]["memory_used"] is None and samples[3]["gpus"][0]["memory_used"] == 20 * 2**30
    assert samples[0]["host"]["cpu_percent"] is None and samples[1]["host"]["cpu_percent"] is not None
    assert [s["time"] for s in samples] == sorted(s["time"] for s in samples)  # five distinct looks, in order
    assert len({s["time"] for s in samples}) == 5
    assert "Traceback" not in err


@pytest.mark.no_nvidia_driver
def test_watch_text_mode(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "tuitrain", "gpus", "--watch", "--runs-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal)
    try:
        first = [proc.stdout.readline() for _ in range(3)]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # generous: the suite runs beside CPU-heavy work
    assert proc.returncode == 0, err
    assert any("no NVIDIA GPU (NVML: driver not found)" in line for line in first)


def test_gpus_loads_none_of_the_ml_stack(tmp_path):
    """Its speed (< 0.3 s) is measured by benchmarks/hardware_sampler.py; what keeps it quick is here."""
    code = ("import sys, contextlib, io\nfrom tuitrain.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['gpus', '--runs-dir', sys.argv[1]])\n"
            "print(sorted({'torch', 'transformers', 'datasets', 'evaluate', 'accelerate', 'textual'} & "
            "{m.split('.')[0] for m in sys.modules}))\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_every_recorded_box_renders_as_text_and_json(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / f"{name}.json"))
    assert main(["gpus", "--runs-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert main(["gpus", "--json", "--runs-dir", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert text.splitlines()[0].startswith(data["nvml"]["status"])
    assert [g["index"] for g in data["gpus"]] == sorted(g["index"] for g in data["gpus"])
    for gpu in data["gpus"]:
        assert set(gpu["cuda_index"]) == {"PCI_BUS_ID", "FASTEST_FIRST"}
        assert gpu["name"] is None or gpu["name"] in text
    assert "host:" in text


@pytest.mark.parametrize("content", [None, "{", "[1, 2]"], ids=["missing", "not JSON", "not a table"])
def test_a_bad_recorded_table_is_one_line(tmp_path, content):
    table = tmp_path / "table.json"
    if content is not None:
        table.write_text(content)
    env = {**os.environ, "TUITRAIN_NVML_TABLE": str(table)}
    done = subprocess.run([sys.executable, "-m", "tuitrain", "gpus", "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and f"TUITRAIN_NVML_TABLE={table}:" in done.stderr, done.stderr
