"""Small helpers shared by the benchmark scripts (standard library only)."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def bench_env(**extra: str) -> dict[str, str]:
    """The environment every benchmarked command runs in: offline, no GPU."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.update(extra)
    return env


def machine_line() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ""
    try:
        load = " load avg " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    return (f"machine: {os.cpu_count()} CPU core(s) {cpu}, no GPU used; Python {platform.python_version()}; "
            f"{time.strftime('%Y-%m-%d %H:%M')}{load}")


def wall(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True) -> float:
    """Seconds from start to exit of a subprocess (output discarded)."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env or bench_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def median(values: list[float]) -> float:
    return statistics.median(values)


class Table:
    def __init__(self, header: list[str]) -> None:
        self.rows = [header]

    def add(self, row: list[str]) -> None:
        self.rows.append([str(c) for c in row])

    def render(self) -> str:
        widths = [max(len(r[i]) for r in self.rows) for i in range(len(self.rows[0]))]
        lines = []
        for n, row in enumerate(self.rows):
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)


# ------------------------------------------------------------------------------ a quiet machine
# The machine is small (2 cores) and may be shared: another process training at the same time
# slows torch's threads down by 10x or more. Each measurement first waits (a bounded time) for
# the other processes to go quiet, and the scripts report how many measurements ran busy.


def _cpu_times() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return idle, sum(fields[:8])


def cpu_busy(interval: float = 0.5) -> float:
    """Fraction of all cores busy over `interval` seconds (0..1); 0 where /proc/stat is missing."""
    try:
        idle0, total0 = _cpu_times()
        time.sleep(interval)
        idle1, total1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return 0.0
    total = total1 - total0
    return 1.0 - (idle1 - idle0) / total if total > 0 else 0.0


class QuietGate:
    """wait() blocks until the machine is quiet (CPU busy below `threshold` in two samples in a
    row), at most `max_wait` seconds; `busy_runs` counts the waits that gave up."""

    def __init__(self, threshold: float = 0.2, max_wait: float = 30.0, budget: float = 90.0) -> None:
        self.threshold = threshold
        self.max_wait = max_wait
        self.budget = budget  # all waits together: keeps a script within its few minutes
        self.busy_runs = 0
        self.waits = 0
        self.waited = 0.0

    @property
    def exhausted(self) -> bool:
        return self.waited >= self.budget

    def wait(self) -> bool:
        self.waits += 1
        start = time.monotonic()
        limit = min(self.max_wait, max(0.0, self.budget - self.waited))
        quiet_in_a_row = 0
        while True:
            busy = cpu_busy(0.4)
            quiet_in_a_row = quiet_in_a_row + 1 if busy < self.threshold else 0
            if quiet_in_a_row >= 2:
                self.waited += time.monotonic() - start
                return True
            if time.monotonic() - start > limit:
                self.waited += time.monotonic() - start
                self.busy_runs += 1
                print(f"  (machine still busy: {busy:.0%} CPU used by others; measuring anyway)", flush=True)
                return False

    def summary(self) -> str:
        return (f"quiet-machine gate: {self.waits - self.busy_runs}/{self.waits} measurements started on a quiet machine "
                f"(< {self.threshold:.0%} CPU busy), {self.waited:.0f}s spent waiting")


class silenced:
    """Send fds 1 and 2 to /dev/null for a while (the Trainer's own printing, both sides alike)."""

    def __enter__(self) -> "silenced":
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = (os.dup(1), os.dup(2))
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])


class CpuWatch:
    """CPU used by *other* processes during a measurement: all cores' busy time from /proc/stat,
    less this process's own (threads and reaped children included) and any `extra_own` seconds
    the caller knows of (e.g. a detached run's processes, still alive). As a fraction of the
    machine (wall time x cores)."""

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.start()

    def _own(self) -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.own0 = self._own()
        try:
            self.idle0, self.total0 = _cpu_times()
        except (OSError, ValueError, IndexError):
            self.idle0 = self.total0 = 0

    def others(self, extra_own: float = 0.0) -> float:
        try:
            idle1, total1 = _cpu_times()
        except (OSError, ValueError, IndexError):
            return 0.0
        busy = ((total1 - self.total0) - (idle1 - self.idle0)) / self.tick
        own = self._own() - self.own0 + extra_own
        capacity = (time.monotonic() - self.t0) * (os.cpu_count() or 1)
        return max(0.0, busy - own) / capacity if capacity > 0 else 0.0


def wall_and_cpu(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of a subprocess and its reaped children.
    The CPU figure barely moves when other processes compete for the cores."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env or bench_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu
