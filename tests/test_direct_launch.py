"""A run of one process on one machine starts its rank directly (issue 35): no `accelerate launch` in between, the
environment accelerate launch would give it (built by accelerate's own functions), the same accelerate.yaml. Several
processes, several machines, and what accelerate would not start with its simple launcher keep accelerate launch."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from accelerate.commands.launch import _validate_launch_command, launch_command_parser

from conftest import cli, record
from test_strategies_accelerate import demo, settings_of, write
from tuitrain.engine import direct_launch
from tuitrain.hardware import Hardware
from tuitrain.launch import plan_launch
from tuitrain.launch.plan import export_accelerate_config
from tuitrain.launch.planner import ACCELERATE_LAUNCH_ENV, DIRECT_MODULE, LAUNCH_MODULE
from tuitrain.runs.keeper import local_launch

SCRIPTS = Path(__file__).resolve().parent / "fixtures" / "scripts"


def test_one_process_on_one_machine_is_planned_direct_and_several_through_accelerate_launch(tmp_path, monkeypatch):
    monkeypatch.delenv(ACCELERATE_LAUNCH_ENV, raising=False)
    one = plan_launch(settings_of(demo()), Hardware(), tmp_path)
    assert one.argv[1:5] == ["-m", DIRECT_MODULE, "--config_file", str(tmp_path / "accelerate.yaml")]
    assert any(n.startswith("one process: started as its own rank") for n in one.notes)
    assert "accelerate launch --config_file" in one.command_line()  # what a user pastes is still accelerate launch
    two = plan_launch(settings_of(demo(distributed={"strategy": "ddp", "num_processes": 2})), Hardware(), tmp_path)
    assert two.argv[1:3] == ["-m", LAUNCH_MODULE] and not any(n.startswith("one process") for n in two.notes)
    monkeypatch.setenv(ACCELERATE_LAUNCH_ENV, "1")
    assert plan_launch(settings_of(demo()), Hardware(), tmp_path).argv[1:3] == ["-m", LAUNCH_MODULE]
    assert local_launch.DIRECT_MODULE == DIRECT_MODULE  # the supervisor's copy of the name (it does not import launch)


def parsed(tmp_path: Path, config: dict[str, Any]) -> tuple[Any, Any]:
    args = launch_command_parser().parse_args(["--config_file", str(write(tmp_path, config)), "train.py"])
    args, defaults, _ = _validate_launch_command(args)
    return args, defaults


@pytest.mark.parametrize(("sections", "simple"), [
    ({}, True),
    ({"hardware": {"accelerator": "cuda", "mixed_precision": "bf16"}}, True),
    ({"distributed": {"strategy": "ddp", "num_processes": 2}}, False),
    ({"hardware": {"accelerator": "cuda"}, "distributed": {"strategy": "fsdp", "num_processes": 1}}, False),
    ({"hardware": {"accelerator": "cuda"}, "distributed": {"strategy": "deepspeed", "num_processes": 1}}, False),
])
def test_the_direct_start_is_taken_only_where_accelerate_uses_its_simple_launcher(tmp_path, sections, simple):
    config, _ = export_accelerate_config(settings_of(demo(**copy.deepcopy(sections))))
    assert direct_launch.simple_launch(*parsed(tmp_path, config)) is simple


def test_a_variable_read_at_start_sends_the_rank_through_accelerate_launch():
    assert direct_launch.late_problem({"ACCELERATE_MIXED_PRECISION": "bf16", "ACCELERATE_USE_CPU": "False",
                                       "OMP_NUM_THREADS": "4", "ACCELERATE_DYNAMO_MODE": "default"}) is None
    assert direct_launch.late_problem({"ACCELERATE_USE_CPU": "True", "CUDA_VISIBLE_DEVICES": "1"}) == "CUDA_VISIBLE_DEVICES"
    assert direct_launch.changed({"A": "1", "B": "2"}, {"A": "1"}) == {"B": "2"}


def script_run(folder: Path, runs_dir: Path) -> dict[str, Any]:
    """A one-process run of tests/fixtures/scripts/env_dump.py: what its rank was started with, and its run record."""
    (folder / "env_dump.py").write_text((SCRIPTS / "env_dump.py").read_text())
    out = folder / "started.json"
    (folder / "p.toml").write_text(f'[script]\npath = "env_dump.py"\nargs = ["{out}"]\n\n[hardware]\naccelerator = "cpu"\n')
    done = cli("run", str(folder / "p.toml"), runs_dir=runs_dir, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    run = max(runs_dir.iterdir(), key=lambda p: p.stat().st_mtime)
    return {**json.loads(out.read_text()), "record": record(run), "run": run}


def test_a_rank_started_directly_gets_what_accelerate_launch_gives_it(tmp_path, runs_dir, monkeypatch):
    """The same script run both ways: its environment, argv, sys.path[0] and __name__ are the same, but for what
    names the run itself (its folder, its supervisor, its pid); directly, the launcher recorded is the rank."""
    monkeypatch.delenv(ACCELERATE_LAUNCH_ENV, raising=False)
    direct = script_run(tmp_path, runs_dir)
    monkeypatch.setenv(ACCELERATE_LAUNCH_ENV, "1")
    launched = script_run(tmp_path, runs_dir)
    own = {"TUITRAIN_RUN_DIR", "TUITRAIN_SUPERVISOR", "TUITRAIN_HOOKED", ACCELERATE_LAUNCH_ENV}
    envs = [{k: v for k, v in r["env"].items() if k not in own} for r in (direct, launched)]
    assert envs[0] == envs[1]
    assert "ACCELERATE_MIXED_PRECISION" in envs[0] and envs[0]["ACCELERATE_USE_CPU"] == "True"
    for key in ("path0", "name"):
        assert direct[key] == launched[key]
    assert [Path(a).name for a in direct["argv"]] == [Path(a).name for a in launched["argv"]]

    rec = direct["record"]
    assert rec["argv"][1:3] == ["-m", DIRECT_MODULE] and rec["status"] == "finished"
    assert rec["pids"]["launcher"] == rec["pids"]["ranks"]["0"] == direct["pid"]
    assert direct["ppid"] == rec["pids"]["supervisor"]
    assert rec["processes"]["launcher"] == rec["processes"]["rank 0"]
    assert "started through accelerate launch" not in (direct["run"] / "logs" / "launcher.log").read_text()
    other = launched["record"]
    assert other["argv"][1:3] == ["-m", LAUNCH_MODULE] and other["pids"]["launcher"] != other["pids"]["ranks"]["0"]


def test_what_this_process_cannot_run_makes_it_accelerate_launch_itself(tmp_path):
    """A program that is not Python (--no_python) cannot run inside this process: the direct launcher becomes
    `accelerate launch` (same pid), which starts the program as its child. The other cause, a variable this process
    read at start (CUDA_VISIBLE_DEVICES for --gpu_ids on a CUDA torch; accelerate 1.16 sets none on a CPU-only one),
    is `late_problem`'s, checked above."""
    config, _ = export_accelerate_config(settings_of(demo()))
    out = tmp_path / "started.json"
    program = tmp_path / "program"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SCRIPTS / "env_dump.py"}" "$@"\n')
    program.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", DIRECT_MODULE, "--config_file", str(write(tmp_path, config)),
                             "--no_python", str(program), str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "started through accelerate launch" in err
    started = json.loads(out.read_text())
    assert started["ppid"] == proc.pid and started["env"]["ACCELERATE_USE_CPU"]  # the same pid, now the launcher
