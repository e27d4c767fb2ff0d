"""Issue 26: a run that hangs is found (heartbeats, tuitrain.runs.view.hang), shown (`status`, `runs`), explained
(`tuitrain stacks` and its digest) and acted on ([run] on_hang).

The real runs are a user's Trainer script, written here, under tuitrain's hook: a tiny linear model, 2 gloo ranks
on the CPU. Rank 1 sleeps for ever at the end of step 5 while rank 0 goes on into tuitrain's control broadcast (a
collective). With `[run] hang_after = 4`, the run is marked hung? once its ranks have not moved for 4 s: the
supervisor judges the heartbeats every 2 s, so within about 6 s of the hang on an idle machine."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
import pytest

from conftest import FINAL, cli, record, wait_for, wait_until_ended
from tuitrain.backends import settle_runs
from tuitrain.rundir.heartbeat import Beat, read_beats
from tuitrain.rundir.layout import PHASE_BETWEEN, PHASE_EVALUATING, PHASE_SAVING, PHASE_STARTING, PHASE_STEP, RunPaths
from tuitrain.runs.view.hang import HANG_FLOOR, SLOW_FLOOR, describe, judge, run_hang
from tuitrain.runs.view.live import RunsWatcher
from tuitrain.runs.view.stacks import Frame, Thread, describe_thread, digest, parse_stacks, read_digest

HANG_AFTER = 4
SCRIPT = '''
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
    def __init__(self, sleep=0.0, worker_hang_after=-1):
        self.sleep, self.worker_hang_after, self.loaded = sleep, worker_hang_after, 0

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        time.sleep(self.sleep)
        worker = torch.utils.data.get_worker_info()
        if worker is not None and worker.id == 1 and self.worker_hang_after >= 0:
            self.loaded += 1
            if self.loaded > self.worker_hang_after:
                time.sleep(3600)  # the worker's hang
        x = torch.randn(4, generator=torch.Generator().manual_seed(i))
        return {"x": x, "y": x.sum()}


class Pace(TrainerCallback):
    def __init__(self, hang_at, eval_sleep):
        self.hang_at, self.eval_sleep = hang_at, eval_sleep

    def on_step_end(self, args, state, control, **kwargs):
        time.sleep(0.05)
        if state.global_step == self.hang_at and int(os.environ.get("RANK", "0")) == 1:
            time.sleep(3600)  # the hang

    def on_prediction_step(self, args, state, control, **kwargs):
        time.sleep(self.eval_sleep)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hang_at", type=int, default=-1)
    parser.add_argument("--max_steps", type=int, default=100000)
    parser.add_argument("--eval_steps", type=int, default=0)
    parser.add_argument("--eval_rows", type=int, default=64)
    parser.add_argument("--eval_sleep", type=float, default=0.0)
    parser.add_argument("--data_sleep", type=float, default=0.0)  # rank 1's, for each row it loads
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--worker_hang_after", type=int, default=-1)  # rows data loader worker 1 loads, then sleeps
    parser.add_argument("--worker_hang_rank", type=int, default=-1)  # whose worker 1 sleeps (-1: every rank's)
    a = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    args = TrainingArguments(output_dir="out", max_steps=a.max_steps, per_device_train_batch_size=4,
                             per_device_eval_batch_size=4, logging_steps=1, save_strategy="no", report_to="none",
                             eval_strategy="steps" if a.eval_steps else "no", eval_steps=a.eval_steps or None,
                             use_cpu=True, disable_tqdm=True, dataloader_num_workers=a.workers)
    rows = Rows(a.data_sleep if rank == 1 else 0.0, a.worker_hang_after if a.worker_hang_rank in (-1, rank) else -1)
    trainer = Trainer(model=Tiny(), args=args, train_dataset=rows,
                      eval_dataset=torch.utils.data.Subset(rows, range(a.eval_rows)),
                      callbacks=[Pace(a.hang_at, a.eval_sleep)])
    trainer.train()


if __name__ == "__main__":
    main()
'''
SLEEP_LINE = next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if "# the hang" in line)
WORKER_SLEEP_LINE = next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if "# the worker's hang" in line)


# -- the rule, with made-up heartbeats ---------------------------------------------------------------------------

def beat(rank: int, phase: str = PHASE_STEP, age: float = 0.0, step_seconds: float | None = 1.0, **slow: float) -> Beat:
    return Beat(rank=rank, phase=phase, time=1000.0 - age, since=1000.0 - age, step=10,
                step_seconds=step_seconds, slow_seconds=dict(slow))


def test_the_limit_is_learned_from_the_step_time_above_a_floor():
    assert not judge([beat(0, age=HANG_FLOOR - 1), beat(1, age=1)], 1000.0).hung  # 10 x 1 s is below the floor
    hang = judge([beat(0, age=HANG_FLOOR + 1), beat(1, age=1)], 1000.0)
    assert hang.hung and [s.rank for s in hang.stalled] == [0] and hang.limit_from == "floor"
    slow = [beat(0, age=150, step_seconds=20.0), beat(1, age=150, step_seconds=20.0)]
    assert not judge(slow, 1000.0).hung  # 10 x 20 s = 200 s
    hang = judge([beat(0, age=201, step_seconds=20.0), beat(1, age=201, step_seconds=20.0)], 1000.0)
    assert hang.hung and hang.limit == 200.0 and hang.limit_from == "learned" and hang.since == 799.0


def test_hang_after_sets_the_step_limit():
    hang = judge([beat(0, age=6), beat(1, age=6)], 1000.0, hang_after=5)
    assert hang.hung and hang.limit == 5 and hang.limit_from == "[run] hang_after"
    assert not judge([beat(0, age=4)], 1000.0, hang_after=5).hung


def test_evaluation_saving_start_up_and_a_first_step_are_judged_apart():
    for phase in (PHASE_EVALUATING, PHASE_SAVING, PHASE_STARTING):
        assert not judge([beat(0, phase, age=SLOW_FLOOR - 1)], 1000.0, hang_after=5).hung, phase
        assert judge([beat(0, phase, age=SLOW_FLOOR + 1)], 1000.0, hang_after=5).hung, phase
    # a save that once took 400 s may take three times that
    assert not judge([beat(0, PHASE_SAVING, age=1100, saving=400.0)], 1000.0, hang_after=5).hung
    # no step has ended yet on any rank: the first step may compile
    assert not judge([beat(0, age=300, step_seconds=None), beat(1, age=300, step_seconds=None)], 1000.0,
                     hang_after=5).hung
    assert judge([beat(0, PHASE_BETWEEN, age=6)], 1000.0, hang_after=5).hung


def test_a_stopped_rank_is_stalled_at_once_and_says_so():
    hang = judge([beat(0, age=0), beat(1, age=0)], 1000.0, states={1: "stopped", 0: "sleeping"})
    assert hang.hung and [(s.rank, s.state) for s in hang.stalled] == [(1, "stopped")]


def test_a_straggler_is_named():
    hang = judge([beat(0, step_seconds=0.5), beat(1, step_seconds=2.0), beat(2, step_seconds=0.5)], 1000.0)
    assert not hang.hung and [(s.rank, s.others_seconds) for s in hang.stragglers] == [(1, 0.5)]
    assert not judge([beat(0, step_seconds=0.01), beat(1, step_seconds=0.03)], 1000.0).stragglers  # noise


def test_the_rank_the_others_wait_for_is_told_by_its_time_between_steps():
    """Ranks that all-reduce take the same time a step; the one slow to load its next batch takes longer between."""
    def timed(rank: int, between: float) -> Beat:
        return Beat(rank=rank, phase=PHASE_STEP, time=999.0, since=999.0, step=10, step_seconds=0.5,
                    between_seconds=between)

    hang = judge([timed(0, 0.01), timed(1, 0.4), timed(2, 0.02)], 1000.0)
    assert [(s.rank, s.part, s.step_seconds) for s in hang.stragglers] == [(1, "between", 0.4)], hang
    assert describe(hang, 1000.0) == [("straggler: rank 1 takes 0.40s between steps (its next batch, its callbacks), "
                                       "the others 0.01s: they wait for it in every step")]
    assert not judge([timed(0, 0.01), timed(1, 0.03)], 1000.0).stragglers  # noise


FAULTHANDLER = """Thread 0x00007f2cfd9776c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007f2cfe5bab80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2801 in all_reduce
  File "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "/venv/lib/python3.11/site-packages/transformers/trainer.py", line 2410 in _inner_training_loop
  File "/home/me/train.py", line 90 in main
  File "/home/me/train.py", line 99 in <module>
"""


def test_the_digest_names_the_rank_that_is_elsewhere_first():
    threads = parse_stacks(FAULTHANDLER)
    assert [len(t.frames) for t in threads] == [2, 5] and threads[1].current
    waiting = describe_thread(threads[1])
    assert waiting == "waiting in all_reduce (trainer.py:2410 → distributed_c10d.py:2801)"
    asleep = describe_thread(Thread("main", (Frame(__file__, SLEEP_LINE, "on_step_end"), Frame(__file__, 1, "<module>"))))
    assert asleep.startswith(f"in your script, test_hangs.py line {SLEEP_LINE}")
    assert digest({0: waiting, 1: asleep, 2: waiting, 3: waiting}) == [f"rank 1: {asleep}", f"ranks 0, 2, 3: {waiting}"]
    assert digest({0: waiting, 1: asleep}) == [f"rank 1: {asleep}", f"rank 0: {waiting}"]


# -- real runs ---------------------------------------------------------------------------------------------------

def script_run(tmp_path: Path, runs_dir: Path, args: list[str], run: str, processes: int = 2) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "train.py").write_text(SCRIPT)
    (folder / "train.toml").write_text(
        f'[script]\npath = "train.py"\nargs = {json.dumps(args)}\n\n[hardware]\naccelerator = "cpu"\n\n'
        f'[distributed]\nstrategy = "ddp"\nnum_processes = {processes}\n\n[run]\n{run}\n')
    started = cli("run", str(folder / "train.toml"), "--detach", runs_dir=runs_dir)
    assert started.returncode == 0, started.stdout + started.stderr
    return runs_dir / started.stdout.strip()


def status_json(run_dir: Path, runs_dir: Path) -> dict:
    out = cli("status", run_dir.name, "--json", runs_dir=runs_dir)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def processes_left(rec: dict) -> list[psutil.Process]:
    from tuitrain.runs.liveness import live_processes

    return list(live_processes(rec).values())


def test_a_rank_asleep_is_found_hung_and_its_stacks_say_where_each_rank_is(tmp_path, runs_dir):
    run_dir = script_run(tmp_path, runs_dir, ["--hang_at", "5"], f"hang_after = {HANG_AFTER}")
    # the supervisor takes the stacks once by itself when it finds the hang
    wait_for(lambda: (run_dir / "stacks" / "digest.json").exists() or record(run_dir)["status"] in FINAL, 240,
             "the supervisor to find the hang and take the stacks")
    summary = status_json(run_dir, runs_dir)
    assert summary["hang"]["hung"], summary
    assert {s["rank"] for s in summary["hang"]["stalled"]} == {0, 1}
    assert summary["stacks_digest"][0].startswith("rank 1: in your script, train.py line"), summary["stacks_digest"]
    said = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "status     hung?" in said and "hung? ranks 0, 1 made no progress" in said, said
    listing = cli("runs", runs_dir=runs_dir).stdout
    assert "hung?" in listing.splitlines()[1], listing
    rows, _ = RunsWatcher(runs_dir, settle_runs).poll()  # the app's runs table asks the same verdict
    assert [row.status for row in rows] == ["hung?"], rows

    stacks = cli("stacks", run_dir.name, runs_dir=runs_dir)
    assert stacks.returncode == 0, stacks.stderr
    lines = stacks.stdout.splitlines()
    digest_at = lines.index("digest")
    assert lines[digest_at + 1] == f"  rank 1: in your script, train.py line {SLEEP_LINE} `time.sleep(…)`", stacks.stdout
    assert lines[digest_at + 2].startswith("  rank 0: waiting in broadcast ("), stacks.stdout
    assert "distributed_c10d.py" in lines[digest_at + 2]
    assert "on_step_end train.py" in stacks.stdout and "broadcast distributed_c10d.py" in stacks.stdout  # side by side
    for rank in (0, 1):
        assert "most recent call first" in (run_dir / "stacks" / f"rank-{rank}.txt").read_text()
    as_json = json.loads(cli("stacks", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    assert as_json["digest"][0].startswith("rank 1: in your script")

    # frozen: the stop says what it waits for, and what ends the run instead
    rec = record(run_dir)
    rank1 = rec["processes"]["rank 1"]["pid"]
    os.kill(rank1, signal.SIGSTOP)
    try:
        wait_for(lambda: psutil.Process(rank1).status() == psutil.STATUS_STOPPED, 30, "rank 1 to be stopped")
        verdict = run_hang(RunPaths(run_dir), record(run_dir))
        assert verdict is not None and [(s.rank, s.state) for s in verdict.stalled if s.state] == [(1, "stopped")]
        stop = cli("stop", run_dir.name, runs_dir=runs_dir)
        assert stop.returncode == 0, stop.stderr
        assert f"rank 1 (pid {rank1}) is stopped (SIGSTOP)" in stop.stderr, stop.stderr
        assert f"tuitrain stop --now {run_dir.name}" in stop.stderr, stop.stderr
        assert "is stopped (SIGSTOP)" in cli("status", run_dir.name, runs_dir=runs_dir).stdout
    finally:
        assert cli("stop", "--now", run_dir.name, runs_dir=runs_dir).returncode == 0
    rec = wait_until_ended(run_dir)
    assert rec["status"] == "killed", rec
    wait_for(lambda: not processes_left(rec), 30, "every process of the run to end")


@pytest.mark.parametrize("on_hang", ["stop", "kill"])
def test_on_hang_ends_the_run_with_the_digest_as_its_cause(tmp_path, runs_dir, on_hang):
    run_dir = script_run(tmp_path, runs_dir, ["--hang_at", "5"], f'hang_after = {HANG_AFTER}\non_hang = "{on_hang}"')
    rec = wait_until_ended(run_dir, 300)
    assert rec["status"] == "failed" and rec["error"].startswith("hung: ranks 0, 1 made no progress"), rec
    assert f"rank 1: in your script, train.py line {SLEEP_LINE} `time.sleep(…)`" in rec["error"], rec["error"]
    assert "rank 0: waiting in broadcast" in rec["error"], rec["error"]
    wait_for(lambda: not processes_left(rec), 30, "every process of the run to end")
    launcher_log = (run_dir / "logs" / "launcher.log").read_text()
    assert f'on_hang = "{on_hang}"' in launcher_log, launcher_log[-2000:]


def test_a_slow_evaluation_is_never_taken_for_a_hang(tmp_path, runs_dir):
    # each evaluation is one batch a rank that takes 6 s without a heartbeat, more than the 4 s a step may take
    run_dir = script_run(tmp_path, runs_dir, ["--max_steps", "8", "--eval_steps", "4", "--eval_sleep", "6",
                                              "--eval_rows", "8"], f"hang_after = {HANG_AFTER}")
    paths = RunPaths(run_dir)
    seen = []
    phases = set()

    def ended() -> bool:
        phases.update(b.phase for b in read_beats(paths).values())
        rec = record(run_dir)
        verdict = run_hang(paths, rec)
        if verdict is not None:
            seen.append(verdict)
        return rec["status"] in FINAL

    wait_for(ended, 300, "the run to end")
    assert record(run_dir)["status"] == "finished", record(run_dir)
    assert seen and not any(v.hung for v in seen), [v for v in seen if v.hung]
    assert PHASE_EVALUATING in phases, phases  # it was looked at while it evaluated
    log = (run_dir / "logs" / "launcher.log").read_text()
    assert "hung?" not in log, log[-2000:]


def test_a_rank_slow_to_load_its_data_is_named_a_straggler_in_status(tmp_path, runs_dir):
    """Rank 1 sleeps 0.05 s for each row it loads (0.2 s a batch of 4); rank 0 waits for it in every step."""
    run_dir = script_run(tmp_path, runs_dir, ["--data_sleep", "0.05"], "")

    def named() -> list[str]:
        if record(run_dir)["status"] in FINAL:
            return ["ended"]
        return [line for line in status_json(run_dir, runs_dir).get("hang_lines") or [] if line.startswith("straggler")]

    try:
        said = wait_for(named, 240, "status to name a straggler")
        assert said[0].startswith("straggler: rank 1 takes ") and "between steps" in said[0], said
        assert not status_json(run_dir, runs_dir)["hang"]["hung"]
        assert "straggler: rank 1 takes" in cli("status", run_dir.name, runs_dir=runs_dir).stdout
    finally:
        cli("stop", "--now", run_dir.name, runs_dir=runs_dir)
    rec = wait_until_ended(run_dir)
    wait_for(lambda: not processes_left(rec), 30, "every process of the run to end")


def test_a_data_loader_worker_that_hangs_is_found_in_the_workers_stack(tmp_path, runs_dir):
    """One rank, two data loader workers (forked); worker 1 sleeps for ever after its 20th row, so the rank waits for
    its next batch. The digest names the worker and the line it sleeps on, from the worker's own stack."""
    run_dir = script_run(tmp_path, runs_dir, ["--workers", "2", "--worker_hang_after", "20"],
                         f"hang_after = {HANG_AFTER}", processes=1)
    try:
        kept = wait_for(lambda: read_digest(RunPaths(run_dir)) or record(run_dir)["status"] in FINAL, 240,
                        "the supervisor to find the hang and take the stacks")
        assert kept is not True, record(run_dir)
        said = f"rank 0: waiting for its data loader; worker 1 in train.py line {WORKER_SLEEP_LINE} `time.sleep(…)`"
        assert kept["lines"] == [said], kept
        workers = sorted((run_dir / "stacks").glob("rank-0-worker-*.txt"))
        assert len(workers) == 2 and any("__getitem__" in w.read_text() for w in workers), workers
        shown = cli("stacks", run_dir.name, runs_dir=runs_dir)
        assert shown.returncode == 0, shown.stderr
        assert "(+2 data loader workers, in stacks/ too)" in shown.stdout, shown.stdout
        assert f"  rank 0: waiting for its data loader; worker 1 in train.py line {WORKER_SLEEP_LINE}" in shown.stdout
    finally:
        cli("stop", "--now", run_dir.name, runs_dir=runs_dir)
    rec = wait_until_ended(run_dir)
    wait_for(lambda: not processes_left(rec), 30, "every process of the run to end")


def test_the_heartbeat_is_written_by_the_engine_too(finished_run):
    beats = sorted((finished_run / "heartbeats").glob("rank-*.json"))
    assert [b.name for b in beats] == ["rank-0.json"]
    data = json.loads(beats[0].read_text())
    assert data["phase"] == "after training" and data["step"] > 0 and data["step_seconds"] > 0, data


def test_tuitrain_report_moves_the_heartbeat(tmp_path, monkeypatch):
    from tuitrain.engine import rank_io
    from tuitrain.script import api, rank

    run = RunPaths(tmp_path / "run")
    run.root.mkdir()
    monkeypatch.setattr(rank, "_current", None)
    monkeypatch.setattr(rank_io, "_heartbeat", None)
    rank.start(run.root, 0)
    for step in (1, 2, 3):
        api.report(step, loss=1.0)
    beats = wait_for(lambda: {b.step for b in read_beats(run).values()} == {3} and read_beats(run), 30, "rank 0's beat")
    assert beats[0].phase == PHASE_BETWEEN and beats[0].step_seconds is not None


def test_a_lone_ranks_backward_is_not_said_to_wait_for_ddp():
    """DDP all-reduces the gradients in backward only among several ranks: a one-process run's digest must not say
    its rank waits there for the others (seen on a one-process run over SSH)."""
    backward = Thread("main", (Frame("/venv/lib/python3.11/site-packages/torch/autograd/graph.py", 825,
                                     "_engine_run_backward"), Frame("/home/me/train.py", 90, "main")), current=True)
    said = describe_thread(backward)
    assert said == "in backward (train.py:90 → graph.py:825)"
    assert digest({0: said}) == [f"rank 0: {said}"]
    assert digest({0: said, 1: said}) == [f"ranks 0, 1: {said}, where DDP all-reduces the gradients"]


def test_the_stacks_json_reads_back_as_it_was_written(tmp_path):
    """`tuitrain stacks --json` (runs.view.stacks_json) is what the app reads from another workstation: one form, both ways."""
    from tuitrain.runs.view.stacks import RankStacks
    from tuitrain.runs.view.stacks_json import ranks_from_json, stacks_json

    threads = parse_stacks(FAULTHANDLER)
    taken = {0: RankStacks(0, 41, "faulthandler", FAULTHANDLER, threads=threads), 1: RankStacks(1, None, "", state="stopped")}
    summary = {"lines": ["rank 1: stopped"], "ranks": {"0": "waiting in all_reduce", "1": "stopped"}}
    data = json.loads(json.dumps(stacks_json(RunPaths(tmp_path / "r1"), taken, summary)))
    back, where = ranks_from_json(data["ranks"])
    assert where == {0: "waiting in all_reduce", 1: "stopped"} and data["digest"] == ["rank 1: stopped"]
    assert [(s.rank, s.pid, s.how, s.state, s.threads) for s in back.values()] == \
        [(0, 41, "faulthandler", None, threads), (1, None, "", "stopped", ())]


@pytest.mark.parametrize("kept", ['{"time": "1795000000", "lines": []}', '{"time": 1.0, "lines": "rank 0"}', "[]", "",
                                  '{"time": 1.0, "lines": [3]}'])
def test_a_damaged_digest_reads_as_none_and_a_written_one_as_written(tmp_path, kept):
    """stacks/digest.json is what `status` and the monitor show of a hung run: one that does not check (a disk's
    damage, a hand edit) is no digest, never a float('…') that ends `status` with a traceback."""
    from tuitrain.runs.view.stacks import RankStacks, read_digest, write_digest

    paths = RunPaths(tmp_path / "r1")
    paths.stacks.mkdir(parents=True)
    paths.stacks_digest.write_text(kept)
    assert read_digest(paths) is None
    written = write_digest(paths, {0: RankStacks(0, 41, "faulthandler", FAULTHANDLER, threads=parse_stacks(FAULTHANDLER))})
    assert read_digest(paths) == json.loads(json.dumps(written))
