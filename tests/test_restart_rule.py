"""Issue 37: the restart rule (tuitrain.runs.keeper.restart_rule), an attempt's files and checkpoint
(tuitrain.runs.keeper.attempts) and how viewers say a restart (tuitrain.runs.view.attempts): data in, data out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuitrain.launch.script import argv_resuming
from tuitrain.rundir.events import progress
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.attempts import attempt_argv, attempt_machines, attempt_node_dir, keep_attempt, restart_settings
from tuitrain.runs.keeper.restart_rule import AttemptEnd, RestartSettings, backoff_seconds, split_batch, verdict
from tuitrain.runs.view.attempts import attempt_label, attempt_line, earlier_lines
from tuitrain.runs.view.live import EventsTail

RESTARTS = RestartSettings(restarts=2, backoff=10, backoff_max=60, on_oom="split_batch")


@given(st.integers(1, 4096), st.integers(1, 64))
def test_a_split_batch_keeps_the_effective_batch_down_to_the_floor(batch: int, accumulation: int) -> None:
    found = split_batch(batch, accumulation)
    if batch == 1:
        assert found is None
        return
    assert found is not None
    smaller, more = found
    assert smaller * more == batch * accumulation and 1 <= smaller < batch
    assert batch % 2 or smaller == batch // 2  # an even batch is halved


def test_the_backoff_doubles_up_to_its_cap() -> None:
    assert [backoff_seconds(RESTARTS, n) for n in range(5)] == [10, 20, 40, 60, 60]


CRASH = AttemptEnd("failed", "rank 1 (pid 9) exited with code 1: RuntimeError: boom", 1, {"1": 1})


@pytest.mark.parametrize("end, restart, words", [
    (CRASH, True, "restarting: it crashed (restart 1 of 2)"),
    (AttemptEnd("failed", "rank 0 (pid 9) killed by SIGKILL — out of memory? (see `dmesg`)", 0, {"0": -9}), True,
     "restarting: it crashed"),
    (AttemptEnd("failed", "NCCL's watchdog timed out all_reduce #2 after 600 s: a rank never joined it", 1), True,
     "restarting"),
    (AttemptEnd("failed", "node2: rank 1 (pid 9) killed by SIGKILL", 1), True, "restarting"),
    (AttemptEnd("stopped", None), False, "not restarted: a stop was asked"),
    (AttemptEnd("killed", "ended by a kill request"), False, "not restarted: a stop was asked"),
    (AttemptEnd("failed", "RuntimeError: boom", 0, stop_asked=True), False, "not restarted: a stop was asked"),
    (AttemptEnd("failed", "[data] train_file: no column 'label'", 0, {"0": 3}), False,
     "not restarted: the run refused its profile or data"),
    (AttemptEnd("failed", "FileNotFoundError: [Errno 2] No such file or directory: 'x.csv'", 0, {"0": 1}), False,
     "not restarted: a FileNotFoundError fails the same way"),
    (AttemptEnd("failed", "OSError: [Errno 28] No space left on device — a disk was full (No space left on device)",
                0), False, "not restarted: the disk is full"),
    (AttemptEnd("failed", "hung: rank 1 made no progress for 12 s; rank 1 waits in all_reduce", hung=True), False,
     'not restarted: on_hang = "notify"'),
    (AttemptEnd("failed", "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 0), True,
     "out of memory: restarting with per_device_train_batch_size = 16 and gradient_accumulation_steps = 2"),
])
def test_the_cause_decides(end: AttemptEnd, restart: bool, words: str) -> None:
    said = verdict(end, RESTARTS, 0, None, (32, 1))
    assert said.restart is restart and said.why.startswith(words), said


def test_a_hang_restarts_only_under_on_hang_restart_and_an_oom_needs_on_oom() -> None:
    hung = AttemptEnd("failed", "node2: hung: rank 1 made no progress for 12 s")
    assert verdict(hung, RestartSettings(restarts=1, on_hang="restart"), 0, None, None).restart
    oom = AttemptEnd("failed", "torch.OutOfMemoryError: CUDA out of memory.", 0)
    said = verdict(oom, RestartSettings(restarts=3), 0, None, (8, 1))
    assert not said.restart and 'on_oom = "split_batch"' in said.why
    floor = verdict(oom, RESTARTS, 0, None, (1, 32))
    assert not floor.restart and "per_device_train_batch_size = 1, the floor" in floor.why
    split = verdict(oom, RESTARTS, 5, False, (6, 1))  # restarts used up, no progress: a split takes none of them
    assert split.restart and split.split == (3, 2) and not split.counted


def test_restarts_run_out_and_a_crash_loop_stops() -> None:
    assert verdict(CRASH, RESTARTS, 2, True, None).why == "not restarted: its 2 restarts ([run] restarts) are used"
    assert verdict(CRASH, RestartSettings(), 0, None, None).why == "not restarted: [run] restarts = 0"
    assert "(a crash loop)" in verdict(CRASH, RESTARTS, 1, False, None).why
    assert verdict(CRASH, RESTARTS, 1, True, None).restart


def test_the_settings_come_from_the_frozen_profile(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path)
    assert restart_settings(paths) == RestartSettings()  # no profile: the schema's defaults
    paths.profile.write_text('[run]\nrestarts = 3\nrestart_backoff = 2.5\non_hang = "restart"\non_oom = "nope"\n')
    assert restart_settings(paths) == RestartSettings(restarts=3, backoff=2.5, on_hang="restart")


def test_an_attempt_keeps_its_own_folders(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path)
    for name in ("logs", "ranks", "heartbeats", "control"):
        (tmp_path / name).mkdir()
    (paths.logs / "rank-0.log").write_text("first attempt\n")
    paths.rank_record(0).write_text("{}")
    paths.control_request("ending").touch()
    paths.events.write_text("{}\n")
    kept = keep_attempt(paths, 1)
    assert kept.rank_log(0).read_text() == "first attempt\n" and kept.rank_record(0).exists()
    assert list(paths.logs.iterdir()) == [] and list(paths.ranks.iterdir()) == [] and paths.stacks.is_dir()
    assert paths.events.exists() and not paths.control_request("ending").exists()


def test_a_script_is_told_the_checkpoint_a_restart_begins_from(tmp_path: Path) -> None:
    script = {"path": "train.py", "resume_arg": "--resume"}
    argv = ["accelerate", "launch", "train.py", "--lr", "1"]
    told = argv_resuming(argv, script, None, "/out/checkpoint-20")
    assert told == [*argv, "--resume", "/out/checkpoint-20"]
    assert argv_resuming(told, script, "/out/checkpoint-20", "/out/checkpoint-40")[-1] == "/out/checkpoint-40"
    assert argv_resuming(told, {"resume_arg": "--from="}, "/x", "/y")[-1] == "--from=/y"
    paths = RunPaths(tmp_path)
    paths.profile.write_text('[script]\npath = "train.py"\nresume_arg = "--resume"\n')
    launched = ["accelerate", "launch", "--config_file", "a.yaml", "--main_process_port", "29500", "train.py"]
    again, afresh = attempt_argv(paths, launched, None, "/out/checkpoint-20")
    assert afresh and again == ["accelerate", "launch", "--config_file", "a.yaml", "train.py", "--resume",
                                "/out/checkpoint-20"]
    assert attempt_argv(paths, launched, None, None, machines=2) == (launched, False)
    assert attempt_node_dir(".tuitrain/runs/r/machine-1", 2) == ".tuitrain/runs/r/machine-1-attempt-2"
    assert attempt_node_dir(".tuitrain/runs/r/machine-1-attempt-2", 3) == ".tuitrain/runs/r/machine-1-attempt-3"
    # a machine's command follows its folder: its ranks write where its agent mirrors from (machine-10 is not touched)
    folder = "/w/.tuitrain/runs/r/machine-1"
    machine = {"node_dir": folder, "argv": ["python", "-m", "accelerate.commands.launch", "--config_file",
                                            f"{folder}/accelerate.yaml", "-m", "tuitrain.engine", folder, f"{folder}0"]}
    (again_2,) = attempt_machines(RunPaths(tmp_path / "none"), [machine], None, None, 2)  # type: ignore[list-item]  # a partial entry
    (again_3,) = attempt_machines(RunPaths(tmp_path / "none"), [again_2], None, None, 3)
    assert again_3["argv"][4:] == [f"{folder}-attempt-3/accelerate.yaml", "-m", "tuitrain.engine", f"{folder}-attempt-3",
                                   f"{folder}0"] and again_3["node_dir"] == f"{folder}-attempt-3"


RECORD: RunRecord = {"status": "running", "started": 1000.0, "attempt": 3, "restarts_allowed": 2, "restarts": [
    {"attempt": 2, "at": 1100.0, "ended": 1090.0, "status": "failed", "failed_rank": 1, "counted": True,
     "error": "RuntimeError: boom", "resume_from": "/out/checkpoint-20", "skipped": ["checkpoint-30 (no optimizer.pt)"]},
    {"attempt": 3, "at": 1300.0, "ended": 1290.0, "status": "failed", "failed_rank": 0, "counted": False,
     "error": "rank 0 (pid 7) exited with code 1: OutOfMemoryError: CUDA out of memory.",
     "resume_from": "/out/checkpoint-40",
     "batch": {"per_device_train_batch_size": [8, 4], "gradient_accumulation_steps": [1, 2]}},
]}


def test_viewers_say_the_attempt_and_every_earlier_end() -> None:
    assert attempt_label(Fields(RECORD)) == "attempt 3/4"  # a split batch takes none of the 2 restarts
    line = attempt_line(Fields(RECORD), now=2000.0)
    assert line is not None and line.startswith("attempt 3/4, restarted ")
    assert line.endswith("from checkpoint-40 with per_device_train_batch_size 8 → 4, gradient_accumulation_steps "
                         "1 → 2 after rank 0 (pid 7) exited with code 1: OutOfMemoryError: CUDA out of memory.")
    first, second = earlier_lines(Fields(RECORD))
    assert first.startswith("attempt 1 (") and "failed: rank 1: RuntimeError: boom" in first
    assert first.endswith("passed over as damaged: checkpoint-30 (no optimizer.pt)")
    assert second.startswith("attempt 2 (")
    waiting = Fields({**RECORD, "attempt": 2})
    assert attempt_line(waiting, now=1200.0).startswith("attempt 3/4 restarts at ")  # type: ignore[union-attr]
    assert attempt_label(Fields({"status": "running"})) is None


def test_the_curves_go_on_from_the_restart_step(tmp_path: Path) -> None:
    events = [{"event": "log", "step": s, "loss": 1.0 / s, "time": s} for s in range(1, 31)]
    events += [{"event": "save", "step": 20, "checkpoint": "/out/checkpoint-20", "time": 20.5},
               {"event": "restart", "step": 20, "attempt": 2, "time": 40}]
    events += [{"event": "log", "step": s, "loss": 2.0 / s, "time": 40 + s} for s in range(21, 26)]
    assert progress(events[:-5])["step"] == 20 and progress(events)["step"] == 25
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    tail = EventsTail(path)
    tail.poll()
    loss = tail.series["loss"]
    assert list(loss.steps) == list(range(1, 26)) and loss.values[-1] == 2.0 / 25 and loss.values[19] == 1.0 / 20


def test_diff_says_a_restart_and_the_batch_on_oom_split() -> None:
    from tuitrain.runs.view.diff import RunFacts, diff_runs

    profile = {"run": {"name": "demo"}, "training": {"per_device_train_batch_size": 8}}
    plain = RunFacts("20260101-000000-demo", "/runs/20260101-000000-demo", {}, profile, None, {})
    split = {**profile, "training": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}}
    healed = RunFacts("20260101-000500-demo", "/runs/20260101-000500-demo", RECORD, split, None, {})
    lines = [d.line() for d in diff_runs(plain, healed)]
    assert lines == [
        f"lineage   restarted  {healed.id} restarted 2 times: attempt 3 began from checkpoint-40",
        (f"profile   run.on_oom  {healed.id} split its batch after running out of memory (attempt 3): "
         "training.per_device_train_batch_size 8 → 4, training.gradient_accumulation_steps 1 → 2, the same effective "
         "batch"),
        "profile   training.gradient_accumulation_steps  (absent) → 2",
        "profile   training.per_device_train_batch_size  8 → 4"]


def test_home_and_the_monitor_say_the_attempt_and_each_earlier_end(tmp_path: Path) -> None:
    """The app: Home's STATUS cell and the line under its table for the highlighted run, and the monitor's header,
    on a fixed run directory whose record says two restarts (test_tui_fixtures.make_runs)."""
    from test_tui_app import make_app, table_rows, until
    from test_tui_fixtures import RUNNING, fixed_time, make_runs
    from test_tui_hangs import header
    from test_tui_multinode import open_monitor, run_app
    from test_tui_queue import highlight, waits_line

    fixed_time()
    run_dir = make_runs(tmp_path / "runs")[RUNNING]
    rec = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**rec, **{k: v for k, v in RECORD.items() if k != "status"}}))
    app = make_app(tmp_path)

    async def script(pilot):
        table = app.screen.query_one("#runs")
        status = await until(pilot, lambda: "attempt 3/4" in str(dict(
            (r[0], r[1]) for r in table_rows(table)).get(RUNNING)), what="the attempt in the STATUS cell")
        assert status
        await highlight(pilot, RUNNING)
        line = await until(pilot, lambda: "attempt 3/4, restarted" in waits_line(app) and waits_line(app),
                           what="the restart under the table")
        assert "from checkpoint-40 with per_device_train_batch_size 8 → 4" in line, line
        monitor = await open_monitor(pilot, RUNNING)
        said = await until(pilot, lambda: "attempt 3/4" in header(monitor) and header(monitor), what="the header")
        lines = said.splitlines()
        attempt = next(i for i, text in enumerate(lines) if text.startswith("attempt 3/4, restarted"))
        assert lines[attempt + 1].startswith("attempt 1 (") and "rank 1: RuntimeError: boom" in lines[attempt + 1]
        assert lines[attempt + 2].startswith("attempt 2 ("), said

    run_app(app, script, size=(200, 40))
