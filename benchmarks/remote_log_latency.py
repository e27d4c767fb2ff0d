"""A remote run's log line to the screen (issue 23): how soon a line a run on another workstation writes is in the
mirrored copy here, and painted by the app's monitor of that run. Goal: p95 < 1 s on screen.

    sudo .venv/bin/python benchmarks/remote_log_latency.py [--lines 100]

The workstation is the test suite's namespace host node1 (tests/hosts.py: a network namespace with its own sshd;
root needed), holding one run (the app tests' running fixture) in its own runs folder. The app
(`python -m tuitrain`, this machine's runs folder empty, node1 in its settings) runs in an 80x24 pty
(benchmarks/tui_pty.py); Enter on node1's run opens its monitor, mirrored over ssh (remote.run_mirror). Then lines
`MARK-NNNNN.` are appended to the run's logs/rank-0.log on node1 (the namespaces share this machine's files and
clock), one at a time, 0.1 to 0.4 s apart. Each line's latency: from its write to (a) its bytes in the cache
folder's copy here (polled every 5 ms) and (b) its text painted on the pty. Median, p95 and max.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import QuietGate, machine_line
from tui_pty import PtyProgram


def settings(folder: Path, hosts) -> Path:
    path = folder / "config.toml"
    path.write_text(f'[[workstations]]\nhost = "node1"\npython = "{sys.executable}"\n'
                    f'runs = "{folder / "node1-runs"}"\nssh_config = "{hosts.ssh_config}"\n')
    return path


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100, help="lines written, one at a time (default 100)")
    opts = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from hosts import cannot_make_hosts, ensure_tools, make_hosts
    from test_tui_fixtures import RUNNING, make_runs

    reason = ensure_tools() or cannot_make_hosts()
    if reason:
        print(f"remote_log_latency: {reason}")
        return 2
    base = Path(tempfile.mkdtemp(prefix="tuitrain-bench-"))
    (base / "hosts").mkdir()
    (base / "runs").mkdir()
    hosts = make_hosts(base / "hosts", ("node1",))
    program = None
    to_cache: list[float] = []
    to_screen: list[float] = []
    try:
        make_runs(base / "node1-runs")
        for run in (base / "node1-runs").iterdir():
            if run.name != RUNNING:
                shutil.rmtree(run)
        log = base / "node1-runs" / RUNNING / "logs" / "rank-0.log"
        cached = base / "cache" / "tuitrain" / "workstations" / "node1" / RUNNING / "logs" / "rank-0.log"
        env = {"HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(base / "runs"), "TUITRAIN_CONFIG": str(settings(base, hosts)),
               "XDG_CACHE_HOME": str(base / "cache")}
        gate = QuietGate()
        gate.wait()
        program = PtyProgram([sys.executable, "-m", "tuitrain"], (80, 24), env=env, cwd=base)
        program.wait_for("Runs (1)", 120)  # node1's run, the only one
        time.sleep(1.0)
        program.send("\r")
        program.wait_for("on node1", 120)
        program.wait_for("following the end", 60)  # the monitor follows its log

        arrived: dict[str, float] = {}
        stop = threading.Event()

        def watch_cache() -> None:  # when each marker's bytes are in the cache's copy
            seen = 0
            while not stop.is_set():
                try:
                    size = cached.stat().st_size
                except OSError:
                    size = 0
                if size > seen:
                    with open(cached, "rb") as handle:
                        handle.seek(seen)
                        new = handle.read(size - seen)
                    now = time.perf_counter()
                    seen = size
                    for token in new.decode("utf-8", "replace").split():
                        if token.startswith("MARK-"):
                            arrived.setdefault(token, now)
                stop.wait(0.005)

        threading.Thread(target=watch_cache, daemon=True).start()
        with open(log, "a") as handle:  # the fixture's log ends inside a progress bar's line
            handle.write("\n")
        rng = random.Random(1)
        for number in range(opts.lines):
            marker = f"MARK-{number:05d}."
            with open(log, "a") as handle:
                written = time.perf_counter()
                handle.write(f"step line {marker}\n")
            painted = program.started + program.wait_for(marker, 30)
            to_screen.append(painted - written)
            deadline = time.monotonic() + 5
            while marker not in arrived and time.monotonic() < deadline:
                time.sleep(0.005)
            if marker in arrived:
                to_cache.append(arrived[marker] - written)
            time.sleep(rng.uniform(0.1, 0.4))
        stop.set()
    finally:
        if program is not None:
            program.close()
        hosts.close()
        shutil.rmtree(base, ignore_errors=True)

    print(f"remote_log_latency: {opts.lines} lines, one at a time, written to a run on namespace host node1 over ssh; "
          "the app's monitor of it in an 80x24 pty")
    print(machine_line())
    print(gate.summary())
    print(f"into the mirrored copy here: {percentiles(to_cache)} ({len(to_cache)} lines)")
    print(f"painted by the monitor:      {percentiles(to_screen)} (goal p95 < 1 s: "
          f"{'met' if sorted(to_screen)[round(0.95 * (len(to_screen) - 1))] < 1 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
