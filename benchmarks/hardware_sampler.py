"""The cost of watching GPUs: one sample, the 1 Hz sampler, and `tuitrain gpus`.

    .venv/bin/python benchmarks/hardware_sampler.py [--seconds 20] [--samples 500] [--runs 5]

1. One sample of all 8 GPUs of the recorded 8x H100 table (tests/fixtures/nvml/eight_h100.json):
   `Sampler.sample()` (every NVML call through the gate, dataclasses, processes with psutil
   user/command lookups, the rings) vs a baseline: the bare loop over the same recorded table (the
   same pynvml calls, no gate, no records). Median of --samples. Target: < 5 ms.
   Each GPU lists one process: a real `sleep` that a run directory names as a rank, so the
   run/rank mapping and the per-rank CPU and RSS are part of every sample.
2. The sampler at 1 Hz for --seconds in a thread of this process: CPU time (resource.getrusage,
   user + system) over wall time, in % of one core. Target: < 1 %.
3. `tuitrain gpus` wall time, subprocess start to exit, median (and min) of --runs, on this
   driverless machine and with TUITRAIN_NVML_TABLE=eight_h100.json, vs `python -c pass` and
   `tuitrain --help`; also the child's CPU time (user + system, median), which other processes
   on the same cores barely move. Target: < 0.3 s.

No GPU or NVIDIA driver is needed: NVML answers from the recorded table (the one stand-in
tuitrain allows); everything else is real. Waits (bounded) for a quiet machine before each part.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, QuietGate, Table, bench_env, machine_line, median, wall
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.hardware.sampler import Sampler
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, write_record
from tuitrain.runs.view.owners import OwnerIndex

TABLE = ROOT / "tests" / "fixtures" / "nvml" / "eight_h100.json"
TARGET_SAMPLE_MS = 5.0
TARGET_CPU_PERCENT = 1.0
TARGET_GPUS_S = 0.3
DIRECT = ("import argparse, sys; from pathlib import Path; from tuitrain.cli.gpus import cmd_gpus; "
          "sys.exit(cmd_gpus(argparse.Namespace(json=False, watch=False, runs_root=Path(sys.argv[1]))))")


def bare_loop(lib: RecordedNvml) -> None:
    """The baseline: the same pynvml calls over the recorded table, no gate, nothing built."""
    for index in range(lib.nvmlDeviceGetCount()):
        handle = lib.nvmlDeviceGetHandleByIndex(index)
        lib.nvmlDeviceGetMemoryInfo(handle)
        lib.nvmlDeviceGetUtilizationRates(handle)
        lib.nvmlDeviceGetTemperature(handle, 0)
        lib.nvmlDeviceGetPowerUsage(handle)
        lib.nvmlDeviceGetComputeRunningProcesses(handle)
        lib.nvmlDeviceGetGraphicsRunningProcesses(handle)


def live_box(tmp: Path) -> tuple[dict, Path, list[subprocess.Popen[bytes]]]:
    """The 8-GPU table with one real process per GPU, each a rank of a running run."""
    table = load_table(TABLE)
    ranks = [subprocess.Popen(["sleep", "600"]) for _ in table["devices"]]
    for device, proc in zip(table["devices"], ranks, strict=True):
        device["compute_processes"] = [{"pid": proc.pid, "used_memory": 31 * 2**30}]
    runs = tmp / "runs"
    paths = RunPaths(runs / "bench-run")
    paths.root.mkdir(parents=True)
    write_record(paths, new_record(paths.id, "demo", status="running",
                                   pids={"ranks": {str(r): p.pid for r, p in enumerate(ranks)}}))
    return table, runs, ranks


def per_sample(table: dict, runs: Path, samples: int) -> tuple[float, float, float]:
    """(ours ms, baseline ms, one-shot discover ms), medians."""
    from tuitrain.hardware.devices import discover

    ours, bare, oneshot = [], [], []
    with Sampler(RecordedNvml(table), owners=OwnerIndex(runs).get, history=300) as sampler:
        sampler.sample()  # first look: psutil baselines, owners read
        for _ in range(samples):
            t0 = time.perf_counter()
            snapshot = sampler.sample()
            ours.append(time.perf_counter() - t0)
        assert len(snapshot.ranks) == 8 and snapshot.gpus[7].processes[0].owner is not None
    lib = RecordedNvml(table)
    lib.nvmlInit()
    for _ in range(samples):
        t0 = time.perf_counter()
        bare_loop(lib)
        bare.append(time.perf_counter() - t0)
    for _ in range(max(samples // 10, 5)):
        t0 = time.perf_counter()
        discover(RecordedNvml(table))
        oneshot.append(time.perf_counter() - t0)
    return median(ours) * 1e3, median(bare) * 1e3, median(oneshot) * 1e3


def sampler_cpu(table: dict, runs: Path, seconds: float) -> tuple[float, int, float]:
    """(% of one core, samples taken, wall seconds) for the sampler at 1 Hz in a thread."""
    stop = threading.Event()
    with Sampler(RecordedNvml(table), owners=OwnerIndex(runs).get, history=300) as sampler:
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.monotonic()
        worker = threading.Thread(target=sampler.run, args=(1.0, stop), daemon=True)
        worker.start()
        time.sleep(seconds)
        stop.set()
        worker.join()
        elapsed = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        taken = sampler.samples
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return 100.0 * cpu / elapsed, taken, elapsed


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s = user + system of the child) of one subprocess run, output discarded.
    The CPU figure hardly moves when other processes share the cores; the wall figure does."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def cli_walls(runs: int, gate: QuietGate) -> list[tuple[str, float, list[float], float]]:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("python -c pass", [py, "-c", "pass"], bench_env()),
            ("tuitrain --help", [py, "-m", "tuitrain", "--help"], bench_env()),
            ("tuitrain gpus (no driver)", [py, "-m", "tuitrain", "gpus", "--runs-dir", tmp], bench_env()),
            ("tuitrain gpus (8x H100 table)", [py, "-m", "tuitrain", "gpus", "--runs-dir", tmp],
             bench_env(TUITRAIN_NVML_TABLE=str(TABLE))),
            ("tuitrain gpus --json (8x H100 table)", [py, "-m", "tuitrain", "gpus", "--json", "--runs-dir", tmp],
             bench_env(TUITRAIN_NVML_TABLE=str(TABLE))),
            # the same command without tuitrain.cli's parser, which imports every other command's
            # module first (launching, viewing, controlling): what `gpus` costs once those are lazy
            ("cmd_gpus alone (8x H100 table)", [py, "-c", DIRECT, tmp], bench_env(TUITRAIN_NVML_TABLE=str(TABLE))),
            ("cmd_gpus alone (no driver)", [py, "-c", DIRECT, tmp], bench_env()),
        ]
        out = []
        for name, argv, env in cases:
            wall(argv, cwd=ROOT, env=env)  # warm the page cache and .pyc files
            gate.wait()
            runs_ = [measured(argv, env) for _ in range(runs)]
            times = [w for w, _ in runs_]
            out.append((name, median(times), times, median([c for _, c in runs_])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the 1 Hz sampler runs")
    parser.add_argument("--samples", type=int, default=500, help="timed samples for the per-sample figure")
    parser.add_argument("--runs", type=int, default=5, help="runs of each command for the wall figure")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args()

    print(machine_line())
    gate = QuietGate()
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        table, runs, ranks = live_box(Path(tmp))
        try:
            gate.wait()
            ours, bare, oneshot = per_sample(table, runs, args.samples)
            figures.update(sample_ms=ours, bare_ms=bare, discover_ms=oneshot)
            t = Table(["one sample, 8 GPUs (recorded 8x H100 table)", "median ms", "target"])
            t.add(["Sampler.sample(): gate, records, psutil, run/rank mapping, rings", f"{ours:.3f}",
                   f"< {TARGET_SAMPLE_MS:g} ms {'OK' if ours < TARGET_SAMPLE_MS else 'MISSED'}"])
            t.add(["baseline: bare pynvml-call loop over the table (no gate, nothing built)", f"{bare:.3f}", ""])
            t.add(["discover(): session open + static + dynamic read, one shot", f"{oneshot:.3f}", ""])
            print()
            print(t.render())

            gate.wait()
            percent, taken, elapsed = sampler_cpu(table, runs, args.seconds)
            figures.update(sampler_cpu_percent=percent, sampler_samples=taken, sampler_seconds=elapsed)
            print()
            print(f"sampler at 1 Hz for {elapsed:.1f} s ({taken} samples, 8 GPUs, 8 live ranks): "
                  f"{percent:.3f} % of one core (target < {TARGET_CPU_PERCENT:g} %: "
                  f"{'OK' if percent < TARGET_CPU_PERCENT else 'MISSED'})")
        finally:
            for proc in ranks:
                proc.kill()
                proc.wait()

    walls = cli_walls(args.runs, gate)
    t = Table(["command (subprocess, start to exit)", "median s", "min s", "CPU s", "runs (s)", "target"])
    for name, med, times, cpu in walls:
        target = ""
        if "gpus" in name:
            target = f"< {TARGET_GPUS_S:g} s {'OK' if med < TARGET_GPUS_S else 'MISSED'}"
        t.add([name, f"{med:.3f}", f"{min(times):.3f}", f"{cpu:.3f}", " ".join(f"{x:.3f}" for x in times), target])
        figures[f"wall: {name}"] = med
        figures[f"cpu: {name}"] = cpu
    print()
    print(t.render())
    print()
    print(gate.summary())
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
