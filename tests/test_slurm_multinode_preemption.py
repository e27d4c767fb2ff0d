"""Slurm's SIGTERM (as preemption sends it; here `scancel --signal=TERM`) to a job across two nodes (the namespace
hosts node1 and node2 of tests/slurm_cluster.py), then `scontrol requeue`: both nodes' ranks save one checkpoint
together and stop, the run says why; requeued, the same run continues from that checkpoint on both nodes, and
`tuitrain stop` ends it. No process of the run is left on either host after each end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import FAST, FINAL, cli, events, losses, record, wait_for, wait_until_ended
from slurm_cluster import TWO_NODES, Cluster
from test_multinode import leftovers
from test_slurm_preemption import LONG, complete_checkpoints

TWO_NODE_JOB = ["--set", "distributed.strategy=ddp", "--set", "distributed.num_machines=2",
                "--set", "distributed.network_interface=net0", "--partition", TWO_NODES]


def job_state(cluster: Cluster, job: str) -> str:
    out = cluster.client("scontrol", "--oneliner", "show", "job", job, timeout=10).stdout.split()
    return next((word.split("=", 1)[1] for word in out if word.startswith("JobState=")), "")


def node_record(run: Path) -> dict[str, Any]:
    """Node 2's own record (its agent's, on the shared filesystem)."""
    return json.loads((run / "nodes" / "machine-1" / "run.json").read_text())


def rank_hosts(run: Path) -> dict[int, tuple[str, int]]:
    found = {}
    for path in (run / "ranks").glob("rank-*.json"):
        rec = json.loads(path.read_text())
        found[rec["rank"]] = (rec["host"], rec["pid"])
    return found


def both_ranks(run: Path, not_pids: list[int] | None = None) -> dict[int, tuple[str, int]] | None:
    """Both ranks' (host, pid), once both are recorded (by processes other than `not_pids`)."""
    found = rank_hosts(run)
    fresh = {rank: seen for rank, seen in found.items() if seen[1] not in (not_pids or [])}
    return fresh if len(fresh) == 2 else None


def ended_on_node_2(run: Path) -> dict[str, Any] | None:
    rec = node_record(run)
    return rec if rec["status"] in FINAL else None


def requeued_record(run: Path) -> dict[str, Any] | None:
    rec = record(run)
    return rec if (rec.get("slurm") or {}).get("requeued") else None


def test_a_two_node_job_saves_at_slurms_sigterm_and_resumes_when_requeued(slurm_two_nodes: Cluster,
                                                                          runs_dir: Path) -> None:
    result = cli("submit", "demo", *FAST, *LONG, *TWO_NODE_JOB, "--time", "10", "--requeue", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run = runs_dir / result.stdout.strip()
    job = str(record(run)["slurm"]["job_id"])
    wait_for(lambda: len(losses(run)) >= 2, 180, "training to start on both nodes")
    first_ranks = wait_for(lambda: both_ranks(run), 30, "both ranks' records")
    assert {rank: host for rank, (host, _) in first_ranks.items()} == {0: "node1", 1: "node2"}

    # preempted: Slurm's SIGTERM reaches every process of the job's step, on both nodes
    sent = slurm_two_nodes.client("scancel", "--signal=TERM", job, timeout=20)
    assert sent.returncode == 0, sent.stderr
    ended = wait_until_ended(run, 90)
    assert ended["status"] == "stopped", (ended, (run / "logs" / "launcher.log").read_text()[-2000:],
                                          (run / "logs" / "machine-1.log").read_text()[-2000:])
    assert ended["error"] == (f"stopped at Slurm's SIGTERM (job {job}: preempted, requeued or scancel --signal=TERM) "
                              f"after saving a checkpoint; if Slurm requeues job {job}, it resumes from it"), ended
    assert ended["exit_codes"]["launcher"] == 0 and ended["exit_codes"]["0"] == 0, ended["exit_codes"]
    # node 2's agent ends after its ranks, maybe after node 1 recorded the run's end
    second = wait_for(lambda: ended_on_node_2(run), 30, "node 2's agent to end")
    assert second["status"] == "stopped" and "Slurm's SIGTERM" in (second["error"] or ""), second
    for rank in (0, 1):
        assert "SIGTERM from Slurm" in (run / "logs" / f"rank-{rank}.log").read_text(), rank
    saved = complete_checkpoints(run)
    assert len(saved) == 1 and saved[0] == max(losses(run)), (saved, max(losses(run)))
    step = saved[0]
    checkpoint = run / "output" / f"checkpoint-{step}"
    assert sorted(p.name for p in checkpoint.glob("rng_state*")) == ["rng_state_0.pth", "rng_state_1.pth"]
    wait_for(lambda: job_state(slurm_two_nodes, job) == "COMPLETED", 30, "the job to complete")
    wait_for(lambda: not leftovers(runs_dir), 30, "no process left on either host after the SIGTERM")

    # requeued: the same job, the same run, from that checkpoint on both nodes
    requeued = slurm_two_nodes.client("scontrol", "requeue", job, timeout=20)
    assert requeued.returncode == 0, requeued.stderr
    again_record = wait_for(lambda: requeued_record(run), 120, "the job to run again")
    (again,) = again_record["slurm"]["requeued"]
    assert again["previous"] == "stopped" and again["resume_from"] == str(checkpoint), again
    assert f"if Slurm requeues job {job}, it resumes from it" in again["error"], again
    wait_for(lambda: max(losses(run)) > step + 1, 180, "training to continue on both nodes")
    for log in ("launcher.log", "machine-1.log"):
        assert f"Slurm requeued job {job} (restart 1): resuming from {checkpoint}" in (run / "logs" / log).read_text()
    assert node_record(run)["resume_from"] == str(checkpoint)  # what node 2's rank resumed from
    assert record(run)["slurm"]["job_id"] == job and record(run)["status"] in ("running", "stopping")
    now_ranks = wait_for(lambda: both_ranks(run, not_pids=[pid for _, pid in first_ranks.values()]), 60,
                         "both ranks' new records")
    assert {rank: host for rank, (host, _) in now_ranks.items()} == {0: "node1", 1: "node2"}

    stopped = cli("stop", run.name, runs_dir=runs_dir, timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    final = record(run)
    assert final["status"] == "stopped" and final["error"].startswith("stopped on request"), final  # no Slurm SIGTERM
    begins = [e["step"] for e in events(run) if e["event"] == "train_begin"]
    assert begins == [0, step], begins
    after = sorted(s for s in losses(run) if s > step)
    assert after and after == list(range(step + 1, after[-1] + 1)), after  # every step past it, in order
    assert complete_checkpoints(run)[-1] == max(losses(run)) > step  # the stop saved where it ended
    wait_for(lambda: job_state(slurm_two_nodes, job) == "COMPLETED", 30, "the job to complete again")
    wait_for(lambda: not leftovers(runs_dir), 30, "no process left on either host after the stop")
    assert wait_for(lambda: ended_on_node_2(run), 30, "node 2's record of the stop")["status"] == "stopped"
