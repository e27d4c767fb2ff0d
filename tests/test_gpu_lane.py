"""The GPU lane: what a GPU user's first day does, on a real CUDA GPU with its real driver.

Every test here is marked `gpu` and runs wherever torch sees a CUDA GPU; elsewhere (CI, these CPU
machines) they skip with one line (tests/gpu_plugin.py). The demo profile pins the CPU, so the
other end-to-end tests never touch a GPU: these are the ones that must. Figures taken on a GPU
machine go in docs/benchmarks.md ("The GPU lane").
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import subprocess
from pathlib import Path

import pytest

from conftest import FAST, check_clean, cli, losses, record, wait_for, wait_until_ended
from machine_profiles import free_port
from tuitrain.hardware.devices import discover, no_identity

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
CUDA = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[0]"]
MiB = 2**20


def finished(runs_dir: Path, *args: str) -> Path:
    done = cli("run", "demo", *CUDA, *FAST, *args, runs_dir=runs_dir, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = [p for p in runs_dir.iterdir() if p.is_dir()]
    rec = record(run_dir)
    assert rec["status"] == "finished" and rec["accelerator"] == "cuda", rec
    assert all(math.isfinite(loss) for loss in losses(run_dir).values()) and max(losses(run_dir)) == 8
    return run_dir


def test_the_demo_trains_on_the_gpu(runs_dir):
    run_dir = finished(runs_dir)
    assert record(run_dir)["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    listing = json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    assert listing and all(c["complete"] for c in listing)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_trains_and_plan_says_it(runs_dir, precision):
    run_dir = finished(runs_dir, "--set", f"hardware.mixed_precision={precision}")
    assert f"mixed_precision: {precision}" in (run_dir / "accelerate.yaml").read_text()


def test_resume_on_the_gpu_continues_the_steps(runs_dir):
    parent = finished(runs_dir)
    resumed = cli("resume", parent.name, "--set", "training.max_steps=12", runs_dir=runs_dir, timeout=900)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    child = next(p for p in runs_dir.iterdir() if p.is_dir() and p != parent)
    assert record(child)["resume_from"].endswith("checkpoint-8") and record(child)["accelerator"] == "cuda"
    assert sorted(losses(child)) == [9, 10, 11, 12]


def test_fsdp_with_one_process_trains(runs_dir):
    finished(runs_dir, "--set", "distributed.strategy=fsdp", "--set", "distributed.num_processes=1")


def nvidia_smi() -> list[dict[str, float]]:
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.used,memory.total,utilization.gpu",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True, timeout=60).stdout
    keys = ("index", "used", "total", "util")
    return [dict(zip(keys, map(float, line.split(",")), strict=True)) for line in out.strip().splitlines()]


def test_nvml_reads_what_nvidia_smi_reads():
    smi = nvidia_smi()
    gpus = discover(None, no_identity).gpus
    assert len(gpus) == len(smi)
    for gpu, theirs in zip(gpus, smi, strict=True):
        assert gpu.index == theirs["index"]
        assert abs(gpu.memory_total / MiB - theirs["total"]) <= 1
        # both are a moment apart on a GPU others may use: a small allowance, far below the 480 MiB reserve
        assert abs(gpu.memory_used / MiB - theirs["used"]) <= max(64, 0.02 * theirs["total"]), (gpu, theirs)
        assert abs(gpu.utilization - theirs["util"]) <= 50


def test_the_ranks_process_is_named_with_its_run_and_rank(runs_dir):
    started = cli("run", "demo", "--detach", *CUDA, "--set", "training.max_steps=100000", "--set", "training.logging_steps=1",
                  "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no", runs_dir=runs_dir)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    try:
        wait_for(lambda: losses(runs_dir / run_id), 300, "a logged step on the GPU")
        def named() -> str | None:
            out = cli("gpus", runs_dir=runs_dir).stdout
            return out if f"rank 0 of run {run_id}" in out else None

        wait_for(named, 120, "the rank's process on the GPU, with its run and rank")
        data = json.loads(cli("gpus", "--json", runs_dir=runs_dir).stdout)
        procs = [p for g in data["gpus"] for p in g["processes"] if p["owner"]]
        assert procs and procs[0]["used_memory"] > 0
    finally:
        cli("stop", run_id, "--now", runs_dir=runs_dir)
        wait_until_ended(runs_dir / run_id)


def test_the_app_shows_the_real_gpu(tmp_path):
    """Home's strip names GPU 0 with figures, and (issue 38) its recent utilisation and memory follow as sparklines,
    from the app's history of the real driver's samples."""
    from tuitrain.tui.app import TuitrainApp
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip

    app = TuitrainApp(tmp_path / "runs")

    async def main() -> tuple[str, str, int]:
        async with app.run_test(size=(160, 40)) as pilot:
            for _ in range(600):
                await pilot.pause(0.1)
                # the host's CPU figure needs two samples (N/A on the first, as the sampler's tests say)
                line = str(app.hardware_line or "")
                points = len(app.gpu_history.trace("local", 0).utilization)
                if "GPU0" in line and "N/A" not in line and points >= 2:
                    await pilot.pause(0.3)
                    return line, app.screen.query_one(HardwareStrip).render().plain, points
        return str(app.hardware_line), "", 0

    line, strip, points = asyncio.run(main())
    assert "GPU0" in line and "N/A" not in line, line
    assert points >= 2 and " util " in strip and " mem " in strip, strip


@pytest.mark.parametrize(("sets", "key"), [
    (["hardware.gpus=[0]", "distributed.strategy=ddp", "distributed.num_processes=2"], "distributed.num_processes"),
    (["hardware.gpus=[99]"], "hardware.gpus"),
    (["hardware.gpus=[0, 0]"], "hardware.gpus"),
    (["hardware.accelerator=mps"], "hardware.accelerator"),
], ids=["two-processes-one-gpu", "absent-gpu", "gpu-twice", "mps"])
def test_impossible_choices_are_refused_in_one_line(runs_dir, sets, key):
    args = [arg for s in sets for arg in ("--set", s)]
    done = cli("run", "demo", "--detach", "--set", "hardware.accelerator=cuda", *args, runs_dir=runs_dir)
    for started in [p for p in runs_dir.iterdir() if p.is_dir()]:  # a wrong start must not outlive the test
        cli("stop", started.name, "--now", runs_dir=runs_dir)
    check_clean(done, key)
    assert not [p for p in runs_dir.iterdir() if p.is_dir()], "refused, yet a run directory was made"


# One GPU holds one NCCL rank (two are refused above), so the hang is made with one rank: the GPU stalls before its
# second all_reduce, which then never completes; NCCL's watchdog times it out after 10 s, the flight recorder that
# tuitrain turns on for CUDA runs (tuitrain.launch.flight_recorder) dumps into logs/, and the process is ended.
NCCL_STALL = """
import datetime
import sys

import torch
import torch.distributed as dist

torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=10))
x = torch.ones(1024, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
print("first all_reduce done", flush=True)
torch.cuda._sleep(2**40)  # minutes of a busy GPU: the next all_reduce cannot complete
dist.all_reduce(x)
torch.cuda.synchronize()
print("not reached", flush=True)
"""


def test_an_nccl_collective_that_never_completes_is_dumped_and_named(tmp_path, runs_dir):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "stall.py").write_text(NCCL_STALL)
    (folder / "stall.toml").write_text(
        f'[script]\npath = "stall.py"\nargs = ["{free_port()}"]\n\n[hardware]\naccelerator = "cuda"\ngpus = [0]\n\n'
        '[distributed]\nstrategy = "single"\nnum_processes = 1\n')
    started = cli("run", str(folder / "stall.toml"), "--detach", runs_dir=runs_dir)
    assert started.returncode == 0, started.stdout + started.stderr
    run_dir = runs_dir / started.stdout.strip()
    try:
        rec = wait_until_ended(run_dir, 300)
    finally:
        cli("stop", run_dir.name, "--now", runs_dir=runs_dir)
    rank_log = (run_dir / "logs" / "rank-0.log").read_text(errors="replace")
    assert rec["status"] == "failed" and "first all_reduce done" in rank_log, (rec, rank_log[-3000:])
    assert (run_dir / "logs" / "nccl-trace-rank-0").is_file(), (rec, sorted(p.name for p in (run_dir / "logs").iterdir()),
                                                               rank_log[-3000:])
    shown = cli("stacks", run_dir.name, runs_dir=runs_dir)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"NCCL flight recorder, rank 0: last collective all_?reduce #\d+, (scheduled|started)",
                     shown.stdout), shown.stdout
    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "NCCL flight recorder, rank 0: last collective" in status, status
    assert "NCCL's watchdog timed out all_reduce #2 after 10 s" in rec["error"], rec["error"]
    print(shown.stdout, status, rec["error"], sep="\n")  # what the GPU machine said, for docs/benchmarks.md
