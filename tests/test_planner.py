"""One planner (issue 25): the local plan, each listed machine's plan and a Slurm node's plan are the same function's
answers (tuitrain.launch.planner.plan_machine), and where two of them plan the same machine they agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from conftest import demo_profile_data
from tuitrain.hardware import Hardware, detect_hardware
from tuitrain.launch import plan_launch
from tuitrain.launch.machines import plan_machines
from tuitrain.launch.planner import MachineRole, arrival_env, plan_machine, role_of
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import Profile, settings_with_defaults
from tuitrain.profile.rules.machines import machine_processes
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.start.from_profile import launch_settings
from tuitrain.slurm.agent import job_port, plan_node
from tuitrain.slurm.submit import job_settings
from tuitrain.torch_build import RECORDED_GPUS_ENV

NVML = Path(__file__).resolve().parent / "fixtures" / "nvml"
BOX = Hardware(cpu_count=16, physical_cores=8)
RUN = Path("/runs/r1")


def settings_of(data: dict[str, Any]) -> dict[str, Any]:
    return settings_with_defaults(Profile(path=None, data=data))


def without_rank_flags(argv: list[str]) -> list[str]:
    """A listed machine's command less what it spells out for its reader (its place is in its config too)."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in ("--machine_rank", "--num_machines", "--main_process_ip"):
            skip = True
            continue
        out.append(word)
    return out


@pytest.mark.parametrize("sections", [
    {"hardware": {"accelerator": "cpu"}, "distributed": {"strategy": "ddp", "num_processes": 2}},
    {"hardware": {"accelerator": "auto"}, "distributed": {"strategy": "fsdp", "num_processes": 2}},
    {"hardware": {"accelerator": "cpu", "cpu_threads_per_process": 3},
     "distributed": {"strategy": "ddp", "num_processes": 1, "num_machines": 2, "machine_rank": 1,
                     "main_process_ip": "10.0.0.1", "main_process_port": 29600}},
])
def test_the_local_plan_is_the_planners_answer_for_the_machine_the_profile_describes(sections: dict[str, Any]) -> None:
    settings = settings_of(demo_profile_data(**sections))
    plan = plan_launch(settings, BOX, RUN, "p.toml", machine=MachineFacts())
    part = plan_machine(settings, role_of(settings, RUN), BOX, "p.toml", facts=MachineFacts())
    assert (plan.argv, plan.env, plan.accelerate_config, plan.accelerator, plan.cwd) == (
        part.argv, part.env, part.accelerate_config, part.accelerator, part.cwd)
    assert plan.problems == part.problems and part.thread_note in plan.notes


def two_machines(**hardware: Any) -> dict[str, Any]:
    return demo_profile_data(hardware=hardware, distributed={
        "strategy": "ddp", "num_processes": 1, "main_process_ip": "10.0.0.1", "main_process_port": 29555,
        "network_interface": "eth1",
        "machines": [{"host": "node1"}, {"host": "node2", "python": "/opt/env/bin/python", "workdir": "/srv/project",
                                         "network_interface": "ib0"}]})


def test_each_listed_machine_is_the_planners_answer_for_it_planned_elsewhere() -> None:
    settings = settings_of(two_machines(accelerator="cpu"))
    plan = plan_machines(settings, RUN, "p.toml", local_python="/venv/bin/python", local_cwd="/here")
    for machine in plan.machines:
        role = MachineRole(folder=machine.node_dir, rank=machine.machine_rank, machines=2, processes=1,
                           main_ip="10.0.0.1", port=29555, interface=machine.network_interface, python=machine.python,
                           relative_to="/here")
        part = plan_machine(settings, role, None, "p.toml")
        assert (machine.argv, machine.env, machine.accelerate_config, machine.accelerator) == (
            part.argv, part.env, part.accelerate_config, part.accelerator)
        assert part.problems == []  # nothing of a machine elsewhere is checked here: the doctor does
    assert plan.machines[1].env["NCCL_SOCKET_IFNAME"] == "=ib0"


@pytest.mark.parametrize("hardware", [{"accelerator": "cpu", "cpu_threads_per_process": 2},
                                      {"accelerator": "cuda", "gpus": [2, 0], "device_order": "PCI_BUS_ID",
                                       "cpu_threads_per_process": 2}])
def test_one_listed_machine_runs_what_the_local_plan_runs_on_it(hardware: dict[str, Any]) -> None:
    """Planned at home (no hardware) or on the machine itself, one machine gets the same environment and accelerate
    config, and the same command but for where its run folder is and the place it spells out. (The threads are
    fixed by the profile: only the machine knows its cores.)"""
    data = demo_profile_data(hardware=hardware, distributed={"strategy": "ddp", "num_processes": 2,
                                                             "main_process_port": 29555,
                                                             "machines": [{"host": "node1"}]})
    settings = settings_of(data)
    box = detect_hardware(environ={"TUITRAIN_NVML_TABLE": str(NVML / "eight_h100.json")})
    local = plan_launch(settings, box, RUN, "p.toml", machine=MachineFacts())
    machine = plan_machines(settings, RUN, "p.toml", local_python=local.argv[0], local_cwd="/here").machines[0]
    here_env = {k: v.replace(machine.node_dir, str(RUN)) for k, v in machine.env.items()}  # the recorder's files
    # but for the word that its GPUs are a recorded table's (on the box itself, its driver's: no such word)
    local_env = {k: v for k, v in local.env.items() if k != RECORDED_GPUS_ENV}
    assert here_env == local_env and machine.accelerate_config == local.accelerate_config
    assert machine.accelerator == local.accelerator == hardware["accelerator"]
    assert [w.replace(machine.node_dir, str(RUN)) for w in without_rank_flags(machine.argv)] == local.argv


@pytest.mark.parametrize("extra", [{}, {"script": {"path": "train.py", "workdir": "/here"}}])
def test_a_listed_machine_completed_on_arrival_runs_with_the_local_plans_environment(extra: dict[str, Any],
                                                                                    monkeypatch) -> None:
    """What only the machine knows (its cores: the threads; where its tuitrain is: a script's hook) is filled in on
    arrival by the planner's own rules, so its environment is the one `tuitrain run` plans on that machine."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    data = demo_profile_data(hardware={"accelerator": "cpu"}, distributed={
        "strategy": "ddp", "num_processes": 2, "main_process_port": 29555, "machines": [{"host": "node1"}]})
    settings = settings_of({**data, **extra})
    local = plan_launch(settings, BOX, RUN, "p.toml", machine=MachineFacts())
    machine = plan_machines(settings, RUN, "p.toml", local_python=local.argv[0], local_cwd="/here").machines[0]
    assert "OMP_NUM_THREADS" not in machine.env  # planned at home: its cores are not known there
    assert arrival_env(machine.env, BOX.physical_cores, machine.num_processes) == local.env
    fixed = {**machine.env, "OMP_NUM_THREADS": "3"}  # hardware.cpu_threads_per_process: the plan's, kept
    assert arrival_env(fixed, BOX.physical_cores, 2)["OMP_NUM_THREADS"] == "3"


def frozen_run(tmp_path: Path, data: dict[str, Any]) -> RunPaths:
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    paths.profile.write_text(tomli_w.dumps(data))
    paths.record.write_text(json.dumps({"id": "run", "resume_from": None}))
    return paths


def test_a_slurm_node_plans_as_run_plans_that_machine_of_the_profile(tmp_path: Path, monkeypatch) -> None:
    """Node 1 of a two-node job is planned as `tuitrain run` plans machine 1 of a profile that says where the two
    meet: the same command, environment and accelerate config."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML / "no_driver.json"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    data = demo_profile_data(hardware={"accelerator": "cpu"}, distributed={"strategy": "ddp", "num_processes": 2})
    paths = frozen_run(tmp_path, data)
    node = plan_node(paths, 1, 2, "10.0.0.7", "1234")
    as_profile = demo_profile_data(hardware={"accelerator": "cpu"}, distributed={
        "strategy": "ddp", "num_processes": 2, "num_machines": 2, "machine_rank": 1, "main_process_ip": "10.0.0.7",
        "main_process_port": job_port("1234")})
    local = plan_launch(settings_of(as_profile), detect_hardware(), paths.root, str(paths.profile))
    assert (node.argv, node.env, node.accelerate_config, node.num_processes, node.num_machines) == (
        local.argv, local.env, local.accelerate_config, local.num_processes, local.num_machines)
    assert node.accelerate_config["machine_rank"] == 1 and node.main_process_port == job_port("1234")


def test_a_slurm_node_meets_the_others_over_its_interface_and_keeps_slurms_gpus(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML / "eight_h100.json"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    data = demo_profile_data(hardware={"accelerator": "cuda", "gpus": [5]},
                             distributed={"strategy": "ddp", "num_processes": 2, "network_interface": "ib0"})
    node = plan_node(frozen_run(tmp_path, data), 1, 2, "10.0.0.7", "1234")  # node 1: no port of its own to probe
    assert "CUDA_VISIBLE_DEVICES" not in node.env  # Slurm's own selection: every GPU it gave the job is the run's
    assert node.env["GLOO_SOCKET_IFNAME"] == "ib0" and node.env["NCCL_SOCKET_IFNAME"] == "=ib0"  # as a listed machine


@pytest.mark.parametrize(("hardware", "distributed", "processes"), [
    ({"accelerator": "cuda", "gpus": [0, 1, 2, 3]}, {"strategy": "ddp", "num_processes": None}, 4),
    ({"accelerator": "cuda", "gpus": [0, 1, 2, 3]}, {"strategy": "ddp", "num_processes": 2}, 2),
    ({"accelerator": "cuda", "gpus": [0, 1]}, {"strategy": "single", "num_processes": None}, 1),
    ({"accelerator": "cpu"}, {"strategy": "ddp", "num_processes": None}, 1),
])
def test_every_backend_starts_the_same_processes_on_a_machine(hardware: dict[str, Any], distributed: dict[str, Any],
                                                              processes: int) -> None:
    """A run here, a listed machine and a Slurm node with the same GPUs run the same number of processes. A Slurm job
    used to run one process on a node it asked one GPU per listed GPU for (num_processes unset)."""
    data = demo_profile_data(hardware=hardware, distributed=distributed)
    box = detect_hardware(environ={"TUITRAIN_NVML_TABLE": str(NVML / "eight_h100.json")})
    here, _notes = launch_settings(Profile(path=None, data=data), box)
    listed = demo_profile_data(hardware=hardware, distributed={**distributed, "machines": [{"host": "node1"}]})
    settings = settings_of(listed)
    counting = listed["distributed"]  # as written: an unset num_processes is no count
    _settings, resources = job_settings(Profile(path=None, data=data))
    assert here["distributed"]["num_processes"] == processes
    assert machine_processes(settings["distributed"]["machines"][0], counting, settings["hardware"]) == processes
    assert resources.processes_per_node == processes


def test_a_slurm_job_with_any_n_gpus_asks_for_n_per_node() -> None:
    """`hardware.gpus = N` (any N) is how many a node gets under Slurm, as a list's length is: it used to end
    `tuitrain submit` in a TypeError."""
    data = demo_profile_data(hardware={"accelerator": "cuda", "gpus": 2},
                             distributed={"strategy": "ddp", "num_processes": None})
    _settings, resources = job_settings(Profile(path=None, data=data))
    assert (resources.processes_per_node, resources.gpus_per_node) == (2, 2)


def test_the_nccl_flight_recorder_is_on_for_cuda_runs_and_writes_into_the_run(monkeypatch) -> None:
    from tuitrain.launch.flight_recorder import TRACE_FILE_PREFIX

    box = detect_hardware(environ={"TUITRAIN_NVML_TABLE": str(NVML / "eight_h100.json")})
    monkeypatch.delenv("TORCH_FR_BUFFER_SIZE", raising=False)
    monkeypatch.delenv("TORCH_NCCL_TRACE_BUFFER_SIZE", raising=False)
    cuda = plan_launch(settings_of(demo_profile_data(hardware={"accelerator": "cuda", "gpus": [0, 1]})), box, RUN,
                       "p.toml", machine=MachineFacts())
    assert cuda.env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1" and int(cuda.env["TORCH_FR_BUFFER_SIZE"]) > 0
    assert cuda.env["TORCH_FR_DUMP_TEMP_FILE"] == cuda.env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == f"{RUN}/{TRACE_FILE_PREFIX}"
    cpu = plan_launch(settings_of(demo_profile_data(hardware={"accelerator": "cpu"})), box, RUN, "p.toml",
                      machine=MachineFacts())
    assert not any(k.startswith(("TORCH_FR_", "TORCH_NCCL_")) for k in cpu.env)
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "0")  # the user turned it off: theirs is kept
    off = plan_launch(settings_of(demo_profile_data(hardware={"accelerator": "cuda", "gpus": [0, 1]})), box, RUN,
                      "p.toml", machine=MachineFacts())
    assert not any(k.startswith(("TORCH_FR_", "TORCH_NCCL_")) for k in off.env)
