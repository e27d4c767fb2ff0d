"""What tuitrain's own processes cost while a run trains (issue 16): CPU time of the supervisor and of
`accelerate launch` over a window of training, beside the ranks' own CPU time in the same window (the
baseline: what the run is for). Target: supervisor + launcher < 0.3 % of a core.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/supervisor_cpu.py [--seconds 30] [--ranks 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, bench_env, machine_line

LONG = ["--set", "training.max_steps=100000", "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no",
        "--set", "training.logging_steps=10"]


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--ranks", type=int, default=1)
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="tuitrain-bench-", ignore_cleanup_errors=True) as tmp:  # a run may still write
        runs = Path(tmp) / "runs"
        env = bench_env(TUITRAIN_RUNS_DIR=str(runs))
        extra = ["--set", "distributed.strategy=ddp", "--set", f"distributed.num_processes={args.ranks}"] \
            if args.ranks > 1 else []
        started = subprocess.run([sys.executable, "-m", "tuitrain", "run", "demo", "--detach", *LONG, *extra],
                                 env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
        if started.returncode != 0:
            raise RuntimeError(started.stderr[-1000:])
        run = runs / started.stdout.strip()
        try:
            deadline = time.monotonic() + 180
            while '"event": "log"' not in ((run / "events.jsonl").read_text() if (run / "events.jsonl").exists()
                                           else ""):
                if time.monotonic() > deadline:
                    raise RuntimeError("the run did not train")
                time.sleep(0.5)
            processes = json.loads((run / "run.json").read_text())["processes"]
            supervisor = [psutil.Process(processes["supervisor"]["pid"])]
            launcher = [psutil.Process(processes["launcher"]["pid"])]
            ranks = [psutil.Process(v["pid"]) for k, v in processes.items() if k.startswith("rank ")]
            before = [cpu_seconds(group) for group in (supervisor, launcher, ranks)]
            t0 = time.monotonic()
            time.sleep(args.seconds)
            after = [cpu_seconds(group) for group in (supervisor, launcher, ranks)]
            window = time.monotonic() - t0
        finally:
            subprocess.run([sys.executable, "-m", "tuitrain", "stop", "--now", run.name], env=env,
                           capture_output=True, cwd=ROOT, timeout=60)
    sup, lau, rk = (100 * (a - b) / window for a, b in zip(after, before, strict=True))
    print(f"\n{args.ranks} rank(s), {window:.0f} s of training: supervisor {sup:.3f}% of a core, "
          f"accelerate launch {lau:.3f}%, together {sup + lau:.3f}% (target < 0.3%); the ranks {rk:.1f}% "
          f"(baseline): tuitrain's share {100 * (sup + lau) / max(rk, 1e-9):.3f}% of the run's CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
