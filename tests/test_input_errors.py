"""Bad input says one line naming the key and the fix, before launch where it can (issue 10,
items 6 and 11): GPUs listed that are not there, data files that cannot train, model configs that
cannot build, output folders that cannot be written, and what a rank says when only it can tell."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import cli
from tuitrain.hardware.devices import discover
from tuitrain.hardware.host import ProcessMeter
from tuitrain.hardware.preflight import check
from tuitrain.hardware.probe import Hardware, hardware_from
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.launch.plan import plan_launch
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import Problem, builtin_profile_path, load_profile, profile_with_defaults

NVML = Path(__file__).parent / "fixtures" / "nvml"


def box(name: str) -> Hardware:
    return hardware_from(discover(RecordedNvml(load_table(NVML / f"{name}.json")), ProcessMeter().identify), user="me")


def demo_settings(**sections: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(profile_with_defaults(load_profile(builtin_profile_path())))
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return data


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.is_error]


# ------------------------------------------------------------------ item 11: GPUs listed, none there


def test_auto_with_gpus_listed_on_a_machine_without_gpus_is_refused() -> None:
    settings = demo_settings(hardware={"accelerator": "auto", "gpus": [2, 0]})
    (problem,) = errors(check(settings, box("no_driver"), "p.toml"))
    assert problem.key == "hardware.gpus" and problem.file == "p.toml"
    assert "2, 0" in problem.message and "no NVIDIA GPU" in problem.message
    assert "remove hardware.gpus" in problem.fix


def test_the_plan_refuses_listed_gpus_that_are_not_there(tmp_path: Path) -> None:
    settings = demo_settings(hardware={"accelerator": "auto", "gpus": [2, 0]})
    plan = plan_launch(settings, box("no_driver"), tmp_path / "run", "p.toml", machine=MachineFacts())
    assert [p.key for p in plan.errors] == ["hardware.gpus"]
    unlisted = demo_settings(hardware={"accelerator": "auto"})  # no list: the CPU run it always was
    assert plan_launch(unlisted, box("no_driver"), tmp_path / "run", "p.toml", machine=MachineFacts()).errors == []
    hidden = demo_settings(hardware={"accelerator": "auto", "gpus": []})  # [] hides every GPU: fine anywhere
    assert plan_launch(hidden, box("no_driver"), tmp_path / "run", "p.toml", machine=MachineFacts()).errors == []


def test_run_refuses_listed_gpus_on_a_machine_without_them(tmp_path: Path, runs_dir: Path) -> None:
    env_table = str(NVML / "no_driver.json")
    os.environ["TUITRAIN_NVML_TABLE"] = env_table
    try:
        result = cli("run", "demo", "--set", "hardware.accelerator=auto", "--set", "hardware.gpus=[2, 0]",
                     runs_dir=runs_dir)
    finally:
        del os.environ["TUITRAIN_NVML_TABLE"]
    assert result.returncode == 2, result.stdout + result.stderr
    assert "hardware.gpus" in result.stderr and "Traceback" not in result.stderr
    assert list(runs_dir.iterdir()) == []  # nothing started
