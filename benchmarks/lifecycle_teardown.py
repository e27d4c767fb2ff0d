"""How fast a run ends, everywhere, when one of its processes dies (issue 10's figures).

For each round: start the demo with 2 ranks (detached), wait for training, SIGKILL one process,
and time until (a) every recorded process of the run is gone and (b) run.json holds a final
status with its cause. Two kinds of death:

  rank:        a rank killed (rank 0 and rank 1 alternately): target p95 < 3 s over 20 kills
  supervisor:  the supervisor killed; "ended" is when a viewer (`tuitrain status`) records the run
               lost, polled every 0.2 s: target < 10 s

The baseline in the same run is the supervisor's own poll period (0.2 s) and the ranks' watchdog
period (1 s): the floor under each figure.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/lifecycle_teardown.py [--kills 20] [--supervisor-kills 5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, bench_env, machine_line

FINAL = {"finished", "stopped", "killed", "failed", "lost"}
LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no", "--set", "distributed.strategy=ddp", "--set", "distributed.num_processes=2"]


def tuitrain(runs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuitrain", *args], capture_output=True, text=True, cwd=ROOT,
                          env=bench_env(TUITRAIN_RUNS_DIR=str(runs)), timeout=300)


def record(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def logged_steps(run_dir: Path) -> int:
    try:
        lines = (run_dir / "events.jsonl").read_text().splitlines()
    except FileNotFoundError:
        return 0
    return sum(1 for line in lines if '"event": "log"' in line)


def alive(entry: dict) -> bool:
    try:
        proc = psutil.Process(entry["pid"])
        return abs(proc.create_time() - entry["started"]) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def one_round(runs: Path, victim: str, viewer: bool) -> tuple[float, float, str]:
    started = tuitrain(runs, "run", "demo", "--detach", *LONG)
    if started.returncode != 0:
        raise RuntimeError(f"tuitrain run failed: {started.stderr.strip()[-500:]}")
    run_dir = runs / started.stdout.strip()
    deadline = time.monotonic() + 180
    while logged_steps(run_dir) < 2:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run_dir.name} did not train")
        time.sleep(0.1)
    processes = record(run_dir)["processes"]
    os.kill(processes[victim]["pid"], signal.SIGKILL)
    killed = time.monotonic()
    gone_at = ended_at = None
    while gone_at is None or ended_at is None:
        now = time.monotonic()
        if now - killed > 60:
            raise RuntimeError(f"{run_dir.name}: not ended 60 s after killing the {victim}")
        if gone_at is None and not any(alive(e) for e in processes.values() if e):
            gone_at = now
        if ended_at is None:
            if viewer:
                tuitrain(runs, "status", run_dir.name)
            if record(run_dir)["status"] in FINAL:
                ended_at = time.monotonic()
        time.sleep(0.05 if not viewer else 0.2)
    rec = record(run_dir)
    return gone_at - killed, ended_at - killed, f"{rec['status']}: {rec.get('error')}"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--supervisor-kills", type=int, default=5)
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        rank_rows = []
        for i in range(args.kills):
            victim = f"rank {i % 2}"
            gone, ended, why = one_round(runs, victim, viewer=False)
            rank_rows.append((victim, gone, ended, why))
            print(f"kill {victim}: all gone {gone:.2f} s, failed with cause {ended:.2f} s  ({why[:90]})", flush=True)
        supervisor_rows = []
        for _ in range(args.supervisor_kills):
            gone, ended, why = one_round(runs, "supervisor", viewer=True)
            supervisor_rows.append((gone, ended, why))
            print(f"kill supervisor: all gone {gone:.2f} s, recorded lost {ended:.2f} s  ({why[:90]})", flush=True)
    done = [max(g, e) for _, g, e, _ in rank_rows]
    print(f"\nrank killed ({len(done)}): to every process gone and the run failed with its cause: "
          f"median {statistics.median(done):.2f} s, p95 {p95(done):.2f} s, max {max(done):.2f} s (target p95 < 3 s)")
    causes = sum(1 for victim, _, _, why in rank_rows if victim in why and "SIGKILL" in why)
    print(f"  cause names the killed rank and SIGKILL: {causes}/{len(rank_rows)}")
    if supervisor_rows:
        worst = [max(g, e) for g, e, _ in supervisor_rows]
        print(f"supervisor killed ({len(worst)}): to every process gone and the run recorded lost: "
              f"median {statistics.median(worst):.2f} s, max {max(worst):.2f} s (target < 10 s)")
    print("floors: supervisor poll 0.2 s, rank watchdog 1.0 s, teardown after a rank's death 1.0 s + 1.5 s grace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
