"""Issue 21, items 5 and 8 (the monitor): a run on two machines whose hosts share one hostname (containers and
cloned VMs do) shows a card a machine in its GPUs tab, keyed by machine index, and calls a machine "this machine"
only when it is (one of its ranks is a live process here, pid and start time); a Slurm run's header shows its job
id and state."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import psutil
import pytest

from test_tui_app import make_app, until
from test_tui_fixtures import FIXED_CLOCK
from test_tui_multinode import make_multinode_run, open_monitor, run_app

SHARED = "20260101-030000-shared"
NVML_TABLE = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"


def agent_sample(machine: int, taken: float) -> dict[str, Any]:
    """What machine M's agent sends home every 2 s (tuitrain gpus --json's shape), with its rank on its GPU 0."""
    return {"time": taken, "nvml": {"available": True, "status": "1 NVIDIA GPU(s)"},
            "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "utilization": 87, "memory_used": 40 * 2**30,
                      "memory_total": 80 * 2**30, "temperature": 61, "lost": False,
                      "processes": [{"pid": 4242 + machine, "used_memory": 30 * 2**30,
                                     "owner": {"run_id": SHARED, "rank": machine, "role": "rank"}}]}],
            "host": {"cpu_count": 16, "cpu_percent": 35.0, "memory_used": 8 * 2**30, "memory_total": 64 * 2**30}}


def make_shared_hostname_run(root: Path, run_id: str = SHARED, *, here: bool = True, **extra: Any) -> Path:
    """Two machines (SSH hosts tt-host-a and tt-host-b, one rank each) whose ranks both report this machine's
    hostname. Rank 0 is really here when `here` (its pid is this process, with its start time); rank 1's pid is a
    process here too, but not the one its record names (another start time): a process of the other machine.
    Both agents' samples came home (machines/machine-M-gpus.json)."""
    hostname = socket.gethostname()
    started = {0: psutil.Process().create_time()} if here else {}
    run_dir = make_multinode_run(root, run_id, hosts=("tt-host-a", "tt-host-b"), per_machine=1, accelerator="cuda",
                                 rank_hosts={0: hostname, 1: hostname}, rank_pids={0: os.getpid(), 1: os.getppid()},
                                 rank_started=started, **extra)
    (run_dir / "machines").mkdir(exist_ok=True)
    for machine in (0, 1):
        (run_dir / "machines" / f"machine-{machine}-gpus.json").write_text(
            json.dumps(agent_sample(machine, FIXED_CLOCK - 2)), encoding="utf-8")
    return run_dir


def machines_of(run_dir: Path):
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.rundir.ranks import read_rank_records
    from tuitrain.tui.machines import run_machines

    paths = RunPaths(run_dir)
    record = json.loads(paths.record.read_text())
    return [(m.index, m.host, m.ranks, m.here) for m in run_machines(record["machines"], record, read_rank_records(paths))]


def test_machines_that_share_a_hostname_are_told_apart_by_index_and_by_whose_process_is_here(tmp_path):
    run_dir = make_shared_hostname_run(tmp_path / "runs")
    assert machines_of(run_dir) == [(0, "tt-host-a", (0,), True), (1, "tt-host-b", (1,), False)]
    # an ended run: no rank is a live process anywhere, and the shared hostname tells nothing
    ended = make_shared_hostname_run(tmp_path / "runs", "20260101-040000-ended", here=False, status="finished")
    assert machines_of(ended) == [(0, "tt-host-a", (0,), False), (1, "tt-host-b", (1,), False)]


def test_a_rank_belongs_to_the_machine_its_record_names(tmp_path):
    """machine_rank (the supervisor that started it) wins over accelerate's arithmetic and over node_rank, torch's
    GROUP_RANK, which a c10d rendezvous numbers its own way."""
    run_dir = make_multinode_run(tmp_path / "runs", hosts=("a", "b"), per_machine=2)
    for rank, machine, node in ((0, 1, 0), (2, 0, 1)):  # ranks 0 and 2 ran on each other's machine
        path = run_dir / "ranks" / f"rank-{rank}.json"
        rec = json.loads(path.read_text())
        path.write_text(json.dumps({**rec, "machine_rank": machine, "node_rank": node}))
    assert [(i, ranks) for i, _, ranks, _ in machines_of(run_dir)] == [(0, (1, 2)), (1, (0, 3))]


def test_loopback_or_a_hostname_only_one_machine_reports_makes_it_this_machine():
    from tuitrain.tui.machines import machine_is_here

    def never(_record):
        return False

    assert machine_is_here("me@localhost", [{"host": "box"}], "box", {"box"}, never)
    assert machine_is_here("node1", [{"host": "box.lan"}], "box", set(), never)
    assert not machine_is_here("node1", [{"host": "box"}], "box", {"box"}, never)  # both machines say "box"
    assert not machine_is_here("node2", [{"host": "other"}], "box", set(), never)
    assert machine_is_here("box", [], "box", set(), never)  # no rank record yet: the SSH host names this machine
    assert machine_is_here("node2", [{"host": "box", "pid": 1}], "box", {"box"}, lambda record: True)


def test_the_gpus_tab_shows_each_machine_by_index_when_their_hosts_share_a_hostname(tmp_path, monkeypatch):
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML_TABLE))
    make_shared_hostname_run(tmp_path / "runs")
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        monitor = await open_monitor(pilot, SHARED)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "machines  tt-host-a (this machine): rank 0 · tt-host-b: rank 1" in header.text,
                    timeout=30, what="only machine 0 as this machine")
        await pilot.press("u")
        panel = monitor.query_one("#gpus")
        await until(pilot, lambda: "this machine  " in str(panel.content), timeout=30, what="the panel")
        text = str(panel.content)
        assert "machine 0 · tt-host-a (this machine) · rank 0\n" in text
        assert "machine 1 · tt-host-b · rank 1\n    sampled 2 s ago\n" in text
        assert "GPU 0  NVIDIA H100 80GB HBM3  util  87%  memory 40.0/80.0 GiB  61°C  (rank 1 30.0 GiB)" in text
        assert f"pid {os.getppid()}" not in text  # rank 1's pid here is someone else's process

    run_app(app, script)


def test_a_run_that_lost_a_machine_names_the_machine_not_the_launcher(tmp_path):
    make_multinode_run(tmp_path / "runs", status="failed", error="node2: no word from its agent for 10 s")
    app = make_app(tmp_path)

    async def script(pilot):
        monitor = await open_monitor(pilot)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "failed (machine 1, node2)" in header.text, what="the lost machine")
        assert "(launcher)" not in header.text

    run_app(app, script)


def test_a_lost_record_with_no_error_still_says_why_in_its_header(tmp_path):
    """A record with no error (an older version's, or one a viewer settled lost) says what its status tells, as
    `tuitrain status` does."""
    make_multinode_run(tmp_path / "runs", status="lost", error=None)
    app = make_app(tmp_path)

    async def script(pilot):
        monitor = await open_monitor(pilot)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "\nits supervisor is gone without recording an end" in header.text, what="the cause")

    run_app(app, script)


# ------------------------------------------------------------------------------ Slurm

def make_slurm_run(root: Path, run_id: str, status: str, job: str, kept: str | None) -> Path:
    """A one-node Slurm run as it lies in the runs root (the job's final state kept in run.json once seen)."""
    run_dir = make_multinode_run(root, run_id, hosts=("node1",), per_machine=1, status=status,
                                 slurm={"job_id": job, "script": "slurm.sbatch", "nodes": 1, "state": kept})
    record = json.loads((run_dir / "run.json").read_text())
    record.pop("machines")  # a Slurm run lists no SSH machines
    record["num_machines"] = 1
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


@pytest.mark.parametrize("status, kept, shown", [("finished", "COMPLETED", "COMPLETED"), ("running", None, "RUNNING")])
def test_a_slurm_runs_header_shows_its_job_id_and_state(tmp_path, monkeypatch, status, kept, shown):
    """The job's state comes from the app's runs watcher (one squeue for every run; here a stand-in for it),
    or from run.json once final."""
    from tuitrain.slurm import state as slurm_state
    from tuitrain.slurm.commands import JobState

    monkeypatch.setattr(slurm_state, "job_states", lambda ids: {i: JobState(i, "RUNNING") for i in ids})
    run_id = f"20260101-05000{len(status)}-slurm"
    make_slurm_run(tmp_path / "runs", run_id, status, "4242", kept)
    app = make_app(tmp_path)

    async def script(pilot):
        monitor = await open_monitor(pilot, run_id)
        header = monitor.query_one("#header")
        await until(pilot, lambda: f" · Slurm job 4242 {shown} · " in header.text, what="the job and its state")
        assert header.text.startswith(f"● {status} · Slurm job 4242 {shown}")

    run_app(app, script)


