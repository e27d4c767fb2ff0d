"""Slurm figures (issue 15), on a real one-node Slurm cluster started here as the tests start it
(tests/slurm_cluster.py: munged, slurmctld, slurmd; needs root).

1. `tuitrain submit demo` (writes the run directory and the sbatch script, submits it), beside `sbatch` of a
   one-line job alone (the baseline in the same run): target submit < 1 s plus sbatch's own time.
2. A job's state reaching `tuitrain runs`: one loop asks `squeue` for the job, then `tuitrain runs --json`, over
   and over; for each state the job passes through (PENDING, RUNNING), the time from squeue first showing it to
   `tuitrain runs` first showing it. Target < 2 s. (The loop's own period, one squeue plus one `tuitrain runs`,
   bounds the resolution; it is printed.)

    .venv/bin/python benchmarks/slurm_figures.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import BIN, bench_env, machine_line
from slurm_cluster import ensure_slurm, make_cluster

FAST = ["--set", "training.max_steps=4", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    return time.perf_counter() - start, done


def job_state(job: str, env: dict[str, str]) -> str:
    done = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=env, capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def runs_state(run_id: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([str(BIN / "tuitrain"), "runs", "--json"], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=30)
    for summary in json.loads(done.stdout or "[]"):
        if summary.get("id") == run_id:
            return str((summary.get("slurm_state") or {}).get("label") or "")
    return ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    why = ensure_slurm()
    if why:
        print(why)
        return 2
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="tuitrain-slurm-bench-") as tmp:
        folder = Path(tmp)
        (folder / "cluster").mkdir()
        cluster = make_cluster(folder / "cluster")
        try:
            env = bench_env(**cluster.env(), TUITRAIN_RUNS_DIR=str(folder / "runs"))
            submits, sbatches, lags, periods = [], [], {"PENDING": [], "RUNNING": []}, []
            for _ in range(args.rounds):
                took, done = timed(["sbatch", "--parsable", "-p", "debug", "--wrap", "true"], env, folder)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr)
                sbatches.append(took)
                cluster.wait_idle()
                took, done = timed([str(BIN / "tuitrain"), "submit", "demo", *FAST], env, folder)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr)
                submits.append(took)
                run_id = done.stdout.strip()
                job = str(json.loads((folder / "runs" / run_id / "run.json").read_text())["slurm"]["job_id"])
                first_slurm: dict[str, float] = {}
                first_runs: dict[str, float] = {}
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    began = time.perf_counter()
                    state = job_state(job, env)
                    if state and state not in first_slurm:
                        first_slurm[state] = time.perf_counter()
                    shown = runs_state(run_id, env, folder)
                    for name in lags:
                        if shown.startswith(name) and name not in first_runs:
                            first_runs[name] = time.perf_counter()
                    periods.append(time.perf_counter() - began)
                    if not state and shown and not shown.startswith(("PENDING", "RUNNING")):
                        break
                for name, seen in first_runs.items():
                    if name in first_slurm:
                        lags[name].append(max(0.0, seen - first_slurm[name]))
                cluster.wait_idle()
        finally:
            cluster.close()
    print(f"sbatch of a one-line job alone: median {statistics.median(sbatches) * 1000:.0f} ms")
    print(f"tuitrain submit demo: median {statistics.median(submits) * 1000:.0f} ms, max {max(submits) * 1000:.0f} ms "
          f"(target < 1 s + sbatch's own: {'met' if statistics.median(submits) < 1 + statistics.median(sbatches) else 'NOT met'})")
    print(f"poll loop period (one squeue + one tuitrain runs): median {statistics.median(periods) * 1000:.0f} ms")
    for name, values in lags.items():
        if values:
            print(f"{name}: squeue → tuitrain runs median {statistics.median(values) * 1000:.0f} ms, "
                  f"max {max(values) * 1000:.0f} ms over {len(values)} jobs (target < 2 s)")
        else:
            print(f"{name}: not seen by both (too short to catch)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
