"""The sampler: one NVML session, fixed-size rings, GPU processes mapped to runs and ranks.

Processes are real (`sleep` children of this test) and run records are real files written by
tuitrain.runs; only NVML answers from a recorded table that lists those real pids.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from conftest import patient
from tuitrain.hardware.na import NA
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.hardware.sampler import Sampler
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord, new_record, write_record
from tuitrain.rundir.run import Run
from tuitrain.runs.view.owners import OwnerIndex, RankOwner, owner_of, owners_from_runs, read_owners

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
GiB = 2**30


def table(name: str) -> dict[str, Any]:
    return load_table(FIXTURES / f"{name}.json")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def write_run(root: Path, run_id: str, ranks: dict[int, int], status: str = "running", **pids: int) -> RunPaths:
    paths = RunPaths(root / run_id)
    paths.root.mkdir(parents=True)
    record = new_record(run_id, "demo", status=status,
                        pids={**pids, "ranks": {str(rank): pid for rank, pid in ranks.items()}})
    write_record(paths, record)
    return paths


def test_rings_keep_a_fixed_number_of_samples():
    with Sampler(RecordedNvml(table("eight_h100")), history=5) as sampler:
        for _ in range(12):
            sampler.sample()
        assert sampler.samples == 12
        assert set(sampler.gpu_history) == set(range(8))
        assert all(len(ring) == 5 and ring.maxlen == 5 for ring in sampler.gpu_history.values())
        assert len(sampler.host_history) == 5
        times = [p.time for p in sampler.gpu_history[0]]
        assert times == sorted(times)
        point = sampler.gpu_history[3][-1]
        assert (point.utilization, point.temperature, point.power_draw) == (90, 58, 613.0)
        assert point.memory_used == 31 * GiB + 600 * 2**20


def test_one_nvml_session_and_static_fields_read_once():
    lib = RecordedNvml(table("eight_h100"))
    calls: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            target = getattr(lib, name)
            if not callable(target) or isinstance(target, type):  # constants and NVMLError as they are
                return target

            def call(*args: Any) -> Any:
                calls.append(name)
                return target(*args)

            return call

    with Sampler(Counting(), history=3) as sampler:
        sampler.sample()  # the first sample also learns this driver has no v2 memory call (test_hardware_memory.py)
        calls.clear()
        sampler.sample()
        sampler.sample()
    assert calls.count("nvmlInit") == 0 and calls.count("nvmlShutdown") == 1
    assert calls.count("nvmlDeviceGetMemoryInfo") == 16  # one per GPU per sample
    assert "nvmlDeviceGetName" not in calls and "nvmlDeviceGetUUID" not in calls  # static: read at start


def test_host_cpu_is_na_on_the_first_sample_then_a_number():
    with Sampler(RecordedNvml(table("no_driver"))) as sampler:
        first = sampler.sample()
        assert first.discovery.status_line == "no NVIDIA GPU (NVML: driver not found)" and first.gpus == ()
        assert first.host.cpu_percent is NA and first.host.memory_total > 0
        time.sleep(0.05)
        assert isinstance(sampler.sample().host.cpu_percent, float)


def test_a_gpu_lost_mid_run_goes_na_and_the_other_keeps_sampling():
    with Sampler(RecordedNvml(table("gpu_lost")), history=10) as sampler:
        snapshots = [sampler.sample() for _ in range(5)]
    assert [s.gpus[1].lost for s in snapshots] == [False, False, False, True, True]
    assert [p.memory_used for p in sampler.gpu_history[1]][2:] == [20 * GiB, NA, NA]
    assert all(p.memory_used == 20 * GiB for p in sampler.gpu_history[0])


def test_gpu_processes_map_to_run_and_rank(tmp_path, sleeper):
    runs = tmp_path / "runs"
    write_run(runs, "20240101-demo", {3: sleeper.pid}, supervisor=os.getpid())
    recorded = table("eight_h100")
    recorded["devices"][2]["compute_processes"] = [{"pid": sleeper.pid, "used_memory": 31 * GiB}]
    with Sampler(RecordedNvml(recorded), owners=OwnerIndex(runs).get) as sampler:
        first = sampler.sample()
        time.sleep(0.1)
        snapshot = sampler.sample()
    assert first.ranks[0].cpu_percent is NA  # psutil needs two looks for a CPU percentage
    (proc,) = snapshot.gpus[2].processes
    assert proc.owner == RankOwner("20240101-demo", 3, "rank", "demo")
    assert proc.user == psutil.Process().username() and proc.command == "sleep"
    (rank,) = snapshot.ranks
    assert rank.describe() == "rank 3 of run 20240101-demo on GPU 2, 31 GiB"
    assert rank.pid == sleeper.pid and rank.rss > 0 and isinstance(rank.cpu_percent, float)
    assert [p.gpu_memory for p in sampler.rank_history[("20240101-demo", 3)]] == [31 * GiB, 31 * GiB]
    assert snapshot.gpus[0].processes[0].owner is None  # a stranger's process


def test_a_child_of_a_rank_belongs_to_that_rank(tmp_path):
    rank = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    try:
        deadline = time.monotonic() + patient(5)
        while not psutil.Process(rank.pid).children() and time.monotonic() < deadline:
            time.sleep(0.01)
        (child,) = psutil.Process(rank.pid).children()
        runs = tmp_path / "runs"
        write_run(runs, "r1", {0: rank.pid})
        owners = read_owners(runs)
        assert owner_of(child.pid, owners) == RankOwner("r1", 0, "rank", "demo")
        assert owner_of(os.getpid(), owners) is None
    finally:
        for proc in psutil.Process(rank.pid).children():
            proc.kill()
        rank.kill()
        rank.wait()


def test_ended_runs_own_nothing_and_launchers_are_named(tmp_path, sleeper):
    runs = tmp_path / "runs"
    write_run(runs, "old", {0: sleeper.pid}, status="finished")
    assert read_owners(runs) == {}
    assert read_owners(runs, active_only=False)[sleeper.pid].rank == 0
    x: RunRecord = {"id": "x", "status": "running", "profile": "p", "pids": {"launcher": 11, "supervisor": 10, "ranks": {"1": 12}}}
    owners = owners_from_runs([(Run(RunPaths(tmp_path / "x"), x), {"0": 13})])
    assert owners[13].describe() == "rank 0 of run x"
    assert owners[11].describe() == "launcher of run x" and owners[12].describe() == "rank 1 of run x"


def test_rank_records_count_before_the_supervisor_copies_them(tmp_path, sleeper):
    runs = tmp_path / "runs"
    paths = write_run(runs, "r2", {})
    paths.ranks.mkdir()
    (paths.ranks / "rank-1.json").write_text(f'{{"rank": 1, "pid": {sleeper.pid}}}')
    assert read_owners(runs)[sleeper.pid] == RankOwner("r2", 1, "rank", "demo")


def test_owner_index_rereads_after_its_ttl(tmp_path, sleeper):
    now = [0.0]
    runs = tmp_path / "runs"
    index = OwnerIndex(runs, ttl=5.0, clock=lambda: now[0])
    assert index.get() == {}
    write_run(runs, "late", {0: sleeper.pid})
    now[0] = 4.0
    assert index.get() == {}
    now[0] = 5.0
    assert sleeper.pid in index.get()
    assert OwnerIndex(None).get() == {}


class FakeTime:
    """A clock and a stop event in one: each wait moves the clock on instead of sleeping; each
    sample takes `sample_cost[i]` seconds of it."""

    def __init__(self, sample_cost: list[float]) -> None:
        self.now = 100.0
        self.waits: list[float] = []
        self.sample_starts: list[float] = []
        self.cost = sample_cost
        self.stopped = False

    def clock(self) -> float:
        return self.now

    def is_set(self) -> bool:
        return self.stopped

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 6))
        self.now += seconds
        return self.stopped

    def on_sample(self, _snapshot) -> None:
        self.sample_starts.append(round(self.now - 100.0, 6))
        self.now += self.cost[len(self.sample_starts) - 1]


def test_run_loop_keeps_to_the_interval_without_drift():
    fake = FakeTime([0.1, 0.3, 0.0, 0.0])
    with Sampler(RecordedNvml(table("four_gpu_mixed")), history=50) as sampler:
        sampler.run(1.0, fake, fake.on_sample, count=4, clock=fake.clock)
        assert len(sampler.gpu_history[0]) == 4
    assert fake.sample_starts == [0.0, 1.0, 2.0, 3.0]  # a slow sample shortens the next wait
    assert fake.waits == [0.9, 0.7, 1.0]  # no wait after the last sample


def test_run_loop_skips_ticks_it_fell_behind_on():
    fake = FakeTime([2.5, 0.0, 0.0])
    with Sampler(RecordedNvml(table("four_gpu_mixed"))) as sampler:
        sampler.run(1.0, fake, fake.on_sample, count=3, clock=fake.clock)
    assert fake.sample_starts == [0.0, 3.0, 4.0]  # ticks 1 and 2 are skipped, not crammed in


def test_run_loop_stops_when_asked():
    seen = []
    stop = threading.Event()
    stop.set()
    with Sampler(RecordedNvml(table("four_gpu_mixed"))) as sampler:
        sampler.run(0.02, stop, seen.append)
    assert seen == []


def test_history_must_hold_a_sample():
    with pytest.raises(ValueError):
        Sampler(RecordedNvml(table("no_driver")), history=0)


def test_a_rank_that_exits_leaves_the_next_sample(tmp_path):
    rank = subprocess.Popen(["sleep", "60"])
    runs = tmp_path / "runs"
    write_run(runs, "r3", {0: rank.pid})
    with Sampler(RecordedNvml(table("no_driver")), owners=OwnerIndex(runs).get) as sampler:
        (usage,) = sampler.sample().ranks
        assert usage.describe() == "rank 0 of run r3 on the CPU" and usage.rss > 0
        rank.kill()
        rank.wait()
        assert sampler.sample().ranks == ()


def test_the_sampler_takes_owners_as_a_plain_callable(sleeper):
    """hardware/ knows no runs: any pid → owner table with run_id, rank and describe() will do."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Job:
        run_id: str
        rank: int | None

        def describe(self) -> str:
            return f"worker {self.rank} of job {self.run_id}"

    recorded = table("eight_h100")
    recorded["devices"][1]["compute_processes"] = [{"pid": 424242, "used_memory": 2 * GiB}]
    asked = []

    def owners() -> dict[int, Job]:
        asked.append(1)
        return {sleeper.pid: Job("j", 0), 4242: Job("j", None)}  # 4242: a launcher, measured never

    with Sampler(RecordedNvml(recorded), owners=owners, ancestors=lambda pid: [4242] if pid == 424242 else []) as sampler:
        snapshot = sampler.sample()
    assert asked == [1]  # once per sample
    (proc,) = snapshot.gpus[1].processes
    assert proc.owner == Job("j", None)  # through its parent
    assert [r.describe() for r in snapshot.ranks] == ["worker 0 of job j on the CPU"]

