"""The GPU lane's queue step (issue 35): on a real GPU, a run queued onto the GPU a real training run holds waits,
naming that run's rank as the holder (the driver lists it; nothing is recorded), and starts after it ends. The same
flow runs on the CPU against a recorded table (tests/test_queue.py, `queued_behind_a_run`).

Run it alone on a GPU box (`scripts/gpu_check.sh` does, after the lane): any other process on GPU 0 holds it too,
and the queued run waits for that one as well. Marked `gpu`: it skips in one line elsewhere (tests/gpu_plugin.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli
from queue_tables import queued_behind_a_run

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
ON_GPU = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[0]"]


@pytest.fixture(autouse=True)
def own_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    monkeypatch.delenv("TUITRAIN_NVML_TABLE", raising=False)  # the real driver, only


def test_a_queued_run_waits_behind_a_real_run_on_its_gpu_and_starts_after_it_ends(runs_dir: Path) -> None:
    def while_held(first: Path) -> None:
        rank_log = (first / "logs" / "rank-0.log").read_text(errors="replace")
        assert "rank 0 trains on cuda:0, " in rank_log, rank_log[-2000:]  # the rank says the GPU it trains on
        said = cli("gpus", "--json", runs_dir=runs_dir)
        gpu = json.loads(said.stdout)["gpus"][0]
        (rank,) = [p for p in gpu["processes"] if (p["owner"] or {}).get("run_id") == first.name]
        # what the driver gives of one process, for docs/benchmarks.md: its SM share (None: not given here) and,
        # with accounting mode on, its peak memory
        print(f"GPU 0 {gpu['name']}: util {gpu['utilization']}%, rank 0 of A: {rank['used_memory']} B, "
              f"SM {rank['sm_util']}, peak {rank['peak_memory']} (process_sm {gpu['process_sm']}, accounting "
              f"{gpu['accounting']})")
        print(cli("gpus", runs_dir=runs_dir).stdout)

    first, rec = queued_behind_a_run(runs_dir, ON_GPU, lambda pid: None, while_held, timeout=600)
    assert rec["status"] == "finished" and rec["accelerator"] == "cuda", rec
    print(f"run B started {rec['started'] - json.loads((first / 'run.json').read_text())['ended']:.1f} s after A ended")
