"""Recorded NVML tables for queue tests: four_gpu_mixed with some GPUs held by a stranger's process, rewritten
during a test (atomically) so a queued run's supervisor and the app read the change; and `queued_behind_a_run`, the
one flow of a queued run behind a real run on its GPU, on a recorded table here and on a real GPU in the lane."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from conftest import FAST, cli, record, wait_for, wait_until_ended

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


LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]


def queued_behind_a_run(runs_dir: Path, on_gpu: list[str], shown: Callable[[int | None], None],
                        while_held: Callable[[Path], None] = lambda first: None, timeout: float = 240
                        ) -> tuple[Path, dict[str, Any]]:
    """Run A trains on the GPU `on_gpu` selects; run B, queued onto it, waits naming A's rank as the GPU's holder,
    and starts only after A ends. `shown(pid)`: make the GPU list A's rank (pid) or nothing (None), as the driver
    does (on a recorded table, rewrite it; on a real GPU, nothing to do); `while_held(A)`: more checks while A holds
    the GPU and B waits. Returns A and B's record at its end."""
    started = cli("run", "demo", "--detach", *on_gpu, *LONG, runs_dir=runs_dir)
    assert started.returncode == 0, started.stdout + started.stderr
    first = runs_dir / started.stdout.strip()
    try:
        pid = wait_for(lambda: _rank_pid(first), 300, "run A's rank")
        shown(pid)
        wait_for(lambda: _steps(first) >= 1, 300, "run A's first step")
        queued = cli("run", "demo", "--queue", *on_gpu, *FAST, runs_dir=runs_dir)
        assert queued.returncode == 0, queued.stdout + queued.stderr
        second = runs_dir / queued.stdout.strip()
        holder = f"held by rank 0 of run {first.name} ("
        waits = wait_for(lambda: next((r["waits"] for r in _queue(runs_dir) if r["run"] == second.name
                                       and holder in " ".join(r["waits"])), None), 120, "run B to wait, naming A")
        assert waits[0].startswith("GPU ") and record(second)["started"] is None, waits
        while_held(first)
    finally:
        cli("stop", first.name, "--now", runs_dir=runs_dir)
    ended = wait_until_ended(first, 120)
    shown(None)
    rec = wait_until_ended(second, timeout)
    assert rec["started"] and rec["started"] >= ended["ended"], (rec, ended)
    return first, rec


def _rank_pid(run_dir: Path) -> int | None:
    path = run_dir / "ranks" / "rank-0.json"
    return json.loads(path.read_text())["pid"] if path.exists() else None


def _steps(run_dir: Path) -> int:
    path = run_dir / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return max((json.loads(line).get("step") or 0 for line in lines if line.strip()), default=0)


def _queue(runs_dir: Path) -> list[dict[str, Any]]:
    done = cli("queue", "--json", runs_dir=runs_dir)
    return json.loads(done.stdout)["runs"] if done.returncode == 0 else []
