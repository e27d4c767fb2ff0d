"""FSDP with one process (issue 28, item 4): torch runs it as NO_SHARD and says so only in the rank's log. `validate`
warns it for a profile that writes num_processes = 1, and `plan` says it in its strategy note for the processes it
starts, in one line, with one rule (profile.rules.strategies.fsdp_world_of_one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import cli, demo_profile_data
from tuitrain.hardware import Hardware
from tuitrain.launch import plan_launch
from tuitrain.profile import Problem, Profile, settings_with_defaults, validate_profile
from tuitrain.profile.rules.strategies import fsdp_world_of_one

NO_SHARD = ("with one process FSDP cannot shard: full_shard runs as NO_SHARD: the whole model, gradients and "
            "optimizer state on one device, as without FSDP")


def fsdp(processes: int | None = 1, machines: int = 1, **table: Any) -> dict[str, Any]:
    dist: dict[str, Any] = {"strategy": "fsdp", "num_machines": machines, "fsdp": table}
    if machines > 1:
        dist |= {"main_process_ip": "10.0.0.1", "main_process_port": 29500}
    data = demo_profile_data(hardware={"accelerator": "cuda"}, distributed=dist)
    if processes is None:
        del data["distributed"]["num_processes"]
    else:
        data["distributed"]["num_processes"] = processes
    return data


def warnings_of(data: dict[str, Any]) -> list[Problem]:
    return [p for p in validate_profile(data, "p.toml", None) if p.key == "distributed.num_processes"]


def strategy_note(data: dict[str, Any], tmp_path: Path) -> str:
    plan = plan_launch(settings_with_defaults(Profile(path=None, data=data)), Hardware(cpu_count=2), tmp_path)
    return plan.notes[0]


def test_validate_warns_a_world_of_one_in_one_line() -> None:
    (p,) = warnings_of(fsdp(1))
    assert p.severity == "warning" and p.message == NO_SHARD
    assert "distributed.num_processes = 2 or more" in p.fix and 'distributed.strategy = "single"' in p.fix
    assert "\n" not in str(p)


@pytest.mark.parametrize("data", [fsdp(2), fsdp(1, machines=2), fsdp(None), fsdp(1, sharding_strategy="no_shard")],
                         ids=["two processes", "two machines", "one per GPU at launch", "no_shard asked"])
def test_nothing_to_say(data: dict[str, Any]) -> None:
    assert warnings_of(data) == []


def test_each_sharding_is_named_and_fsdp2_said_its_way() -> None:
    (p,) = warnings_of(fsdp(1, sharding_strategy="shard_grad_op"))
    assert "shard_grad_op runs as NO_SHARD" in p.message
    (q,) = warnings_of(fsdp(1, version=2))
    assert q.message.startswith("with one process FSDP2 shards over that one device, which splits nothing")
    assert fsdp_world_of_one({}, 2) is None and fsdp_world_of_one({}, 1) == NO_SHARD


def test_plan_says_it_in_the_strategy_note(tmp_path: Path) -> None:
    note = strategy_note(fsdp(1), tmp_path)
    assert note.startswith("strategy fsdp (FSDP1): 1 process(es), full_shard") and NO_SHARD in note
    assert "distributed.num_processes = 2 or more" in note
    assert "NO_SHARD" not in strategy_note(fsdp(2), tmp_path)
    # an unset num_processes: validate cannot know, the plan counts what it starts (no GPU here: one)
    assert NO_SHARD in strategy_note(fsdp(None), tmp_path)


def test_plan_and_validate_on_the_command_line(tmp_path: Path, runs_dir: Path) -> None:
    sets = ["--set", "distributed.strategy=fsdp", "--set", "hardware.accelerator=cuda",
            "--set", "distributed.num_processes=1"]
    result = cli("validate", "demo", "--offline", *sets, runs_dir=runs_dir)  # the profile alone: no GPU needed here
    assert result.returncode == 0, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "NO_SHARD" in x]
    assert "warning: distributed.num_processes: " + NO_SHARD in line
    planned = cli("plan", "demo", *sets, runs_dir=runs_dir)  # refused here (no GPU), but the notes are printed
    assert [x for x in planned.stdout.splitlines() if "strategy fsdp" in x and NO_SHARD in x]
