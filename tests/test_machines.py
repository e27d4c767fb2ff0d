"""Several machines in a profile (issue 11, item 1): [[distributed.machines]], its validation, one plan per machine,
and `tuitrain run` refusing (for now) to start such a profile as a wrong local run."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from conftest import cli
from tuitrain.hardware import Hardware
from tuitrain.launch import plan_launch
from tuitrain.launch.machines import has_machines, interface_env, plan_machines
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import (
    Problem,
    builtin_profile_path,
    load_profile,
    settings_with_defaults,
    validate_profile,
)

DEMO: dict[str, Any] = tomllib.loads(builtin_profile_path().read_text(encoding="utf-8"))


def two_machines(**distributed: Any) -> dict[str, Any]:
    """The demo as gloo ranks on two machines (node1 main at 10.0.0.1:29555, node2), eth1 between them."""
    data = copy.deepcopy(DEMO)
    data["distributed"] = {"strategy": "ddp", "num_processes": 1, "main_process_ip": "10.0.0.1",
                           "main_process_port": 29555, "network_interface": "eth1",
                           "machines": [{"host": "node1"}, {"host": "node2", "python": "/opt/env/bin/python",
                                                            "workdir": "/srv/project"}]}
    for key, value in distributed.items():
        if value is None:
            data["distributed"].pop(key, None)
        else:
            data["distributed"][key] = value
    return data


def problems(data: dict[str, Any], severity: str = "error") -> list[Problem]:
    return [p for p in validate_profile(data, "p.toml", None, training_fields=None, model_types=None)
            if p.severity == severity and p.key != "training"]  # [training] is not checked here


def one(data: dict[str, Any]) -> Problem:
    found = problems(data)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]


# ------------------------------------------------------------------ validation


def test_two_machines_are_valid() -> None:
    assert problems(two_machines()) == []
    assert problems(two_machines(), "warning") == []


def test_a_duplicated_host_names_both_places() -> None:
    p = one(two_machines(machines=[{"host": "node1"}, {"host": "node1"}]))
    assert p.key == "distributed.machines[1].host"
    assert "listed twice (machines 0 and 1)" in p.message and "list each machine once" in (p.fix or "")


def test_a_host_that_ssh_would_read_as_an_option() -> None:
    p = one(two_machines(machines=[{"host": "node1"}, {"host": "-oProxyCommand=touch /tmp/x"}]))
    assert p.key == "distributed.machines[1].host" and "starts with '-'" in p.message
    p = one(two_machines(machines=[{"host": "node1"}, {"host": "node 2"}]))
    assert "spaces" in p.message


def test_a_machine_without_host_or_with_an_unknown_key() -> None:
    found = problems(two_machines(machines=[{"host": "node1"}, {"hots": "node2"}]))
    assert {p.key for p in found} == {"distributed.machines[1].host", "distributed.machines[1].hots"}
    assert any("did you mean 'host'" in (p.fix or "") for p in found)


def test_machines_must_be_tables() -> None:
    p = one(two_machines(machines=["node1", {"host": "node2"}]))
    assert p.key == "distributed.machines[0]" and "expected a table" in p.message
    assert "[[distributed.machines]]" in (p.fix or "")
    p = one(two_machines(machines="node1"))
    assert p.key == "distributed.machines"


def test_machines_that_disagree_on_their_process_count() -> None:
    data = two_machines(num_processes=None, machines=[{"host": "node1", "num_processes": 2}, {"host": "node2"}])
    data["hardware"] = {"accelerator": "cuda"}
    data["distributed"]["machines"][1]["gpus"] = [0]
    p = one(data)
    assert p.key == "distributed.machines[1].gpus"
    assert "machine 1 runs 1 process(es), machine 0 runs 2" in p.message
    assert "same num_processes" in (p.fix or "")


def test_more_processes_than_a_machines_gpus() -> None:
    data = two_machines(num_processes=None, machines=[{"host": "node1", "gpus": [0, 1]},
                                                      {"host": "node2", "gpus": [3], "num_processes": 2}])
    data["hardware"] = {"accelerator": "cuda"}
    p = one(data)
    assert p.key == "distributed.machines[1].num_processes"
    assert "2 processes (num_processes) on 1 GPU(s)" in p.message and "num_processes = 1" in (p.fix or "")


def test_a_process_count_only_the_machine_knows_is_asked_for() -> None:
    data = two_machines(num_processes=None)
    data["hardware"] = {"accelerator": "auto"}
    found = problems(data)
    assert [p.key for p in found] == ["distributed.machines[0].num_processes", "distributed.machines[1].num_processes"]
    assert "list the machine's gpus" in (found[0].fix or "")
    data["hardware"]["gpus"] = [0, 1]  # every machine's default
    assert problems(data) == []


def test_listed_machines_need_the_main_address() -> None:
    p = one(two_machines(main_process_ip=None))
    assert p.key == "distributed.main_process_ip"
    assert "main machine (node1) as the others reach it" in p.message


def test_machine_count_against_num_machines() -> None:
    p = one(two_machines(num_machines=3))
    assert p.key == "distributed.num_machines" and "3 but 2 machine(s)" in p.message
    assert problems(two_machines(num_machines=2)) == []


def test_machine_rank_is_ignored_with_listed_machines() -> None:
    warned = problems(two_machines(machine_rank=1), "warning")
    assert [p.key for p in warned] == ["distributed.machine_rank"]
    assert problems(two_machines(machine_rank=1)) == []


@pytest.mark.parametrize(("name", "words"), [
    ("=eth1", "NCCL's prefix/exclude syntax"),
    ("^docker", "NCCL's prefix/exclude syntax"),
    ("eth 1", "not one interface name"),
    ("eth0,eth1", "not one interface name"),
    ("", "is empty"),
    ("averyveryverylongname", "15 characters"),
    ("eth/1", "not an interface name"),
])
def test_network_interface_is_one_exact_name(name: str, words: str) -> None:
    p = one(two_machines(network_interface=name))
    assert p.key == "distributed.network_interface" and words in p.message
    if name.startswith("="):
        assert 'network_interface = "eth1"' in (p.fix or "")


def test_a_single_strategy_cannot_span_machines() -> None:
    p = one(two_machines(strategy="single"))
    assert p.key == "distributed.machines" and '2 machines with strategy = "single"' in p.message


def test_the_port_is_asked_for_as_with_num_machines() -> None:
    warned = problems(two_machines(main_process_port=None), "warning")
    assert [p.key for p in warned] == ["distributed.main_process_port"]


def test_the_static_form_still_validates_as_before() -> None:
    data = copy.deepcopy(DEMO)
    data["distributed"] = {"strategy": "ddp", "num_machines": 2, "machine_rank": 1, "main_process_ip": "10.0.0.1",
                           "main_process_port": 29555}
    assert problems(data) == []
    data["distributed"]["machine_rank"] = 2
    assert one(data).key == "distributed.machine_rank"
    del data["distributed"]["main_process_ip"]
    assert {p.key for p in problems(data)} == {"distributed.machine_rank", "distributed.main_process_ip"}


def test_a_file_with_machines_loads_and_set_still_works(tmp_path: Path) -> None:
    path = tmp_path / "two.toml"
    path.write_text(tomli_w.dumps(two_machines()))
    profile = load_profile(path, ["distributed.main_process_port=29600", "distributed.network_interface=net0"])
    assert profile.data["distributed"]["main_process_port"] == 29600
    assert [m["host"] for m in profile.data["distributed"]["machines"]] == ["node1", "node2"]
    settings = settings_with_defaults(profile)
    assert settings["distributed"]["num_machines"] == 2  # the listed machines count
    assert has_machines(settings) and not has_machines(DEMO)


def test_a_problem_in_the_file_names_file_and_key(tmp_path: Path, runs_dir: Path) -> None:
    data = two_machines(machines=[{"host": "node1"}, {"host": "node1"}])
    path = tmp_path / "dup.toml"
    path.write_text(tomli_w.dumps(data))
    result = cli("validate", str(path), runs_dir=runs_dir)
    assert result.returncode == 1
    line = next(line for line in result.stderr.splitlines() if "listed twice" in line)
    assert line.startswith(f"{path}:") and "distributed.machines[1].host" in line
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------ planning


def test_one_plan_per_machine() -> None:
    settings = profile_with_defaults_of(two_machines())
    plan = plan_machines(settings, Path("/runs/r1"), "p.toml", local_python="/venv/bin/python", local_cwd="/here")
    assert plan.errors == []
    assert [m.host for m in plan.machines] == ["node1", "node2"]
    assert plan.num_machines == 2 and plan.num_processes == 2
    first, second = plan.machines
    assert first.argv == ["/venv/bin/python", "-m", "accelerate.commands.launch", "--config_file",
                          "/here/.tuitrain/runs/r1/machine-0/accelerate.yaml", "--machine_rank", "0",
                          "--num_machines", "2", "--main_process_ip", "10.0.0.1", "--main_process_port", "29555",
                          "-m", "tuitrain.engine", "/here/.tuitrain/runs/r1/machine-0"]
    # each machine's part of the run in a folder of its own under its workdir: distinct even on a shared disk
    assert second.node_dir == "/srv/project/.tuitrain/runs/r1/machine-1" and second.argv[-1] == second.node_dir
    assert second.argv[0] == "/opt/env/bin/python" and second.argv[5:7] == ["--machine_rank", "1"]
    assert (first.workdir, second.workdir) == ("/here", "/srv/project")
    for machine in plan.machines:
        assert machine.env["GLOO_SOCKET_IFNAME"] == "eth1"
        assert machine.env["NCCL_SOCKET_IFNAME"] == "=eth1"
        assert machine.env["CUDA_VISIBLE_DEVICES"] == ""  # CPU ranks
        config = machine.accelerate_config
        assert config["machine_rank"] == machine.machine_rank
        assert (config["num_machines"], config["num_processes"], config["distributed_type"]) == (2, 2, "MULTI_GPU")
        assert (config["main_process_ip"], config["main_process_port"]) == ("10.0.0.1", 29555)
    assert "accelerate launch --config_file" in second.command_line()
    assert "NCCL_SOCKET_IFNAME==eth1" in second.command_line()


def test_planning_is_pure() -> None:
    settings = profile_with_defaults_of(two_machines())
    before = copy.deepcopy(settings)
    a = plan_machines(settings, Path("/runs/r1"), "p.toml", local_python="/p", local_cwd="/c")
    b = plan_machines(settings, Path("/runs/r1"), "p.toml", local_python="/p", local_cwd="/c")
    assert a == b and settings == before


def test_gpus_per_machine() -> None:
    data = two_machines(num_processes=None, network_interface=None,
                        machines=[{"host": "a", "gpus": [2, 0]}, {"host": "b", "gpus": ["GPU-1", "GPU-2"],
                                                                  "network_interface": "ib0"}])
    data["hardware"] = {"accelerator": "auto"}
    plan = plan_machines(profile_with_defaults_of(data), Path("/r"), "p.toml", processes_set=False,
                         local_python="/p", local_cwd="/c")
    a, b = plan.machines
    assert a.env["CUDA_VISIBLE_DEVICES"] == "2,0" and a.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert b.env["CUDA_VISIBLE_DEVICES"] == "GPU-1,GPU-2"
    assert "GLOO_SOCKET_IFNAME" not in a.env and b.env["NCCL_SOCKET_IFNAME"] == "=ib0"
    assert (a.accelerator, a.num_processes, plan.num_processes) == ("cuda", 2, 4)
    assert a.accelerate_config["num_processes"] == 4


def test_no_port_is_an_error_of_the_plan() -> None:
    plan = plan_machines(profile_with_defaults_of(two_machines(main_process_port=None)), Path("/r"), "p.toml")
    assert [p.key for p in plan.errors] == ["distributed.main_process_port"]
    assert "--main_process_port" not in plan.machines[0].argv


def test_the_one_machine_planner_refuses_listed_machines() -> None:
    settings = profile_with_defaults_of(two_machines())
    plan = plan_launch(settings, Hardware(), Path("/r"), "p.toml", machine=MachineFacts())
    assert any("is planned machine by machine" in p.message for p in plan.errors)


def test_interface_env() -> None:
    assert interface_env(None) == {}
    assert interface_env("eth1") == {"GLOO_SOCKET_IFNAME": "eth1", "NCCL_SOCKET_IFNAME": "=eth1"}


def profile_with_defaults_of(data: dict[str, Any]):
    from tuitrain.profile import Profile

    return settings_with_defaults(Profile(path=None, data=data))


# ------------------------------------------------------------------ the command line


def test_plan_prints_each_machine_and_run_checks_them_first(tmp_path: Path, runs_dir: Path) -> None:
    path = tmp_path / "two.toml"
    path.write_text(tomli_w.dumps(two_machines()))
    result = cli("plan", str(path), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "machines: 2   processes: 2 in all   main: 10.0.0.1:29555" in out
    assert "machine 0: node1" in out and "machine 1: node2" in out
    assert out.count("--machine_rank 1 --num_machines 2 --main_process_ip 10.0.0.1 --main_process_port 29555") == 1
    assert "NCCL_SOCKET_IFNAME==eth1" in out and "folder: /srv/project" in out

    as_json = json.loads(cli("plan", str(path), "--json", runs_dir=runs_dir).stdout)
    assert [m["machine_rank"] for m in as_json["machines"]] == [0, 1]
    assert as_json["machines"][1]["env"]["GLOO_SOCKET_IFNAME"] == "eth1"

    # node1 and node2 are no machines here: the doctor says so, machine by machine, and nothing starts
    result = cli("run", str(path), runs_dir=runs_dir, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    failed = [line for line in result.stderr.splitlines() if "  ssh  " in line and "FAIL" in line]
    assert [line.split()[0] for line in failed] == ["node1", "node2"], result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("nothing was started (fix them, or pass --no-doctor to "
                                                           "start anyway)")
    assert list(runs_dir.iterdir()) == []  # nothing started
