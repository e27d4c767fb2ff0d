"""Recorded NVML tables for queue tests: four_gpu_mixed with some GPUs held by a stranger's process, rewritten
during a test (atomically) so a queued run's supervisor and the app read the change."""

from __future__ import annotations

import json
import os
from pathlib import Path

NVML = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"


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
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table))
    os.replace(tmp, path)


def gpu_two(path: Path, taken: bool) -> None:
    """four_gpu_mixed with GPU 2 (an RTX 4090) held by a stranger's process (or free again)."""
    held(path, {2: 0.95} if taken else {})
