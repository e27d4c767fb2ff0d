"""Bad input ends in a line or two a person can act on: never a traceback, nothing lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import check_clean, cli, record

DEMO = Path(__file__).resolve().parents[1] / "profiles" / "demo.toml"


def demo_with(tmp_path: Path, old: str, new: str) -> Path:
    text = DEMO.read_text()
    assert old in text
    path = tmp_path / "mine.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_toml_syntax_error_names_file_line_and_column(tmp_path, runs_dir):
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\nname = "x"\n[training\nmax_steps = 3\n')
    check_clean(cli("validate", str(bad), runs_dir=runs_dir), f"{bad}:3:", "TOML syntax error")
    check_clean(cli("run", str(bad), runs_dir=runs_dir), f"{bad}:3:")
    assert list(runs_dir.iterdir()) == []


def test_unknown_key_gets_did_you_mean(tmp_path, runs_dir):
    path = demo_with(tmp_path, "learning_rate = 3e-3", "learning_rat = 3e-3")
    check_clean(cli("run", str(path), runs_dir=runs_dir), "training.learning_rat", "did you mean 'learning_rate'")


def test_wrong_type_names_key_and_expected_form(tmp_path, runs_dir):
    path = demo_with(tmp_path, "max_steps = 150", 'num_train_epochs = "three"')
    check_clean(cli("validate", str(path), runs_dir=runs_dir), "training.num_train_epochs", "expected a number")


def test_every_problem_is_listed_at_once(tmp_path, runs_dir):
    path = demo_with(tmp_path, "learning_rate = 3e-3", 'learning_rat = 3e-3\nnum_train_epochs = "three"')
    text = check_clean(cli("validate", str(path), runs_dir=runs_dir))
    assert "learning_rat" in text and "num_train_epochs" in text and "2 error(s)" in text


def test_validate_checks_the_profile_with_the_overrides_a_launch_would_use(tmp_path, runs_dir):
    path = demo_with(tmp_path, "max_steps = 150", "max_steps = 150")
    assert cli("validate", str(path), runs_dir=runs_dir).returncode == 0
    check_clean(cli("validate", str(path), "--set", "training.max_steps=-3", runs_dir=runs_dir), "training.max_steps")
    check_clean(cli("validate", str(path), "--set", "training.learning_rat=1e-4", runs_dir=runs_dir),
                "did you mean 'learning_rate'")


def test_missing_data_file(runs_dir):
    check_clean(cli("run", "demo", "--set", "data.generate=", "--set", "data.train_file=/nowhere/train.csv", runs_dir=runs_dir),
                "data.train_file", "/nowhere/train.csv")


def test_missing_model_folder(runs_dir):
    check_clean(cli("run", "demo", "--set", "model.config=", "--set", "model.name_or_path=/nowhere/bert", runs_dir=runs_dir),
                "model.name_or_path", "/nowhere/bert")


@pytest.mark.no_nvidia_driver
def test_gpus_on_a_machine_without_them(runs_dir):
    check_clean(cli("run", "demo", "--set", "hardware.accelerator=cuda", runs_dir=runs_dir), "hardware.accelerator", "no NVIDIA GPU")
    assert list(runs_dir.iterdir()) == []


def test_runs_root_not_writable(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    check_clean(cli("run", "demo", "--runs-dir", str(blocker / "runs"), runs_dir=tmp_path), "runs root", "--runs-dir")


def test_unknown_run_suggests_the_nearest(finished_run):
    runs = finished_run.parent
    typo = finished_run.name[:-1] + "x"
    check_clean(cli("status", typo, runs_dir=runs), f"did you mean '{finished_run.name}'")


def test_unknown_profile_name_suggests_the_nearest(runs_dir):
    check_clean(cli("run", "dmeo", runs_dir=runs_dir), "did you mean 'demo'")


def test_stop_of_an_ended_run(finished_run):
    check_clean(cli("stop", finished_run.name, runs_dir=finished_run.parent), "already ended (finished)")


def test_resume_of_a_run_without_checkpoints(finished_run, tmp_path):
    runs = tmp_path / "runs"
    copy = runs / "20260101-000000-demo"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns("output"))
    rec = record(copy)
    rec["output_dir"] = str(copy / "output")
    (copy / "run.json").write_text(json.dumps(rec))
    check_clean(cli("resume", copy.name, runs_dir=runs), "no complete checkpoint", "nothing to resume")


def test_a_resume_with_nothing_left_to_train_is_refused_in_one_line(finished_run, tmp_path):
    runs = tmp_path / "runs"
    copy = runs / finished_run.name
    shutil.copytree(finished_run, copy)
    rec = record(copy)
    rec["output_dir"] = str(copy / "output")
    (copy / "run.json").write_text(json.dumps(rec))
    check_clean(cli("resume", copy.name, runs_dir=runs),  # finished at its max_steps = 8
                "checkpoint-8 is at step 8 and training.max_steps is 8: nothing is left to train",
                "--set training.max_steps=16")
    check_clean(cli("resume", copy.name, "--set", "training.max_steps=5", runs_dir=runs), "training.max_steps is 5")
    assert [p.name for p in runs.iterdir()] == [copy.name]  # no run was started


def test_a_new_run_never_writes_over_another_runs_checkpoints(finished_run, tmp_path):
    output_dir = record(finished_run)["output_dir"]
    before = sorted(p.name for p in Path(output_dir).iterdir())
    check_clean(cli("run", "demo", "--set", f"run.output_dir={output_dir!r}".replace("'", '"'), runs_dir=tmp_path / "runs"),
                "already holds checkpoint-8", "tuitrain resume")
    assert sorted(p.name for p in Path(output_dir).iterdir()) == before


def test_an_incomplete_checkpoint_is_reported_and_never_latest(finished_run, tmp_path):
    runs = tmp_path / "runs"
    copy = runs / finished_run.name
    shutil.copytree(finished_run, copy)
    output = copy / "output"
    rec = record(copy)
    rec["output_dir"] = str(output)
    (copy / "run.json").write_text(json.dumps(rec))
    half = output / "checkpoint-12"
    shutil.copytree(output / "checkpoint-8", half)
    (half / "optimizer.pt").unlink()
    (half / "trainer_state.json").unlink()
    listing = json.loads(cli("checkpoints", copy.name, "--json", runs_dir=runs).stdout)
    by_step = {c["step"]: c for c in listing}
    assert by_step[8]["complete"] and not by_step[12]["complete"]
    why = " ".join(by_step[12]["missing"])
    assert "trainer_state.json" in why and "optimizer.pt" in why
    assert "INCOMPLETE" in cli("checkpoints", copy.name, runs_dir=runs).stdout
    # `latest` picks checkpoint-8; asking for a different world size is refused up front.
    refused = cli("resume", copy.name, "--set", "distributed.strategy=ddp", "--set", "distributed.num_processes=2", runs_dir=runs)
    check_clean(refused, "checkpoint-8 was written by 1 process", "--set distributed.num_processes=1")
    check_clean(cli("resume", copy.name, "--checkpoint", "checkpoint-12", runs_dir=runs), "cannot be resumed from")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version(argv, runs_dir):
    result = cli(*argv, runs_dir=runs_dir)
    assert result.returncode == 0 and ("tuitrain" in result.stdout)


# ------------------------------------------------------------------ issue 27: lists and ends a person can read


def ended_run(runs_dir: Path, name: str = "demo", status: str = "finished", **fields: object) -> Path:
    """A run directory that has ended (no training: only what the viewers read)."""
    import time

    run_id = "20200101-000000-demo"
    run = runs_dir / run_id
    (run / "logs").mkdir(parents=True)
    (run / "control").mkdir()
    (run / "logs" / "rank-0.log").write_text("rank 0 says hello\n")
    record = {"id": run_id, "profile": name, "status": status, "created": time.time() - 60, "started": time.time() - 59,
              "ended": time.time(), "num_processes": 2, "exit_codes": {}, "failed_rank": None, "error": None,
              "output_dir": str(run / "output"),
              "pids": {"supervisor": 4_000_001, "launcher": 4_000_002, "ranks": {"0": 4_000_003, "1": 4_000_004}},
              **fields}
    (run / "run.json").write_text(json.dumps(record))
    return run


def test_status_names_each_pid_by_its_role(runs_dir: Path) -> None:
    run = ended_run(runs_dir)
    result = cli("status", run.name, runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("processes")]
    assert line.endswith("pids supervisor 4000001, launcher 4000002, rank 0 4000003, rank 1 4000004"), line
    assert "{" not in line


def test_a_long_run_name_is_cut_in_the_list_of_runs(runs_dir: Path) -> None:
    ended_run(runs_dir, name="x" * 300)
    result = cli("runs", runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) < 120, result.stdout
    assert "x" * 31 + "…" in result.stdout


def test_a_failed_run_says_its_cause_on_stderr(runs_dir: Path) -> None:
    import io

    from tuitrain.cli.follow import follow_run
    from tuitrain.rundir.layout import RunPaths

    cause = "data.train_file = 'x.csv': no rows; give a file with rows"
    run = ended_run(runs_dir, status="failed", failed_rank=0, error=cause, exit_codes={"0": 3})
    (run / "events.jsonl").write_text(json.dumps({"event": "error", "time": 1.0, "step": 0, "rank": 0,
                                                  "message": cause}) + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert follow_run(RunPaths(run), out=out, err=err, poll=0.01) == 1
    assert cause not in out.getvalue() and f"{run.name} failed" not in out.getvalue()
    assert f"rank 0 error: {cause}" in err.getvalue() and f"run {run.name} failed (rank 0): {cause}" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    ended_run(runs_dir / "other")  # a finished run says so on stdout, and nothing on stderr
    assert follow_run(RunPaths(runs_dir / "other" / run.name), out=out, err=err, poll=0.01) == 0
    assert "finished" in out.getvalue() and err.getvalue() == ""
