"""Issue 37, runs that heal themselves: `[run] restarts` starts a run whose rank crashed again from its latest
complete checkpoint, in its own run directory, and `[run] on_oom = "split_batch"` survives an out-of-memory.

Real runs (the demo, gloo ranks on the CPU). A rank fails through the engine's test-only fault
(tuitrain.engine.faults_for_tests, `TUITRAIN_TEST_RAISE`): the real exception (torch's own OutOfMemoryError too)
raised at the end of a step, on the attempts a test names."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import FAST, TWO_RANKS, cli, events, losses, patient, record, wait_for, wait_until_ended
from tuitrain.engine.faults_for_tests import RAISE_ENV

pytestmark = pytest.mark.slow

STEPS = 60
EXACT = [*FAST, "--set", f"training.max_steps={STEPS}", "--set", "training.save_steps=10",
         "--set", "training.eval_strategy=no"]


def restarting(restarts: int = 2, backoff: float = 0.5) -> list[str]:
    return ["--set", f"run.restarts={restarts}", "--set", f"run.restart_backoff={backoff}"]


def fault(monkeypatch: pytest.MonkeyPatch, error: str, step: int, rank: int = 0, attempts: list[int] | None = None,
          **more: int) -> None:
    spec = {"raise": error, "step": step, "rank": rank, **more}
    if attempts is not None:
        spec["attempts"] = attempts
    monkeypatch.setenv(RAISE_ENV, json.dumps(spec))


def started(runs_dir: Path, *args: str) -> Path:
    ran = cli("run", "demo", "--detach", *args, runs_dir=runs_dir)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return runs_dir / ran.stdout.strip()


def attempt_losses(run_dir: Path) -> list[dict[int, float]]:
    """The losses each attempt logged: events.jsonl keeps every attempt's, a `restart` line between them."""
    attempts: list[dict[int, float]] = [{}]
    for event in events(run_dir):
        if event["event"] == "restart":
            attempts.append({})
        elif event["event"] == "log" and "loss" in event:
            attempts[-1][event["step"]] = event["loss"]
    return attempts


def test_a_rank_that_crashes_once_is_restarted_and_trains_as_an_uninterrupted_run(runs_dir, monkeypatch):
    """Rank 1 crashes at step 38 of the first attempt; the second starts from checkpoint-20. Up to its crash the
    first attempt is the run that never crashed: the second logs its losses over steps 21-37, across the end of an
    epoch (2 ranks x 32 rows: the demo's 2000 rows are 32 steps)."""
    fault(monkeypatch, "RuntimeError", 38, rank=1, attempts=[1])
    ran = cli("run", "demo", *EXACT, "--set", "training.max_steps=40", "--set", "training.save_steps=20", *TWO_RANKS,
              *restarting(), runs_dir=runs_dir)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "restarted: attempt 2 from checkpoint-20" in ran.stdout, ran.stdout
    (run_dir,) = list(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "finished" and rec["attempt"] == 2, rec
    (restart,) = rec["restarts"]
    assert restart["failed_rank"] == 1 and "RuntimeError" in restart["error"], restart
    assert restart["resume_from"].endswith("checkpoint-20") and restart["counted"], restart
    assert rec["resume_from"] == restart["resume_from"]
    # the first attempt's logs are its own; the second's started afresh
    assert "a test's fault" in (run_dir / "attempts" / "1" / "logs" / "rank-1.log").read_text()
    assert "a test's fault" not in (run_dir / "logs" / "rank-1.log").read_text()
    assert "restarting: it crashed" in (run_dir / "attempts" / "1" / "logs" / "launcher.log").read_text()
    earlier = cli("logs", run_dir.name, "--attempt", "1", "--rank", "1", runs_dir=runs_dir)
    assert "a test's fault" in earlier.stdout, earlier.stdout + earlier.stderr
    assert "has no attempt 3 (its attempts: 1, 2" in cli("logs", run_dir.name, "--attempt", "3", runs_dir=runs_dir).stderr
    # the same losses as the attempt that had not crashed yet: bit-exact on the CPU after the first logged step
    assert sorted(losses(run_dir)) == list(range(1, 41))
    uninterrupted, got = attempt_losses(run_dir)
    assert set(range(1, 38)) <= set(uninterrupted) and sorted(got) == list(range(21, 41)), (uninterrupted, got)
    assert got[21] == pytest.approx(uninterrupted[21], abs=1e-4)
    for step in range(22, 38):
        assert got[step] == uninterrupted[step], (step, got[step], uninterrupted[step])
    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "attempt 2/3, restarted" in status and "from checkpoint-20 after rank 1" in status, status
    assert "attempt 1 (" in status and "RuntimeError" in status, status
    listed = cli("runs", runs_dir=runs_dir).stdout
    assert "attempt 2/3" in listed, listed


def test_a_damaged_latest_checkpoint_is_passed_over(runs_dir, monkeypatch):
    """The checkpoint is chosen again as the backoff ends: one damaged while the run waited is passed over, said,
    and trained and saved again whole."""
    fault(monkeypatch, "RuntimeError", 25, attempts=[1])
    # the backoff is the test's time to damage the checkpoint, once the decision is recorded
    run_dir = started(runs_dir, *EXACT, "--set", "training.max_steps=30", *restarting(backoff=patient(5)))
    decided = wait_for(lambda: (record(run_dir).get("restarts") or [None])[-1], 240, "the restart's decision")
    assert decided["resume_from"].endswith("checkpoint-20"), decided
    weights = Path(decided["resume_from"]) / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # a disk error, a copy cut short, while the run waits
    rec = wait_until_ended(run_dir, 240)
    assert rec["status"] == "finished", rec
    (restart,) = rec["restarts"]
    assert restart["resume_from"].endswith("checkpoint-10"), restart
    assert restart["skipped"] and restart["skipped"][0].startswith("checkpoint-20 (model.safetensors"), restart
    listing = {c["step"]: c for c in json.loads(cli("checkpoints", run_dir.name, "--json", runs_dir=runs_dir).stdout)}
    assert listing[20]["complete"] and listing[30]["complete"], listing
    assert "is no longer whole" in (run_dir / "logs" / "launcher.log").read_text()


def test_a_cause_that_would_fail_again_is_not_restarted(runs_dir, monkeypatch):
    fault(monkeypatch, "FileNotFoundError", 5)
    ran = cli("run", "demo", *EXACT, *restarting(), runs_dir=runs_dir)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (run_dir,) = list(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "failed" and not rec.get("restarts"), rec
    assert rec["not_restarted"] == "not restarted: a FileNotFoundError fails the same way from the same checkpoint"
    assert rec["not_restarted"] in cli("status", run_dir.name, runs_dir=runs_dir).stdout


def test_a_crash_loop_stops_restarting_and_says_so(runs_dir, monkeypatch):
    fault(monkeypatch, "RuntimeError", 15)  # every attempt, after checkpoint-10
    ran = cli("run", "demo", *EXACT, *restarting(restarts=3), runs_dir=runs_dir)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (run_dir,) = list(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "failed" and rec["attempt"] == 2, rec
    assert "no new checkpoint since the restart before it (a crash loop)" in rec["not_restarted"], rec
    assert "RuntimeError" in rec["error"]


def test_a_stop_during_the_backoff_stops(runs_dir, monkeypatch):
    fault(monkeypatch, "RuntimeError", 12)
    run_dir = started(runs_dir, *EXACT, *restarting(backoff=600))
    wait_for(lambda: record(run_dir).get("restarts"), 240, "the restart's decision")
    assert "restarts at" in cli("status", run_dir.name, runs_dir=runs_dir).stdout
    stop = cli("stop", run_dir.name, runs_dir=runs_dir)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    rec = wait_until_ended(run_dir, 60)
    assert rec["status"] == "stopped" and not rec.get("restarts"), rec
    assert "while waiting to restart, after: " in rec["error"] and "RuntimeError" in rec["error"], rec
    assert "continues from checkpoint-10" in rec["error"], rec


def test_an_out_of_memory_splits_the_batch_and_the_run_finishes(runs_dir, monkeypatch):
    fault(monkeypatch, "OutOfMemoryError", 12, batch_above=16)
    ran = cli("run", "demo", *EXACT, "--set", "training.max_steps=20", "--set", "run.on_oom=split_batch",
              "--set", "run.restart_backoff=0.5", runs_dir=runs_dir)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run_dir,) = list(runs_dir.iterdir())
    rec = record(run_dir)
    (restart,) = rec["restarts"]
    assert restart["batch"] == {"per_device_train_batch_size": [32, 16], "gradient_accumulation_steps": [1, 2]}
    assert not restart["counted"] and "OutOfMemoryError" in restart["error"], restart
    args = json.loads((run_dir / "training_args.json").read_text())
    assert (args["per_device_train_batch_size"], args["gradient_accumulation_steps"]) == (16, 2)
    assert "per_device_train_batch_size = 32" in (run_dir / "attempts" / "1" / "profile.toml").read_text()
    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "per_device_train_batch_size 32 → 16, gradient_accumulation_steps 1 → 2" in status, status


def test_an_out_of_memory_at_the_floor_fails_with_the_figures(runs_dir, monkeypatch):
    fault(monkeypatch, "OutOfMemoryError", 3)
    ran = cli("run", "demo", *EXACT, "--set", "training.per_device_train_batch_size=2", "--set",
              "run.on_oom=split_batch", "--set", "run.restart_backoff=0.5", runs_dir=runs_dir)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (run_dir,) = list(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["attempt"] == 2 and rec["status"] == "failed", rec
    assert "Tried to allocate 2.00 GiB" in rec["error"], rec
    assert 'per_device_train_batch_size = 1, the floor of on_oom = "split_batch"' in rec["not_restarted"], rec
    kinds = [e["event"] for e in events(run_dir)]
    assert kinds.count("restart") == 1


def test_without_on_oom_an_out_of_memory_is_not_restarted(runs_dir, monkeypatch):
    fault(monkeypatch, "OutOfMemoryError", 3)
    ran = cli("run", "demo", *EXACT, *restarting(), runs_dir=runs_dir)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    rec = record(next(runs_dir.iterdir()))
    assert not rec.get("restarts") and 'on_oom = "split_batch"' in rec["not_restarted"], rec



def test_a_restart_across_two_machines_starts_every_machine_again(hosts, tmp_path, runs_dir):
    """A rank that crashes on the other machine (the test's fault, which node2's python carries there: at step 6 of
    the first attempt, after checkpoint-4): home restarts the whole run, each machine in a node folder of its own.
    tests/test_multinode.py kills a rank there with SIGKILL."""
    from machine_profiles import free_port, write_profile
    from test_multinode import leftovers, run_cli

    faulty = tmp_path / "python-faulty"
    spec = json.dumps({"raise": "RuntimeError", "step": 6, "rank": 1, "attempts": [1]})
    faulty.write_text(f"#!/bin/sh\n{RAISE_ENV}='{spec}' exec {sys.executable} \"$@\"\n")
    faulty.chmod(0o755)
    path = write_profile(tmp_path, hosts, free_port(), machines=[{"host": "node1"}, {"host": "node2", "python": str(faulty)}])
    result = run_cli(hosts, runs_dir, "run", str(path), "--detach", "--no-doctor", "--set", "training.max_steps=10",
                     "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
                     "--set", "training.save_steps=4", *restarting(restarts=1))
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = runs_dir / result.stdout.strip()
    rec = wait_until_ended(run_dir, 400)
    assert rec["status"] == "finished" and rec["attempt"] == 2, rec
    (restart,) = rec["restarts"]
    assert restart["error"].startswith("node2: ") and "RuntimeError" in restart["error"], restart
    assert restart["failed_rank"] == 1 and restart["resume_from"].endswith("checkpoint-4"), restart
    assert all(m["node_dir"].endswith("-attempt-2") for m in rec["machines"]), rec["machines"]
    assert (run_dir / "attempts" / "1" / "logs" / "machine-1.log").exists()
    assert json.loads((run_dir / "ranks" / "rank-1.json").read_text())["exit_code"] == 0
    assert sorted(losses(run_dir)) == list(range(1, 11))
    wait_for(lambda: not leftovers(tmp_path), 60, "no process left on either host")


HANGING_SCRIPT = '''
import argparse
import os
import time

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x, y):
        return {"loss": ((self.lin(x).squeeze(-1) - y) ** 2).mean()}


class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        x = torch.randn(4, generator=torch.Generator().manual_seed(i))
        return {"x": x, "y": x.sum()}


class Hang(TrainerCallback):
    def __init__(self, at):
        self.at = at

    def on_step_end(self, args, state, control, **kwargs):
        time.sleep(0.05)
        if state.global_step == self.at and int(os.environ.get("RANK", "0")) == 1:
            time.sleep(3600)  # the hang


parser = argparse.ArgumentParser()
parser.add_argument("--hang_at", type=int, default=-1)
parser.add_argument("--resume", default=None)
a = parser.parse_args()
print("resuming from", a.resume, flush=True)
args = TrainingArguments(output_dir="out", max_steps=16, per_device_train_batch_size=4, logging_steps=1,
                         save_strategy="steps", save_steps=4, report_to="none", use_cpu=True, disable_tqdm=True)
trainer = Trainer(model=Tiny(), args=args, train_dataset=Rows(), callbacks=[Hang(-1 if a.resume else a.hang_at)])
trainer.train(resume_from_checkpoint=a.resume)
'''


def test_a_hung_script_restarts_and_is_told_its_checkpoint(tmp_path, runs_dir):
    """on_hang = "restart": the hung run is ended (its stacks taken) and started again; a script is told the
    checkpoint on its command line, as a resume tells it ([script] resume_arg)."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "train.py").write_text(HANGING_SCRIPT)
    (folder / "train.toml").write_text(
        '[script]\npath = "train.py"\nargs = ["--hang_at", "10"]\nresume_arg = "--resume"\n\n'
        '[hardware]\naccelerator = "cpu"\n\n[distributed]\nstrategy = "ddp"\nnum_processes = 2\n\n'
        '[run]\nhang_after = 4\non_hang = "restart"\nrestarts = 1\nrestart_backoff = 0.5\n')
    ran = cli("run", str(folder / "train.toml"), runs_dir=runs_dir)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run_dir,) = list(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "finished" and rec["attempt"] == 2, rec
    (restart,) = rec["restarts"]
    assert restart["error"].startswith("hung: "), restart
    assert restart["resume_from"] == str(folder / "out" / "checkpoint-8"), restart
    assert rec["argv"][-2:] == ["--resume", str(folder / "out" / "checkpoint-8")], rec["argv"]
    assert f"resuming from {folder / 'out' / 'checkpoint-8'}" in (run_dir / "logs" / "rank-0.log").read_text()
    assert 'on_hang = "restart"' in (run_dir / "attempts" / "1" / "logs" / "launcher.log").read_text()
