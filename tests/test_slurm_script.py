"""`tuitrain submit --dry-run`: the sbatch script of a profile, and the options it refuses (one line each).

No cluster is needed here: the script is checked as text, as bash reads it (`bash -n`, and a run of its
quoting), and as sbatch reads its #SBATCH lines (tests/test_slurm.py submits it to a real Slurm)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import tomli_w

from conftest import check_clean, cli, demo_profile_data
from tuitrain.slurm.script import JobOptions, Resources, ScriptError, batch_script, directive_quote


def test_dry_run_prints_the_script_and_makes_nothing(runs_dir: Path) -> None:
    result = cli("submit", "demo", "--dry-run", "--partition", "debug", "--time", "1:30:00", "--account", "lab",
                 "--warning", "120", *["--set", "distributed.strategy=ddp", "--set", "distributed.num_processes=2"],
                 runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    script = result.stdout
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for directive in ("--nodes=1", "--ntasks-per-node=1", "--cpus-per-task=2", "--partition=debug",
                      "--time=1:30:00", "--account=lab", "--signal=B:USR1@120"):
        assert f"#SBATCH {directive}" in lines, script
    assert not any("--gpus-per-node" in line for line in lines)  # CPU ranks ask for no GPU
    srun = next(line for line in lines if line.startswith("srun "))
    assert "tuitrain.slurm.agent" in srun and "--ntasks-per-node=1" in srun
    assert "trap warned USR1" in lines
    assert "trap terminated TERM" in lines  # Slurm's SIGTERM to the batch shell: it waits for the ranks to save
    assert "#SBATCH --no-requeue" in lines  # --requeue asks for it
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    assert list(runs_dir.iterdir()) == []  # nothing was made, nothing submitted


def test_gpus_per_node_come_from_the_profile(tmp_path: Path, runs_dir: Path) -> None:
    profile = tmp_path / "gpu.toml"
    profile.write_text(tomli_w.dumps(demo_profile_data(
        hardware={"accelerator": "cuda", "gpus": [0, 1, 2, 3]},
        distributed={"strategy": "ddp", "num_processes": 4, "num_machines": 2, "main_process_ip": "10.0.0.1"})))
    result = cli("submit", str(profile), "--dry-run", runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "#SBATCH --nodes=2" in lines and "#SBATCH --gpus-per-node=4" in lines, result.stdout
    assert not any("--cpus-per-task" in line for line in lines)
    assert any(line.startswith("srun --nodes=2 ") for line in lines)


@pytest.mark.parametrize(("args", "needle"), [
    (["--partition", "gpu; rm -rf ~"], "--partition 'gpu; rm -rf ~': not a Slurm partition name"),
    (["--partition", "a b"], "--partition 'a b'"),
    (["--time", "an hour"], "--time 'an hour': not a Slurm time limit"),
    (["--account", "lab\nx"], "not a Slurm account name"),
    (["--warning", "0"], "--warning 0"),
])
def test_bad_options_are_one_line(runs_dir: Path, args: list[str], needle: str) -> None:
    text = check_clean(cli("submit", "demo", "--dry-run", *args, runs_dir=runs_dir), needle)
    assert len(text.strip().splitlines()) == 1, text


def test_listed_machines_are_refused(tmp_path: Path, runs_dir: Path) -> None:
    profile = tmp_path / "machines.toml"
    profile.write_text(tomli_w.dumps(demo_profile_data(distributed={
        "strategy": "ddp", "main_process_ip": "10.0.0.1", "main_process_port": 29500,
        "machines": [{"host": "node1"}, {"host": "node2"}]})))
    text = check_clean(cli("submit", str(profile), "--dry-run", runs_dir=runs_dir),
                       "distributed.machines: Slurm chooses the machines")
    assert len(text.strip().splitlines()) == 1, text


def test_values_cannot_break_out_of_their_lines(tmp_path: Path) -> None:
    """A run directory named with quotes, `#`, `$(...)` and spaces: bash sees one word, sbatch's directive parser
    reads the value back whole (its rules: double quotes, backslash, `#` comment)."""
    hostile = str(tmp_path / "it's a \"run\" #1 $(touch pwned) `x`")
    script = batch_script(run_dir=hostile, run_id="r", profile_name="demo; echo hi", python="/usr/bin/python3",
                          workdir=str(tmp_path), resources=Resources(1, 1, 0, 1), options=JobOptions())
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    # what bash makes of the run_dir assignment: the path itself, nothing run
    assign = next(line for line in script.splitlines() if line.startswith("run_dir="))
    echoed = subprocess.run(["bash", "-c", f"{assign}\nprintf %s \"$run_dir\""], capture_output=True, text=True,
                            cwd=tmp_path, check=True).stdout
    assert echoed == hostile and not (tmp_path / "pwned").exists()
    output = next(line for line in script.splitlines() if line.startswith("#SBATCH --output="))
    assert _sbatch_reads(output.split("=", 1)[1]) == f"{hostile}/logs/slurm-%j.out"
    assert "#SBATCH --job-name=tuitrain-demo-echo-hi" in script.splitlines()
    with pytest.raises(ScriptError):
        directive_quote("two\nlines")


def _sbatch_reads(text: str) -> str:
    """sbatch's reading of an #SBATCH value (src/sbatch/opt.c, _get_argument): double quotes group, a backslash
    escapes the next character, an unescaped `#` ends the line, unquoted space ends the value."""
    out, quoted, escape = [], False, False
    for ch in text:
        if escape:
            out.append(ch)
            escape = False
        elif ch == "\\":
            escape = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "#":
            break
        elif ch.isspace() and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out)


def test_a_supervisor_on_a_compute_node_is_not_judged_from_here(runs_dir: Path) -> None:
    """Seen from a login node, a Slurm run's supervisor pid names a process on another machine: no process here
    with that pid is no sign that the run is lost (the job's state says). On its own host, a dead pid still is."""
    import json
    import os

    for name, host in (("elsewhere", "compute-17"), ("here", os.uname().nodename)):
        run = runs_dir / name
        (run / "logs").mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({
            "id": name, "profile": "demo", "status": "running", "created": 1.0, "started": 1.0,
            "processes": {"supervisor": {"pid": 4_000_000, "started": 1.0}},  # above pid_max: never a live pid
            "pids": {"supervisor": 4_000_000}, "slurm": {"job_id": None, "host": host}}))
    listed = cli("runs", runs_dir=runs_dir)
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert " running " in rows["elsewhere"] and " lost " in rows["here"], listed.stdout
