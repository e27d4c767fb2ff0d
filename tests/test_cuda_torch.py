"""Issue 35, item 2: "cuda" means the GPU. A CUDA run with a torch that has no CUDA is refused by validate and plan in
one line naming the torch installed and the `pip install` of its CUDA build, and its rank fails at its start with the
same line rather than train on the CPU; `auto` says which it chose and why. The torch here is the CPU build the
README's CPU install gives; the machine's GPUs are a recorded table's, taken as this machine's own where a test says
so (`real_gpus`), as a box with that driver would report them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import FAST, cli, record, wait_for, wait_until_ended
from queue_tables import gpu_two
from tuitrain.backends.local import LocalBackend
from tuitrain.hardware.devices import discover, no_identity
from tuitrain.hardware.probe import Hardware, detect_hardware, hardware_from
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.installed import distribution_version
from tuitrain.profile import load_profile, resolve_profile_path
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import update_record
from tuitrain.torch_build import (
    RECORDED_GPUS_ENV,
    TorchBuild,
    cuda_build_for,
    parse_version_file,
    pip_args,
    read_torch_build,
)

TABLE = Path(__file__).parent / "fixtures" / "nvml" / "h100_launch_bound.json"  # driver 580.95.05
CPU_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
"""


def box(real: bool) -> Hardware:
    """The recorded H100 box; `real`: as this machine's own driver would report it (not a table's)."""
    found = hardware_from(discover(RecordedNvml(load_table(TABLE)), no_identity), user="me")
    return dataclasses.replace(found, real_gpus=real)


def planned(hardware: Hardware, tmp_path: Path, *overrides: str):
    """What `validate` and `plan` ask (the local backend's plan: both print its problems)."""
    profile = load_profile(resolve_profile_path("demo"), list(overrides))
    return LocalBackend(hardware).plan(profile, tmp_path / "runs", cwd=tmp_path)


def test_the_installed_torch_is_read_from_its_version_file_without_importing_it():
    assert parse_version_file(CPU_VERSION_PY) == TorchBuild("2.13.0+cpu", None, None)
    cuda = parse_version_file(CPU_VERSION_PY.replace("'2.13.0+cpu'", "'2.13.0+cu130'").replace(
        "cuda: Optional[str] = None", "cuda: Optional[str] = '13.0'"))
    assert cuda is not None and cuda.uses_gpu and cuda.words() == "torch 2.13.0+cu130, built for CUDA 13.0"
    rocm = parse_version_file(CPU_VERSION_PY.replace("hip: Optional[str] = None", "hip: Optional[str] = '6.4.1'"))
    assert rocm is not None and rocm.uses_gpu  # torch.cuda runs on ROCm too
    assert parse_version_file("x = 1") is None
    here = read_torch_build()
    assert here is not None and here.version == distribution_version("torch")


def test_the_cuda_build_follows_the_driver_and_the_cpu_build_goes_where_there_is_none():
    assert [cuda_build_for(d) for d in ("580.95.05", "570.172.08", "525.60.13", "470.256.02", None)] == \
        ["cu130", "cu126", "cu126", None, "cu126"]
    args, why = pip_args(gpu=True, driver="580.95.05")
    if args[0] == "torch==2.13.0":  # not Linux x86_64: the platform's own wheel
        return
    assert args == ["torch==2.13.0+cu130", "--extra-index-url", "https://download.pytorch.org/whl/cu130"], why
    assert pip_args(gpu=False, driver=None)[0] == ["torch==2.13.0+cpu", "--extra-index-url",
                                                   "https://download.pytorch.org/whl/cpu"]
    old, why = pip_args(gpu=True, driver="470.256.02")
    assert old[0] == "torch==2.13.0+cpu" and "older than" in why


def test_validate_and_plan_refuse_a_cuda_run_on_a_cpu_torch_in_one_line(tmp_path):
    build = read_torch_build()
    assert build is not None and not build.uses_gpu, "these tests need torch's CPU build (the README's CPU install)"
    preview = planned(box(real=True), tmp_path, "hardware.accelerator=cuda", "hardware.gpus=[0]")
    (refusal,) = preview.errors
    said = str(refusal)
    assert refusal.key == "hardware.accelerator" and "\n" not in said
    assert f"has torch {build.version}, a CPU-only build: its ranks would train on the CPU" in said, said
    assert (f"-m pip install 'torch=={build.public}+cu130' --extra-index-url https://download.pytorch.org/whl/cu130"
            in said), said  # the CUDA build the H100's driver 580 runs
    # GPUs chosen with accelerator "auto": CUDA all the same, refused naming the key that chose it
    (chosen,) = planned(box(real=True), tmp_path, "hardware.accelerator=auto", "hardware.gpus=[0]").errors
    assert chosen.key == "hardware.gpus" and "a CPU-only build" in chosen.message, chosen


def test_auto_on_a_gpu_machine_with_a_cpu_torch_trains_on_the_cpu_and_says_why(tmp_path):
    preview = planned(box(real=True), tmp_path, "hardware.accelerator=auto")
    assert preview.errors == [] and preview.plan.accelerator == "cpu"
    (warning,) = [p for p in preview.problems if p.severity == "warning" and p.key == "hardware.accelerator"]
    assert warning.message.startswith('"auto" trains on the CPU: this machine has NVIDIA GPUs, but ') and \
        "-m pip install 'torch==" in warning.fix, warning
    why = preview.plan.record_fields()["accelerator_why"]
    assert why.startswith("accelerator auto → cpu: 1 NVIDIA GPU(s) found, but torch ") and "CPU-only" in why
    hidden = planned(box(real=True), tmp_path, "hardware.accelerator=auto", "hardware.gpus=[]")
    assert hidden.problems == [] and hidden.plan.accelerator == "cpu"  # GPUs hidden on purpose: nothing to say


def test_gpus_of_a_recorded_table_plan_a_rehearsal_on_the_cpu_and_the_plan_says_so(tmp_path):
    preview = planned(detect_hardware(RecordedNvml(load_table(TABLE))), tmp_path, "hardware.accelerator=cuda",
                      "hardware.gpus=[0]", "hardware.min_free_memory=\"10GiB\"")
    assert preview.errors == [] and preview.plan.env[RECORDED_GPUS_ENV] == "1"
    assert RECORDED_GPUS_ENV not in planned(box(real=True), tmp_path, "hardware.accelerator=cpu").plan.env


@pytest.mark.slow
def test_a_rank_that_finds_no_gpu_fails_at_its_start_naming_the_torch_and_trains_nothing(runs_dir, tmp_path,
                                                                                          monkeypatch):
    """The rank checks its own device. A run planned where its GPUs were this machine's own (made so here by taking the
    recorded-GPUs word out of its queued record's environment, and the table out of its ranks': as if planned on the
    box, before torch was swapped for its CPU build) fails at its start in validate's line, instead of training
    "cuda" on the CPU."""
    table = tmp_path / "nvml.json"
    gpu_two(table, taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    done = cli("run", "demo", "--queue", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]", *FAST,
               runs_dir=runs_dir)
    assert done.returncode == 0, done.stderr
    run_dir = runs_dir / done.stdout.strip()
    wait_for(lambda: (record(run_dir).get("pids") or {}).get("supervisor"), 60, "the queued run's supervisor")
    env = dict(record(run_dir)["env"])
    assert env.pop(RECORDED_GPUS_ENV) == "1"
    env["TUITRAIN_NVML_TABLE"] = ""  # and its ranks, launched with this environment, see no table either
    update_record(RunPaths(run_dir), env=env)
    gpu_two(table, taken=False)
    rec = wait_until_ended(run_dir)
    build = read_torch_build()
    assert rec["status"] == "failed" and build is not None, rec
    assert rec["error"].startswith("hardware.accelerator asks for CUDA, but ") and \
        f"has torch {build.version}, a CPU-only build: its ranks would train on the CPU" in rec["error"], rec["error"]
    assert not (run_dir / "output").exists() or not any((run_dir / "output").glob("checkpoint-*"))
    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "a CPU-only build" in status and "device     cuda   (asked for)" in status, status
