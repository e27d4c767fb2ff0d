"""Opening a run whose rank log has 1,000,000 lines (issue 21: 10,000,000, about 800 MB): time from the key
that opens it to the last line painted (target < 1 s, median of --repeat) and the app's peak memory (target
< 300 MB: the highest RSS sampled every 20 ms, over all the runs), then a search that jumps to a line in the
middle (target < 1 s from its enter); beside a naive viewer (Textual's Log widget given every line of the file
when enter is pressed) opening the same log, timed the same way, from the key, and, with --before, the app
from another source tree (an earlier commit: `git archive COMMIT | tar -x -C DIR`) on the same log.

    .venv/bin/python benchmarks/tui_big_log.py [--lines 1000000] [--repeat 5] [--before DIR] [--no-naive]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from _common import QuietGate, machine_line
from tui_pty import PtyProgram

NAIVE = r"""
import sys
from textual.app import App
from textual.widgets import Log
class Naive(App):
    BINDINGS = [("enter", "open", "Open")]
    def compose(self):
        yield Log()
    def on_mount(self):
        self.query_one(Log).write_line("READY")
    def action_open(self):
        with open(sys.argv[1], encoding="utf-8", errors="replace") as handle:
            self.query_one(Log).write_lines(handle.read().splitlines())
Naive().run()
"""


def make_run(base: Path, lines: int) -> Path:
    run = base / "runs" / "20260101-000000-big"
    (run / "logs").mkdir(parents=True)
    (run / "control").mkdir()
    record = {"id": run.name, "profile": "big", "status": "finished", "created": 1.0, "started": 1.0, "ended": 2.0,
              "num_processes": 1, "num_machines": 1, "pids": {}, "exit_codes": {"0": 0}, "failed_rank": None,
              "output_dir": str(run / "output"), "max_steps": lines}
    (run / "run.json").write_text(json.dumps(record))
    with open(run / "logs" / "rank-0.log", "w") as handle:
        block = []
        for i in range(lines - 1):
            block.append(f"[transformers] step {i:07d} loss {1 / (1 + i % 977):.5f} \x1b[32mok\x1b[0m some words a trainer prints\n")
            if len(block) == 10000:
                handle.write("".join(block))
                block = []
        handle.write("".join(block) + "LAST LINE OF THE LOG\n")
    return run


class PeakMemory:
    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.02)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 2**20


def ours(base: Path, lines: int, tree: Path | None = None, patience: float = 60.0) -> dict[str, float]:
    env = {"TUITRAIN_RUNS_DIR": str(base / "runs"), "HF_HUB_OFFLINE": "1"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)  # that tree's tuitrain before the installed one
    program = PtyProgram([sys.executable, "-m", "tuitrain"], (120, 40), cwd=base, env=env)
    memory = PeakMemory(program.proc.pid)
    try:
        program.wait_for("Runs (1)", 30)
        time.sleep(0.5)
        program.send("\r")
        opened = program.wait_for("LAST LINE OF THE LOG", patience, since_start=False)
        time.sleep(0.5)
        program.send("/")
        time.sleep(0.3)
        target = f"step {lines // 2:07d}"
        program.send(target)
        time.sleep(0.2)
        program.forget()
        program.send("\r")
        found = program.wait_for(f"{target} loss", patience, since_start=False)  # the line itself, not the search box
        # again, the index settled (a big log's front is counted just after its end shows): back to the end,
        # and a search for the line before the middle, which wraps around to the top as the first did
        time.sleep(1.0)
        program.send("G")  # follow the end again
        time.sleep(0.5)
        program.send("/")
        time.sleep(0.3)
        target = f"step {lines // 2 - 1:07d}"
        for _ in range(len(target)):  # the box opens with the last term: erased a key at a time
            program.send("\x7f")
            time.sleep(0.02)
        program.forget()
        program.send(target)
        program.wait_for(target, patience, since_start=False)  # typed into the box
        time.sleep(0.2)
        program.forget()
        program.send("\r")
        settled = program.wait_for(f"{target} loss", patience, since_start=False)
        time.sleep(0.5)
        return {"open": opened, "search": found, "settled": settled, "peak": memory.stop()}
    finally:
        program.close()


def naive(base: Path) -> dict[str, float]:
    log = base / "runs" / "20260101-000000-big" / "logs" / "rank-0.log"
    program = PtyProgram([sys.executable, "-c", NAIVE, str(log)], (120, 40), cwd=base)
    memory = PeakMemory(program.proc.pid)
    try:
        program.wait_for("READY", 30)
        time.sleep(0.5)
        program.send("\r")
        opened = program.wait_for("LAST LINE OF THE LOG", 120, since_start=False)
        time.sleep(1.0)
        return {"open": opened, "peak": memory.stop()}
    finally:
        program.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a source tree to measure beside (an earlier commit), each round")
    parser.add_argument("--no-naive", action="store_true", help="leave the naive viewer out")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tuitrain-big-"))
    try:
        run = make_run(base, args.lines)
        size = (run / "logs" / "rank-0.log").stat().st_size
        loads = [os.getloadavg()[0]]
        gate = QuietGate()
        results = []
        baselines = []
        befores = []
        for _ in range(args.repeat):
            gate.wait()
            results.append(ours(base, args.lines))
            if args.before is not None:  # taking turns: the same load for both
                gate.wait()
                befores.append(ours(base, args.lines, args.before, patience=600.0))
        for _ in range(0 if args.no_naive else max(1, args.repeat // 2)):
            gate.wait()
            baselines.append(naive(base))
        loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    opened = statistics.median(r["open"] for r in results)
    search = statistics.median(r["search"] for r in results)
    peak = max(r["peak"] for r in results)
    print(machine_line())
    print(gate.summary())
    print(f"load average (1 min) at the start and the end: {loads[0]:.2f}, {loads[1]:.2f}")
    print(f"a rank log of {args.lines:,} lines ({size / 2**20:.0f} MiB), opened with enter in a 120x40 terminal")
    print(f"tuitrain (Home, enter on the run): last line painted {opened:.3f} s after the key (median of {args.repeat}: "
          f"{', '.join(format(r['open'], '.3f') for r in results)}); peak RSS {peak:.0f} MiB (max over the runs); "
          f"search to the middle line {search:.3f} s (median: {', '.join(format(r['search'], '.3f') for r in results)}; "
          f"1 s after it, the index settled: {statistics.median(r['settled'] for r in results):.3f} s, "
          f"{', '.join(format(r['settled'], '.3f') for r in results)})")
    if befores:
        def listed(key: str) -> str:
            return ", ".join(format(b[key], ".3f") for b in befores)

        print(f"before ({args.before}), median of {len(befores)}: last line painted "
              f"{statistics.median(b['open'] for b in befores):.3f} s after the key ({listed('open')}); peak RSS "
              f"{max(b['peak'] for b in befores):.0f} MiB; search to the middle line "
              f"{statistics.median(b['search'] for b in befores):.3f} s ({listed('search')}), the index settled "
              f"{statistics.median(b['settled'] for b in befores):.3f} s ({listed('settled')})")
    if baselines:
        print(f"baseline, naive (Textual Log given every line of the file on enter): last line painted "
              f"{statistics.median(b['open'] for b in baselines):.3f} s after the key (median of {len(baselines)}: "
              f"{', '.join(format(b['open'], '.3f') for b in baselines)}); peak RSS {max(b['peak'] for b in baselines):.0f} MiB")
    ok = opened < 1.0 and search < 1.0 and peak < 300
    print("targets (first screen < 1 s, search to the middle < 1 s, memory < 300 MB):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
