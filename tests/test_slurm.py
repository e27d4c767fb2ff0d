"""`tuitrain submit` against a real Slurm: a one-node cluster on this machine (tests/slurm_cluster.py), 2 CPUs.

The demo runs as a batch job with 2 ranks and with 1; a job that waits for the node shows PENDING (Resources); stop
saves and the job ends; Slurm's time-limit warning saves a checkpoint; resume submits a job that continues the step;
sbatch's refusals and a missing sbatch are one line each."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import FAST, TWO_RANKS, check_clean, cli, events, losses, record, wait_for, wait_until_ended
from slurm_cluster import PARTITION, TWO_NODES, Cluster
from tuitrain.runs.keeper.manifest import scan_manifests

QUIET = ["--set", "training.eval_steps=100000", "--set", "training.save_steps=100000"]  # a long run saves on request only


def submit(runs: Path, *args: str) -> tuple[Path, str]:
    result = cli("submit", "demo", *args, runs_dir=runs)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = runs / result.stdout.strip()
    return run_dir, str(record(run_dir)["slurm"]["job_id"])


def runs_row(runs: Path, run_dir: Path) -> str:
    result = cli("runs", runs_dir=runs)
    assert result.returncode == 0, result.stderr
    return next((line for line in result.stdout.splitlines() if line.startswith(run_dir.name)), "")


def row_with(runs: Path, run_dir: Path, needle: str) -> str | None:
    row = runs_row(runs, run_dir)
    return row if needle in row else None


def test_demo_with_two_ranks_then_one_pending_on_resources(slurm_cluster: Cluster, tmp_path: Path) -> None:
    runs = tmp_path / "runs #1 it's"  # sbatch and bash must read the path back whole
    runs.mkdir()
    two, job2 = submit(runs, *FAST, *TWO_RANKS, "--partition", PARTITION, "--time", "10")
    wait_for(lambda: "RUNNING" in runs_row(runs, two), 60, "the 2-rank job to run")
    one, job1 = submit(runs, *FAST, "--time", "10")  # the node's 2 CPUs are taken: it waits
    row = wait_for(lambda: row_with(runs, one, "PENDING (Resources)"), 30, "PENDING (Resources)")
    assert f"job {job1} PENDING (Resources)" in row and "planned" in row, row
    assert f"job {job2} RUNNING" in runs_row(runs, two)
    three, job3 = submit(runs, *FAST, "--time", "10")
    wait_for(lambda: row_with(runs, three, "PENDING"), 30, "the third job to pend")
    stopped = cli("stop", three.name, runs_dir=runs)
    assert stopped.returncode == 0 and f"Slurm job {job3} was still pending: cancelled" in stopped.stderr, stopped
    assert record(three)["status"] == "cancelled" and "cancelled while pending" in record(three)["error"]
    four, job4 = submit(runs, *FAST, "--time", "10")
    wait_for(lambda: row_with(runs, four, "PENDING"), 30, "the fourth job to pend")
    subprocess.run(["scancel", job4], check=True)  # by hand, as a user of Slurm would
    wait_for(lambda: row_with(runs, four, "cancelled"), 60, "the job cancelled outside tuitrain, recorded")
    assert record(four)["error"] == f"Slurm job {job4} was cancelled (scancel) before tuitrain started on its nodes"

    for run_dir, job, ranks in ((two, job2, 2), (one, job1, 1)):
        ended = wait_until_ended(run_dir, 180)
        assert ended["status"] == "finished", (ended, (run_dir / "logs" / "launcher.log").read_text()[-2000:])
        assert ended["slurm"]["job_id"] == job and ended["num_processes"] == ranks
        for rank in range(ranks):
            assert "rank" in (run_dir / "logs" / f"rank-{rank}.log").read_text()
        assert (run_dir / "logs" / f"slurm-{job}.out").exists()
        assert [e["step"] for e in events(run_dir) if e["event"] == "train_end"] == [8]
        assert sorted(losses(run_dir)) == list(range(1, 9))
        row = wait_for(lambda rd=run_dir, j=job: row_with(runs, rd, f"job {j} COMPLETED"), 30, "COMPLETED")
        assert "finished" in row and "8/8" in row, row
    status = cli("status", one.name, runs_dir=runs)
    assert f"slurm      job {job1} COMPLETED" in status.stdout, status.stdout
    as_json = json.loads(cli("status", two.name, "--json", runs_dir=runs).stdout)
    assert as_json["slurm_state"]["state"] == "COMPLETED" and as_json["slurm"]["host"]


def test_stop_saves_and_resume_submits_a_job_that_continues(slurm_cluster: Cluster, runs_dir: Path) -> None:
    run, job = submit(runs_dir, *FAST, *QUIET, "--set", "training.max_steps=5000", "--time", "10")
    wait_for(lambda: losses(run), 120, "training to start")
    stopped = cli("stop", run.name, runs_dir=runs_dir, timeout=180)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert f"run {run.name} stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    ended = record(run)
    assert ended["status"] == "stopped" and ended["slurm"]["job_id"] == job
    checkpoints = sorted((run / "output").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    assert checkpoints and (checkpoints[-1] / "tuitrain.json").exists()
    step = int(checkpoints[-1].name.split("-")[1])

    wait_for(lambda: f"job {job} COMPLETED" in runs_row(runs_dir, run), 30, "the job to complete")
    resumed = cli("resume", run.name, "--set", f"training.max_steps={step + 3}", runs_dir=runs_dir)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    child = runs_dir / resumed.stdout.strip()
    child_record = record(child)
    assert child_record["parent"] == run.name and child_record["resume_from"] == str(checkpoints[-1])
    assert child_record["slurm"]["job_id"] not in (None, job)
    done = wait_until_ended(child, 180)
    assert done["status"] == "finished", done
    assert min(losses(child)) == step + 1 and max(losses(child)) == step + 3


def test_time_limit_warning_saves_a_checkpoint(slurm_cluster: Cluster, runs_dir: Path) -> None:
    # a one-minute job warned 45 s before its end: Slurm signals the batch shell, the run saves and stops
    run, job = submit(runs_dir, *FAST, *QUIET, "--set", "training.max_steps=100000", "--time", "1",
                      "--warning", "45")
    # meanwhile, on the other CPU: a stop that does not end the run in time ends its processes and cancels the job
    other, other_job = submit(runs_dir, *FAST, *QUIET, "--set", "training.max_steps=100000", "--time", "10")
    wait_for(lambda: record(other)["status"] == "running", 60, "the other run to start")
    stopped = cli("stop", other.name, "--timeout", "0", runs_dir=runs_dir)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert f"cancelling Slurm job {other_job}" in stopped.stderr, stopped.stderr
    ended = record(other)
    assert ended["status"] == "killed" and "did not end it within 0 s" in ended["error"], ended

    ended = wait_until_ended(run, 150)
    assert ended["status"] == "stopped", ended
    assert f"Slurm's time-limit warning (job {job})" in ended["error"] and f"tuitrain resume {run.name}" in ended["error"]
    checkpoints = list((run / "output").glob("checkpoint-*"))
    assert len(checkpoints) == 1 and (checkpoints[0] / "tuitrain.json").exists()
    assert "time-limit warning" in (run / "logs" / f"slurm-{job}.out").read_text()
    status = cli("status", run.name, runs_dir=runs_dir)
    assert "time-limit warning" in status.stdout and f"job {job}" in status.stdout


def test_sbatch_refusals_are_one_line(slurm_cluster: Cluster, runs_dir: Path) -> None:
    text = check_clean(cli("submit", "demo", "--partition", "nope", runs_dir=runs_dir),
                       "sbatch refused the job", "nope")
    assert len(text.strip().splitlines()) == 1, text
    # the test cluster has no GPUs (no gres): sbatch refuses a job that asks for one
    text = check_clean(cli("submit", "demo", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[0]",
                           runs_dir=runs_dir), "sbatch refused the job", "the job asks 1 node(s) for 1 GPU(s)")
    assert len(text.strip().splitlines()) == 1, text
    assert list(runs_dir.iterdir()) == []  # a refused job leaves no run behind


def test_missing_sbatch_is_one_line(runs_dir: Path, tmp_path: Path, monkeypatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    text = check_clean(cli("submit", "demo", runs_dir=runs_dir), "`sbatch` is not on PATH")
    assert len(text.strip().splitlines()) == 1, text
    assert list(runs_dir.iterdir()) == []


def test_a_job_that_cannot_start_tuitrain_ends_its_run(slurm_cluster: Cluster, runs_dir: Path) -> None:
    """No tuitrain where the job looks for it: the job fails before any agent writes a word; `logs --follow` still
    ends, and the run is recorded failed, pointing at the job's own output."""
    run, job = submit(runs_dir, *FAST, "--python", "/nonexistent/bin/python3")
    follow = cli("logs", run.name, "--follow", runs_dir=runs_dir, timeout=60)
    assert follow.returncode == 0, follow.stdout + follow.stderr
    ended = record(run)
    assert ended["status"] == "failed", ended
    assert ended["error"] == (f"Slurm job {job} ended FAILED before tuitrain started on its nodes "
                              f"(see logs/slurm-{job}.out)")
    assert "/nonexistent/bin/python3" in (run / "logs" / f"slurm-{job}.out").read_text()
    row = runs_row(runs_dir, run)
    assert "failed" in row and f"job {job} FAILED" in row, row


def test_demo_across_two_nodes(slurm_two_nodes: Cluster, runs_dir: Path) -> None:
    """One rank on each of two nodes (network namespaces with their own address and hostname): each node's agent
    plans its machine_rank from SLURM_NODEID and meets the first node at its address, over net0."""
    run, job = submit(runs_dir, *FAST, "--set", "distributed.strategy=ddp", "--set", "distributed.num_machines=2",
                      "--set", "distributed.network_interface=net0", "--partition", TWO_NODES, "--time", "10")
    ended = wait_until_ended(run, 180)
    assert ended["status"] == "finished", (ended, (run / "logs" / "launcher.log").read_text()[-2000:],
                                           (run / "logs" / "machine-1.log").read_text()[-2000:])
    assert ended["num_machines"] == 2 and ended["num_processes"] == 2 and ended["slurm"]["host"] == "node1"
    hosts = {json.loads(p.read_text())["rank"]: json.loads(p.read_text())["host"] for p in (run / "ranks").glob("*.json")}
    assert hosts == {0: "node1", 1: "node2"}
    assert slurm_two_nodes.namespace_nodes["node1"] in (run / "accelerate.yaml").read_text()  # main_process_ip
    for rank in (0, 1):
        assert "rank" in (run / "logs" / f"rank-{rank}.log").read_text()
    # node 2's agent writes its last line after its ranks ended, maybe after the main node recorded the end
    wait_for(lambda: "run finished" in (run / "logs" / "machine-1.log").read_text(), 30, "node 2's agent to finish")
    assert sorted(losses(run)) == list(range(1, 9))
    # each node's manifest, written by its agent there, is in the run directory (issue 24)
    assert {m: facts["host"]["name"] for m, facts in scan_manifests(run)[0].items()} == {0: "node1", 1: "node2"}
    assert wait_for(lambda: row_with(runs_dir, run, f"job {job} COMPLETED"), 30, "COMPLETED")


def test_a_script_runs_in_its_own_folder_under_slurm(slurm_cluster: Cluster, runs_dir: Path, tmp_path: Path) -> None:
    """Script mode in a job: the script starts in its profile's folder, wherever `submit` was typed."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "where.py").write_text('import os\nprint("working in", os.getcwd(), flush=True)\n')
    profile = project / "train.toml"
    profile.write_text('[script]\npath = "where.py"\n\n[hardware]\naccelerator = "cpu"\n')
    result = cli("submit", str(profile), runs_dir=runs_dir, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    run = runs_dir / result.stdout.strip()
    ended = wait_until_ended(run, 120)
    assert ended["status"] == "finished", ended
    assert f"working in {project}\n" in (run / "logs" / "rank-0.log").read_text()
