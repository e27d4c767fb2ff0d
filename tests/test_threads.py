"""OMP_NUM_THREADS (issue 16): a run gets the threads a plain script gets, shared out among its
processes, unless the profile sets hardware.cpu_threads_per_process; plan says which and why,
and the rank reports the count torch really uses."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from conftest import cli, demo_profile_data, only_run
from tuitrain.hardware.probe import Hardware
from tuitrain.launch.machines import plan_machines
from tuitrain.launch.plan import LaunchPlan, plan_launch
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import Profile, settings_with_defaults

BOX = Hardware(cpu_count=16, physical_cores=8)


def settings(data: dict) -> dict:
    return settings_with_defaults(Profile(path=None, data=data))


def planned(tmp_path: Path, box: Hardware = BOX, **sections: dict) -> LaunchPlan:
    return plan_launch(settings(demo_profile_data(**sections)), box, tmp_path / "run", "p.toml", machine=MachineFacts())


def test_one_process_gets_every_physical_core_and_plan_says_why(tmp_path):
    plan = planned(tmp_path)
    assert plan.env["OMP_NUM_THREADS"] == "8"
    assert any(n.startswith("OMP_NUM_THREADS=8: every physical core") for n in plan.notes)
    assert "OMP_NUM_THREADS=8" in plan.command_line()


def test_cpu_ranks_share_the_cores_instead_of_one_thread_each(tmp_path):
    # accelerate launch gives MULTI_GPU ranks (tuitrain's CPU ranks) one thread each: 2 of 8 cores used
    plan = planned(tmp_path, distributed={"strategy": "ddp", "num_processes": 3})
    assert plan.env["OMP_NUM_THREADS"] == "2"
    assert any("8 physical cores shared by 3 processes" in n for n in plan.notes)


def test_more_processes_than_cores_still_get_one_thread(tmp_path):
    plan = planned(tmp_path, Hardware(cpu_count=2, physical_cores=2), distributed={"strategy": "ddp", "num_processes": 4})
    assert plan.env["OMP_NUM_THREADS"] == "1"


def test_the_profile_key_wins(tmp_path):
    plan = planned(tmp_path, hardware={"accelerator": "cpu", "cpu_threads_per_process": 3})
    assert plan.env["OMP_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS=3: hardware.cpu_threads_per_process = 3" in plan.notes


def test_a_bad_thread_count_is_one_line(tmp_path, runs_dir):
    profile = tmp_path / "p.toml"
    profile.write_text(tomli_w.dumps(demo_profile_data(hardware={"accelerator": "cpu", "cpu_threads_per_process": 0})))
    result = cli("validate", str(profile), runs_dir=runs_dir)
    assert result.returncode != 0
    assert "hardware.cpu_threads_per_process" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_machines_leave_it_to_each_agent_unless_the_profile_sets_it(tmp_path):
    machines = [{"host": "a", "num_processes": 2}, {"host": "b", "num_processes": 1}]
    data = demo_profile_data(distributed={"strategy": "ddp", "machines": machines, "main_process_ip": "10.0.0.1",
                                          "main_process_port": 29500})
    plan = plan_machines(settings(data), tmp_path / "run", "p.toml")
    assert all("OMP_NUM_THREADS" not in m.env for m in plan.machines)
    assert any("set by the machine's tuitrain agent" in n for n in plan.machines[0].notes)
    data["hardware"] = {"accelerator": "cpu", "cpu_threads_per_process": 5}
    plan = plan_machines(settings(data), tmp_path / "run", "p.toml")
    assert [m.env["OMP_NUM_THREADS"] for m in plan.machines] == ["5", "5"]


def test_the_rank_runs_with_the_planned_threads(runs_dir):
    result = cli("run", "demo", "--set", "training.max_steps=2", "--set", "training.eval_strategy=no",
                 "--set", "training.save_strategy=no", "--set", "hardware.cpu_threads_per_process=1", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "threads 1\n" in (only_run(runs_dir) / "logs" / "rank-0.log").read_text()
