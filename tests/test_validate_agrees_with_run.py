"""What `run` refuses on this machine, `validate` says first, in the same words (issue 27): both ask the profile's
backend for its plan (the GPUs, the output folder); `validate --offline` checks the profile alone, for a profile
meant for another machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FAST, check_clean, cli

NO_GPU = pytest.mark.no_nvidia_driver  # a machine without GPUs refuses these

CASES = [
    pytest.param(["run.output_dir=/proc/tuitrain-out"], "/proc/tuitrain-out cannot be created: /proc takes no new folder",
                 id="an output folder that cannot be made"),
    pytest.param(["hardware.accelerator=cuda"], "hardware.accelerator: asks for CUDA GPUs", id="cuda-without-gpus",
                 marks=NO_GPU),
    pytest.param(["hardware.accelerator=auto", "hardware.gpus=[3]"], "hardware.gpus: lists GPU(s) 3",
                 id="auto-with-a-gpu-list", marks=NO_GPU),
    pytest.param(["hardware.accelerator=auto", 'hardware.gpus=["abc"]'], "hardware.gpus", id="auto-with-a-bad-gpu-name",
                 marks=NO_GPU),
]


@pytest.mark.parametrize(("sets", "needle"), CASES)
def test_validate_says_what_run_refuses(sets: list[str], needle: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    overrides = [arg for value in sets for arg in ("--set", value)]
    key = sets[-1].split("=")[0]
    validated = check_clean(cli("validate", "demo", *overrides, runs_dir=runs), needle, f"{key}: ")
    started = check_clean(cli("run", "demo", "--detach", *FAST, *overrides, runs_dir=runs), needle)
    refusal = next(line for line in started.splitlines() if needle in line).split(needle, 1)[1]
    assert refusal in validated, (validated, started)  # the same words after the key
    said = next(line for line in validated.splitlines() if needle in line)
    assert "(from --set)" in said, said  # the plan's problem names where the value came from, as loading's do
    assert not runs.exists() or list(runs.iterdir()) == []  # nothing was started
    if key.startswith("hardware."):  # what only this machine's GPUs refuse: the profile alone is fine
        offline = cli("validate", "demo", "--offline", *overrides, runs_dir=runs)
        assert offline.returncode == 0 and "ok (the profile alone" in offline.stdout, offline.stdout + offline.stderr


def test_the_default_output_folder_is_checked_too(tmp_path: Path) -> None:
    """No run.output_dir: the run's own output/ under the runs root, which cannot be made under a file; said once,
    for the runs root (the fault), in the words `run` refuses with."""
    runs = tmp_path / "runs-is-a-file"
    runs.write_text("")
    validated = check_clean(cli("validate", "demo", runs_dir=runs), f"the runs root {runs} is a file", "--runs-dir DIR")
    assert "1 error(s) on this machine" in validated and "run.output_dir" not in validated
    started = check_clean(cli("run", "demo", "--detach", runs_dir=runs), f"the runs root {runs} is a file")
    assert started.strip().splitlines()[0].split("the runs root", 1)[1] in validated


def test_a_folder_of_old_checkpoints_is_said_before_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out" / "checkpoint-4"
    out.mkdir(parents=True)
    (out / "model.safetensors").write_bytes(b"x")
    sets = ["--set", f"run.output_dir={out.parent}"]
    validated = check_clean(cli("validate", "demo", *sets, runs_dir=tmp_path / "runs"), "run.output_dir", "already holds")
    assert "--set run.output_dir=outputs/new" in validated


def test_several_machines_without_a_port_are_said_once(tmp_path: Path) -> None:
    """The profile alone warns (the file may be finished on the machine that launches), the plan refuses: validate,
    plan and run say it once, as the error, with the file's line; validate --offline says the warning."""
    import tomllib

    import tomli_w

    from tuitrain.profile import builtin_profile_path

    data = tomllib.loads(builtin_profile_path().read_text(encoding="utf-8"))
    data["distributed"] = {"strategy": "ddp", "num_processes": 1, "main_process_ip": "127.0.0.1",
                           "machines": [{"host": "localhost"}, {"host": "127.0.0.1"}]}
    profile = tmp_path / "two.toml"
    profile.write_text(tomli_w.dumps(data))
    runs = tmp_path / "runs"
    for verb in (["validate"], ["plan"], ["run", "--detach", "--no-doctor"]):
        result = cli(*verb, str(profile), runs_dir=runs)
        lines = [line for line in result.stderr.splitlines() if "distributed.main_process_port" in line]
        assert result.returncode != 0 and len(lines) == 1, (verb, result.stderr)
        assert "warning" not in lines[0] and "Traceback" not in result.stderr, (verb, result.stderr)
    offline = cli("validate", "--offline", str(profile), runs_dir=runs)
    assert offline.returncode == 0 and "warning: distributed.main_process_port" in offline.stderr, offline.stderr
    assert not runs.exists() or list(runs.iterdir()) == []
