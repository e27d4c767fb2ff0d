"""How long `tuitrain stacks` takes to the digest of a hung run (issue 26), on 2 and on 8 ranks.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/stacks_time.py [--ranks 2 8] [--rounds 5]

Each run is a script of the user's (gloo on the CPU, torch.distributed and `tuitrain.report`, no Trainer): every rank
all-reduces once a step; at step 5 rank 1 sleeps for ever and the others wait in the next all-reduce. Once every
rank has reported step 5, `tuitrain stacks RUN` runs `--rounds` times, each timed from its start to its exit
(the digest is its last output): the CLI's start, every rank asked at once (py-spy when installed, else each rank's
faulthandler on SIGUSR2), their files settled, parsed and digested. Also `runs.view.stacks.gather` alone, in this process.
`[run] hang_after` is set high, so the supervisor's own take on the hang does not run meanwhile.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import QuietGate, Table, bench_env, machine_line, median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCRIPT = """
import os
import time

import torch
import torch.distributed as dist

import tuitrain

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(4)
for step in range(1, 100000):
    dist.all_reduce(t)
    tuitrain.report(step, loss=1.0 / step)
    if step == 5 and rank == 1:
        time.sleep(3600)  # the hang
    time.sleep(0.05)
"""
READY_SECONDS = 600.0


def start_run(work: Path, runs: Path, ranks: int) -> Path:
    (work / "train.py").write_text(SCRIPT)
    (work / "train.toml").write_text(
        '[script]\npath = "train.py"\n\n[hardware]\naccelerator = "cpu"\n\n'
        f'[distributed]\nstrategy = "ddp"\nnum_processes = {ranks}\n\n[run]\nhang_after = 86400\n')
    started = subprocess.run([sys.executable, "-m", "tuitrain", "run", str(work / "train.toml"), "--detach",
                              "--runs-dir", str(runs)], cwd=work, env=bench_env(), capture_output=True, text=True)
    if started.returncode != 0:
        raise RuntimeError(started.stdout + started.stderr)
    return runs / started.stdout.strip()


def wait_hung(run_dir: Path, ranks: int) -> float:
    """Until every rank has reported step 5 (rank 1 then sleeps, the others wait for it); seconds it took."""
    from tuitrain.rundir.heartbeat import read_beats
    from tuitrain.rundir.layout import RunPaths

    start = time.perf_counter()
    while time.perf_counter() - start < READY_SECONDS:
        beats = read_beats(RunPaths(run_dir))
        if len(beats) == ranks and all((b.step or 0) >= 5 for b in beats.values()):
            time.sleep(1.0)  # the others enter the next all-reduce
            return time.perf_counter() - start
        status = json.loads((run_dir / "run.json").read_text()).get("status")
        if status not in ("starting", "running"):
            raise RuntimeError(f"{run_dir.name} is {status}: see {run_dir}/logs")
        time.sleep(0.2)
    raise RuntimeError(f"{run_dir.name}: not every rank at step 5 within {READY_SECONDS:.0f} s")


def stacks_once(run_dir: Path, runs: Path) -> tuple[float, list[str]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tuitrain", "stacks", run_dir.name, "--runs-dir", str(runs)],
                          env=bench_env(), capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    lines = done.stdout.splitlines()
    return took, [line.strip() for line in lines[lines.index("digest") + 1:]]


def gather_once(run_dir: Path) -> float:
    from tuitrain.backends import for_run
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.rundir.record import read_record
    from tuitrain.runs.view.stacks import gather

    paths = RunPaths(run_dir)
    start = time.perf_counter()
    record = read_record(paths)
    gather(paths, record, for_run(record).take_stacks)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(machine_line())
    print(f"py-spy: {shutil.which('py-spy') or 'not installed (faulthandler on SIGUSR2)'}")
    gate = QuietGate()
    table = Table(["ranks", "ready (s)", "tuitrain stacks median (s)", "min", "max", "gather() median (s)"])
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in args.ranks:
            work, runs = Path(tmp) / f"w{ranks}", Path(tmp) / f"runs{ranks}"
            work.mkdir()
            run_dir = start_run(work, runs, ranks)
            try:
                ready = wait_hung(run_dir, ranks)
                cli_times, digest = [], []
                for _ in range(args.rounds):
                    gate.wait()
                    took, digest = stacks_once(run_dir, runs)
                    cli_times.append(took)
                gathered = []
                for _ in range(args.rounds):
                    gate.wait()
                    gathered.append(gather_once(run_dir))
            finally:
                subprocess.run([sys.executable, "-m", "tuitrain", "stop", "--now", run_dir.name, "--runs-dir", str(runs)],
                               env=bench_env(), capture_output=True)
            print(f"{ranks} ranks, digest: " + " | ".join(digest))
            table.add([str(ranks), f"{ready:.1f}", f"{median(cli_times):.2f}", f"{min(cli_times):.2f}",
                       f"{max(cli_times):.2f}", f"{median(gathered):.2f}"])
            deadline = time.monotonic() + 120
            while json.loads((run_dir / "run.json").read_text()).get("status") not in ("killed", "failed", "stopped"):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
    print(table.render())
    print(gate.summary())


if __name__ == "__main__":
    main()
