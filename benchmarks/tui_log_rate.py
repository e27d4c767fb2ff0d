"""Ranks (--ranks: 8, issue 21's goal; 2 before it) each writing 1,000 lines a second: how soon the app
shows a new line (target < 0.5 s) and what watching costs it (target < 10% of a core over 60 s), beside a naive Textual viewer
(Textual's own Log widget fed every new line by a thread) watching the same files.

A writer process appends timestamped lines to every logs/rank-K.log of a run
directory (the run's record names the writer as its supervisor, so the run reads as running),
through the same TimedLog a rank's output goes through, so logs/rank-K.times says when each line
was written and the merged view interleaves by it; a second pass writes the logs without .times
(older runs, bytes written below Python), which the view merges as they arrive.
The app runs in a pseudo-terminal, opened on that run (the merged view of every rank, following);
every line it paints carries its write time, so latency = paint time - write time.
CPU is the app process's user + system time (threads and any child processes included) over the
writing, as a share of one core; beside it the same app's CPU over 10 s with the run open and
nothing written (the floor: hardware strip, runs polling, clock), and the baseline viewer's.

With --before DIR, the app from another source tree (an earlier commit: `git archive COMMIT | tar -x -C DIR`)
is measured too, on the timed pass, beside this tree's.

    .venv/bin/python benchmarks/tui_log_rate.py [--seconds 60] [--ranks 8] [--before DIR] [--only-timed] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from _common import QuietGate, machine_line
from tui_pty import PtyProgram

RATE = 1000
OURS = "tuitrain (merged view of every rank, lines merged by their .times, as a run's ranks write them)"
IDLE_SECONDS = 10.0
WRITER = r"""
import os, sys, time
from tuitrain.rundir.linetimes import timed_stream
rate, seconds, timed, ranks = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "timed", int(sys.argv[5])
def rank_log(r):
    path = sys.argv[1] + f"/rank-{r}.log"
    if not timed:
        return open(path, "a", buffering=1)
    # as a rank writes: through TimedLog, which notes when each line was written in rank-K.times
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    times = os.open(path[:-4] + ".times", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    return timed_stream(fd, times, sys.stdout)
logs = [rank_log(r) for r in range(ranks)]
start = time.time(); written = 0
while True:
    now = time.time()
    if now - start > seconds:
        break
    due = int((now - start) * rate)
    for n in range(written, due):
        for r, log in enumerate(logs):
            log.write(f"rank {r} line {n:07d} t={time.time():.3f} some words a trainer would print here\n")
    written = max(written, due)
    time.sleep(0.005)
"""
BASELINE = r"""
import sys, threading, time
from pathlib import Path
from textual.app import App
from textual.widgets import Log
files = [Path(sys.argv[1]) / f"rank-{r}.log" for r in range(int(sys.argv[2]))]
class Naive(App):
    def compose(self):
        yield Log()
    def on_mount(self):
        threading.Thread(target=self.follow, daemon=True).start()
    def follow(self):
        offsets = [f.stat().st_size if f.exists() else 0 for f in files]
        while True:
            for r, f in enumerate(files):
                with open(f, "rb") as h:
                    h.seek(offsets[r]); data = h.read()
                end = data.rfind(b"\n") + 1
                offsets[r] += end
                if end:
                    lines = [f"{r}|" + l for l in data[:end].decode().splitlines()]
                    self.call_from_thread(self.query_one(Log).write_lines, lines)
            time.sleep(0.2)
Naive().run()
"""
STAMP = re.compile(rb"t=(\d{10}\.\d{3})")


def make_run(base: Path, writer_pid: int, ranks: int) -> Path:
    run = base / "runs" / "20260101-000000-rate"
    (run / "logs").mkdir(parents=True)
    (run / "control").mkdir()
    now = time.time()
    record = {"id": run.name, "profile": "rate", "status": "running", "created": now, "started": now, "ended": None,
              "num_processes": ranks, "num_machines": 1, "pids": {"supervisor": writer_pid}, "exit_codes": {},
              "failed_rank": None, "output_dir": str(run / "output"), "max_steps": 100}
    (run / "run.json").write_text(json.dumps(record))
    for r in range(ranks):
        (run / "logs" / f"rank-{r}.log").write_text(f"rank {r} starts\n")
    return run


def app_cpu(proc: psutil.Process) -> float:
    """CPU seconds (user + system) of the app's process, its threads and any child processes."""
    total = sum(proc.cpu_times()[:2])
    for child in proc.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def watch(argv: list[str], base: Path, seconds: float, open_run: bool, timed: bool, ranks: int,
          env: dict[str, str] | None = None) -> dict[str, float]:
    samples: list[float] = []  # newest line of a paint: paint time - write time
    oldest: list[float] = []  # oldest line first shown by a paint: the bound on "shown within"
    seen = [0.0]

    def on_chunk(_arrived: float, plain: bytes) -> None:
        stamps = [float(s) for s in STAMP.findall(plain)]
        if stamps:
            now = time.time()
            samples.append(now - max(stamps))
            new = [s for s in stamps if s > seen[0]]
            if new and seen[0]:
                oldest.append(now - min(new))
            seen[0] = max(seen[0], max(stamps))

    logs = base / "runs" / "20260101-000000-rate" / "logs"
    program = PtyProgram(argv, (120, 40), env={"TUITRAIN_RUNS_DIR": str(base / "runs"), "HF_HUB_OFFLINE": "1",
                                               **(env or {})}, cwd=base, on_chunk=on_chunk)
    try:
        if open_run:
            program.wait_for("Runs (1)", 30)
            program.send("\r")
            program.wait_for("All ranks", 30)
        else:
            time.sleep(1.0)
        time.sleep(1.0)
        proc = psutil.Process(program.proc.pid)
        # the floor: the same app, the same run open, nothing being written
        cpu0, wall0 = app_cpu(proc), time.monotonic()
        time.sleep(IDLE_SECONDS)
        idle = (app_cpu(proc) - cpu0) / (time.monotonic() - wall0)
        children = len(proc.children(recursive=True))
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(logs), str(RATE), str(seconds),
                                   "timed" if timed else "plain", str(ranks)])
        cpu0 = app_cpu(proc)
        wall0 = time.monotonic()
        writer.wait()
        cpu = (app_cpu(proc) - cpu0) / (time.monotonic() - wall0)
        rss = proc.memory_info().rss
        time.sleep(1.0)
    finally:
        program.close()
    steady = samples[len(samples) // 20:] or samples
    first = oldest[len(oldest) // 20:] or oldest or [float("nan")]
    return {"cpu": cpu, "idle": idle, "children": children,
            "p50": statistics.median(steady), "p95": sorted(steady)[int(len(steady) * 0.95)], "max": max(steady),
            "paints": len(samples), "rss": rss / 2**20,
            "first_p95": sorted(first)[int(len(first) * 0.95)], "first_max": max(first)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--before", type=Path, help="a source tree to measure beside (an earlier commit)")
    parser.add_argument("--only-timed", action="store_true", help="leave out the pass without .times and the naive viewer")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of the timed pass (and --before's, taking turns); the figures are their medians")
    args = parser.parse_args()
    gate = QuietGate()
    runs: dict[str, list[dict[str, float]]] = {}
    app = [sys.executable, "-m", "tuitrain"]
    passes: list[tuple[str, list[str], bool, bool, dict[str, str] | None]] = []
    for _ in range(args.repeat):
        passes.append((OURS, app, True, True, None))
        if args.before is not None:
            passes.append((f"before ({args.before}), same pass", app, True, True, {"PYTHONPATH": str(args.before)}))
    if not args.only_timed:
        passes += [("tuitrain, logs without .times (merged by arrival)", app, True, False, None),
                   ("naive: Textual Log widget, a thread writing every line", [sys.executable, "-c", BASELINE], False, False,
                    None)]
    loads = [os.getloadavg()[0]]
    for name, argv, open_run, timed, env in passes:
        base = Path(tempfile.mkdtemp(prefix="tuitrain-rate-"))
        run = make_run(base, writer_pid=psutil.Process().pid, ranks=args.ranks)
        if not open_run:
            argv = [*argv, str(run / "logs"), str(args.ranks)]
        gate.wait()
        try:
            runs.setdefault(name, []).append(watch(argv, base, args.seconds, open_run, timed, args.ranks, env))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    loads.append(os.getloadavg()[0])
    results = {name: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]} for name, rounds in runs.items()}
    print(machine_line())
    print(gate.summary())
    print(f"load average (1 min) at the start and the end: {loads[0]:.2f}, {loads[1]:.2f}")
    print(f"{args.ranks} ranks x {RATE} lines/s for {args.seconds:.0f} s; latency = when a line is painted - when it was written")
    for name, r in results.items():
        print(f"{name}:\n  newest line of a paint: latency p50 {r['p50']:.3f} s, p95 {r['p95']:.3f} s, max {r['max']:.3f} s"
              f" over {r['paints']} paints\n  oldest line a paint shows first: p95 {r['first_p95']:.3f} s, "
              f"max {r['first_max']:.3f} s\n  CPU {r['cpu']:.1%} of a core (the same app idle, nothing written: "
              f"{r['idle']:.1%} over {IDLE_SECONDS:.0f} s; child processes: {r['children']:.0f});  "
              f"RSS at the end {r['rss']:.0f} MiB")
        if len(runs[name]) > 1:
            print(f"  median of {len(runs[name])} rounds; CPU each: {', '.join(format(x['cpu'], '.1%') for x in runs[name])}")
    ours = results[OURS]
    ok = ours["first_p95"] < 0.5 and ours["cpu"] < 0.10
    print("targets (a new line shown within 0.5 s at p95, CPU < 10% of a core):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
