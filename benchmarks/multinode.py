"""Multi-machine figures (issue 11), on real namespace hosts with their own sshd (tests/hosts.py: needs root).

1. launch → first logged step: `tuitrain run --detach --no-doctor` of the demo on 2 machines × 1 rank, against the
   same profile on this machine with 2 ranks (the baseline, in the same run, rounds alternated): target ratio ≤ 1.5.
2. a remote rank's log line reaching the home run directory: each machine's "rank" writes a timestamped line every
   millisecond (1,000 lines/s) into its node folder for DURATION s, through the real node agent, ssh and home
   supervisor; home reads its mirrored logs/rank-K.log every 10 ms. Baseline in the same run: the same reader on
   the node's own file (what a viewer on that machine would see). Target p95 < 1 s. (The hosts share this
   machine's clock, so a line's own time stamp gives its delay.)
3. `tuitrain doctor` on 2 machines: target < 3 s.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/multinode.py [--rounds 3] [--duration 10]
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
from _common import bench_env, machine_line
from hosts import cannot_make_hosts, ensure_tools, make_hosts
from machine_profiles import free_port, write_profile
from tuitrain.atomic import write_json_atomic
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record
from tuitrain.runs.start.new_run import spawn_supervisor

FAST = ["--set", "training.max_steps=4", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]
WRITER = """
import os, sys, time
rank, seconds = int(sys.argv[1]), float(sys.argv[2])
os.makedirs(os.path.join(os.environ["TUITRAIN_RUN_DIR"], "logs"), exist_ok=True)
path = os.path.join(os.environ["TUITRAIN_RUN_DIR"], "logs", f"rank-{rank}.log")
with open(path, "a", buffering=1) as log:
    start = time.time()
    n = 0
    while time.time() - start < seconds:
        n += 1
        due = start + n / 1000.0
        while time.time() < due:
            time.sleep(max(0.0, due - time.time()))
        log.write(f"{time.time():.6f} line {n} of a rank's log, as long as a Trainer progress line is\\n")
"""


def tuitrain(runs: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuitrain", *args], capture_output=True, text=True, cwd=cwd,
                          env=bench_env(TUITRAIN_RUNS_DIR=str(runs)), timeout=600)


def first_step_seconds(runs: Path, cwd: Path, *args: str) -> float:
    started = time.monotonic()
    result = tuitrain(runs, cwd, "run", *args, "--detach", *FAST)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-1000:])
    run = runs / result.stdout.strip()
    while time.monotonic() - started < 300:
        try:
            if '"event": "log"' in (run / "events.jsonl").read_text():
                elapsed = time.monotonic() - started
                break
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    else:
        raise RuntimeError(f"{run.name}: no logged step")
    while json.loads((run / "run.json").read_text())["status"] not in ("finished", "failed", "stopped", "killed"):
        time.sleep(0.2)
    return elapsed


class Reader:
    """Reads new whole lines of a file every poll and keeps each line's delay (now − its time stamp)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.rest, self.delays = path, 0, b"", []

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return
        now = time.time()
        self.offset += len(data)
        lines = (self.rest + data).split(b"\n")
        self.rest = lines.pop()
        self.delays += [now - float(line.split(b" ", 1)[0]) for line in lines if line[:1].isdigit()]


def log_delays(hosts: object, work: Path, duration: float) -> tuple[list[float], list[float]]:
    """(delays at home, delays on the node itself) of lines written at 1,000/s by one 'rank' on each machine."""
    runs = work / "runs-latency"
    paths = RunPaths(runs / f"latency-{int(time.time())}")
    paths.logs.mkdir(parents=True)
    paths.control.mkdir()
    paths.profile.write_text("")
    machines = []
    for rank, host in enumerate(("node1", "node2")):
        node_dir = str(work / ".tuitrain" / "runs" / paths.id / f"machine-{rank}")
        machines.append({"host": host, "machine_rank": rank, "python": sys.executable, "workdir": str(work),
                         "node_dir": node_dir, "argv": [sys.executable, "-c", WRITER, str(rank), str(duration)],
                         "env": {}, "num_processes": 1, "accelerator": "cpu", "accelerate_config": {}})
    record = new_record(paths.id, "latency", machines=machines, num_processes=2, num_machines=2, main_process_port=1,
                        ssh_config=str(hosts.ssh_config), cwd=str(work))  # type: ignore[attr-defined]
    write_json_atomic(paths.record, record)
    spawn_supervisor(paths)
    home = [Reader(paths.rank_log(r)) for r in (0, 1)]
    local = [Reader(Path(m["node_dir"]) / "logs" / f"rank-{m['machine_rank']}.log") for m in machines]
    deadline = time.monotonic() + duration + 60
    while time.monotonic() < deadline:
        for reader in home + local:
            reader.poll()
        if json.loads(paths.record.read_text())["status"] in ("finished", "failed"):
            break
        time.sleep(0.01)
    for reader in home + local:
        reader.poll()
    status = json.loads(paths.record.read_text())
    if status["status"] != "finished":
        raise RuntimeError(f"latency run {status['status']}: {status.get('error')}")
    return [d for r in home for d in r.delays], [d for r in local for d in r.delays]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    reason = ensure_tools() or cannot_make_hosts()
    if reason:
        print(f"skipped: {reason}")
        return 0
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="tuitrain-bench-") as tmp:
        folder = Path(tmp)
        (folder / "hosts").mkdir()
        hosts = make_hosts(folder / "hosts")
        try:
            work = folder / "work"
            work.mkdir()
            runs = work / "runs"
            profile = write_profile(work, hosts, free_port())
            single = work / "single.toml"
            text = profile.read_text()
            single.write_text(text[: text.index("[distributed]")] + '[distributed]\nstrategy = "ddp"\nnum_processes = 2\n')

            two: list[float] = []
            one: list[float] = []
            for _ in range(args.rounds):
                one.append(first_step_seconds(runs, work, str(single)))
                two.append(first_step_seconds(runs, work, str(profile), "--ssh-config", str(hosts.ssh_config),
                                              "--no-doctor"))
            ratio = statistics.median(two) / statistics.median(one)
            print(f"\nlaunch → first logged step, median of {args.rounds}: 1 machine × 2 ranks "
                  f"{statistics.median(one):.2f} s, 2 machines × 1 rank {statistics.median(two):.2f} s, "
                  f"ratio {ratio:.2f} (target ≤ 1.5)")
            print("  rounds 1 machine: " + ", ".join(f"{v:.2f}" for v in one))
            print("  rounds 2 machines: " + ", ".join(f"{v:.2f}" for v in two))

            home, local = log_delays(hosts, work, args.duration)
            print(f"\nlog line delay at 1,000 lines/s per rank, 2 ranks on 2 machines, {len(home)} lines home: "
                  f"home p50 {statistics.median(home) * 1000:.0f} ms, p95 {p95(home) * 1000:.0f} ms, "
                  f"max {max(home) * 1000:.0f} ms (target p95 < 1000 ms); on the node itself (baseline): "
                  f"p50 {statistics.median(local) * 1000:.0f} ms, p95 {p95(local) * 1000:.0f} ms")

            doctor = []
            for _ in range(args.rounds):
                started = time.monotonic()
                result = tuitrain(runs, work, "doctor", str(profile), "--ssh-config", str(hosts.ssh_config))
                doctor.append(time.monotonic() - started)
                if result.returncode != 0:
                    raise RuntimeError(result.stdout[-1000:] + result.stderr[-1000:])
            print(f"\ntuitrain doctor, 2 machines, every check green: median {statistics.median(doctor):.2f} s, "
                  f"max {max(doctor):.2f} s (target < 3 s)")
        finally:
            hosts.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
