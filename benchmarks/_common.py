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
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)
