"""Recorded NVML tables for queue tests: four_gpu_mixed with some GPUs held by a stranger's process, rewritten
during a test (atomically) so a queued run's supervisor and the app read the change."""

from __future__ import annotations

import json
import os
from pathlib import Path

NVML = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
LAUNCH_BOUND = NVML.parent / "h100_launch_bound.json"
RECORDED_RANK = 4100401  # the one process of h100_launch_bound


def held(path: Path, used: dict[int, float], busy: int = 0) -> None:
    """four_gpu_mixed (GPU 1 already 96% full and busy) with these GPUs that full by a stranger's process, and
    `busy` % utilisation on them."""
    table = json.loads(NVML.read_text())
    for index, fraction in used.items():
        gpu = table["devices"][index]
        gpu["memory"]["used"] = int(gpu["memory"]["total"] * fraction)
        gpu["compute_processes"] = [{"pid": 4100077, "used_memory": gpu["memory"]["used"]}]
        if busy:
            gpu["utilization"] = {"gpu": busy, "memory": busy}
    _write(path, table)


def _write(path: Path, table: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table))
    os.replace(tmp, path)


def launch_bound(path: Path, pid: int | None) -> None:
    """h100_launch_bound (one H100, 15% busy and 5% full with one launch-bound run's rank) with that rank's pid
    `pid`, a live process here (so that it is named by its run); None: the rank is gone, and the driver lists no
    process (the GPU idle)."""
    table = json.loads(LAUNCH_BOUND.read_text())
    gpu = table["devices"][0]
    if pid is None:
        gpu.update(memory={**gpu["memory"], "used": 0}, utilization={"gpu": 0, "memory": 0}, compute_processes=[],
                   process_utilization=[], accounting_stats={})
    else:
        text = json.dumps(gpu).replace(str(RECORDED_RANK), str(pid))
        table["devices"][0] = json.loads(text)
    _write(path, table)


def gpu_two(path: Path, taken: bool) -> None:
    """four_gpu_mixed with GPU 2 (an RTX 4090) held by a stranger's process (or free again)."""
    held(path, {2: 0.95} if taken else {})
