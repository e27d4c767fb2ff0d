"""Slurm's SIGTERM to a job's steps (as preemption with a GraceTime sends it; here `scancel --signal=TERM`) on a real
one-node cluster (tests/slurm_cluster.py): the ranks save a checkpoint and stop, the run says why, and a job Slurm
requeues (`scontrol requeue`) resumes from that checkpoint. tuitrain's own `stop --now` still ends the ranks at once (tests/test_slurm.py's
`--timeout 0` stop). The stop at the SIGTERM is checked on the requeued job's first end; what a job without --requeue
is told instead ("`tuitrain resume RUN` submits a job that continues") is checked by test_slurm.py's time-limit
warning, the other stop that ends a job's run."""

from __future__ import annotations

from pathlib import Path

from conftest import FAST, cli, losses, record, wait_for, wait_until_ended
from slurm_cluster import Cluster
from test_script_mode_runs import data_args, script_profile, toml_list

LONG = ["--set", "training.eval_steps=100000", "--set", "training.save_steps=100000",
        "--set", "training.max_steps=100000"]  # saves on request only


def submit(runs: Path, *args: str) -> tuple[Path, str]:
    result = cli("submit", "demo", *FAST, *LONG, "--time", "10", *args, runs_dir=runs)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = runs / result.stdout.strip()
    return run_dir, str(record(run_dir)["slurm"]["job_id"])


def complete_checkpoints(run: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in (run / "output").glob("checkpoint-*")
                  if (p / "tuitrain.json").exists())


def test_a_requeued_job_resumes_from_its_checkpoint(slurm_cluster: Cluster, runs_dir: Path) -> None:
    run, job = submit(runs_dir, "--requeue")
    assert "#SBATCH --requeue" in (run / "slurm.sbatch").read_text().splitlines()
    wait_for(lambda: len(losses(run)) >= 2, 120, "training to start")
    sent = slurm_cluster.client("scancel", "--signal=TERM", job, timeout=20)  # preempted
    assert sent.returncode == 0, sent.stderr
    ended = wait_for(lambda: record(run)["status"] == "stopped" and record(run), 60, "the checkpoint and the stop")
    assert ended["error"] == (f"stopped at Slurm's SIGTERM (job {job}: preempted, requeued or scancel --signal=TERM) "
                              f"after saving a checkpoint; if Slurm requeues job {job}, it resumes from it"), ended
    saved = complete_checkpoints(run)
    assert len(saved) == 1 and saved[0] == max(losses(run)), (saved, max(losses(run)))
    assert "SIGTERM from Slurm" in (run / "logs" / "rank-0.log").read_text()
    assert ended["exit_codes"] == {"launcher": 0, "0": 0}, ended["exit_codes"]
    status = cli("status", run.name, runs_dir=runs_dir)
    assert "Slurm's SIGTERM" in status.stdout, status.stdout
    requeued = slurm_cluster.client("scontrol", "requeue", job, timeout=20)
    assert requeued.returncode == 0, requeued.stderr
    first = wait_for(lambda: record(run) if record(run).get("slurm", {}).get("requeued") else None, 120,
                     "the job to run again")
    (again,) = first["slurm"]["requeued"]
    assert again["previous"] == "stopped" and "Slurm's SIGTERM" in again["error"], again
    assert f"if Slurm requeues job {job}, it resumes from it" in again["error"]
    step = complete_checkpoints(run)[0]
    assert again["resume_from"] == str(run / "output" / f"checkpoint-{step}")
    # the same job, the same run: it continues the step
    wait_for(lambda: max(losses(run)) > step + 1, 120, "training to continue")
    log = (run / "logs" / "launcher.log").read_text()
    assert f"Slurm requeued job {job} (restart 1): resuming from" in log
    assert record(run)["slurm"]["job_id"] == job and record(run)["status"] in ("running", "stopping")
    stopped = cli("stop", run.name, runs_dir=runs_dir, timeout=120)
    assert stopped.returncode == 0 and record(run)["status"] == "stopped", stopped.stdout + stopped.stderr
    assert record(run)["error"].startswith("stopped on request")  # a stop asked by tuitrain is no Slurm SIGTERM
    begins = [e["step"] for e in _events(run) if e["event"] == "train_begin"]
    assert begins[0] == 0 and begins[-1] == step, begins


def test_a_trainer_script_saves_and_stops_at_slurms_sigterm_then_resumes(slurm_cluster: Cluster, runs_dir: Path,
                                                                       tmp_path: Path) -> None:
    """Script mode under Slurm: the user's own Trainer script, unchanged, gets the same save-then-stop
    at the preemption signal as the engine (through the rank hook), and resume passes it the checkpoint."""
    args = [*data_args(), "--output_dir", "out", "--max_steps", "100000", "--save_steps", "100000", "--step_sleep", "0.05"]
    profile = script_profile(tmp_path / "proj", "mrpc_trainer.py", args, 1)
    result = cli("submit", str(profile), "--time", "10", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run = runs_dir / result.stdout.strip()
    job = str(record(run)["slurm"]["job_id"])
    wait_for(lambda: len(losses(run)) >= 2, 180, "the script's training to start")
    assert slurm_cluster.client("scancel", "--signal=TERM", job, timeout=20).returncode == 0
    ended = wait_until_ended(run, 90)
    assert ended["status"] == "stopped" and "Slurm's SIGTERM" in (ended["error"] or ""), ended
    assert "SIGTERM from Slurm" in (run / "logs" / "rank-0.log").read_text()
    out = profile.parent / "out"
    saved = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*") if (p / "tuitrain.json").exists())
    assert len(saved) == 1 and saved[0] == max(losses(run)), (saved, max(losses(run)))

    shorter = toml_list([*data_args(), "--output_dir", "out", "--max_steps", str(saved[0] + 2)])
    resumed = cli("resume", run.name, "--set", f"script.args={shorter}", runs_dir=runs_dir)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    child = runs_dir / resumed.stdout.strip()
    assert record(child)["slurm"]["job_id"] not in (None, job)  # a new job
    assert record(child)["resume_from"] == str(out / f"checkpoint-{saved[0]}")
    assert wait_until_ended(child, 180)["status"] == "finished", record(child)
    assert sorted(losses(child)) == [saved[0] + 1, saved[0] + 2]


def _events(run: Path) -> list[dict]:
    from conftest import events

    return events(run)
