"""Preflight: pure checks of a profile's hardware asks against each recorded box."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tuitrain.hardware.devices import discover
from tuitrain.hardware.host import ProcessMeter
from tuitrain.hardware.preflight import check, resolve_accelerator
from tuitrain.hardware.probe import Hardware, hardware_from
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.profile import Problem, load_profile, resolve_profile_path, settings_with_defaults

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"


def box(name: str, user: str = "me", table: dict[str, Any] | None = None, **extra: Any) -> Hardware:
    table = table or load_table(FIXTURES / f"{name}.json")
    return hardware_from(discover(RecordedNvml(table), ProcessMeter().identify), user=user, **extra)


def settings(**sections: dict[str, Any]) -> dict[str, Any]:
    """The built-in demo profile with defaults (accelerator "auto"), sections overridden."""
    data = copy.deepcopy(settings_with_defaults(load_profile(resolve_profile_path("demo"))))
    data["hardware"]["accelerator"] = "auto"
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return data


def keys(problems: list[Problem], severity: str | None = None) -> list[str]:
    return [p.key for p in problems if severity is None or p.severity == severity]


def test_a_good_profile_on_a_free_gpu_passes():
    problems = check(settings(hardware={"accelerator": "cuda", "gpus": [2]}), box("four_gpu_mixed"), "p.toml")
    assert problems == []


def test_missing_gpus_are_named_with_what_the_machine_has():
    problems = check(settings(hardware={"gpus": [7, "GPU-nope-nope"]}, distributed={"num_processes": 2}),
                     box("four_gpu_mixed"), "p.toml")
    (missing,) = [p for p in problems if "not found" in p.message]
    assert missing.key == "hardware.gpus" and missing.is_error and missing.file == "p.toml"
    assert "7, GPU-nope-nope" in missing.message and "0 (NVIDIA GeForce GTX 1080 Ti)" in missing.message
    assert "tuitrain gpus" in missing.fix


def test_num_processes_above_the_selected_gpus():
    (p,) = check(settings(hardware={"gpus": [2, 3]}, distributed={"num_processes": 3}), box("four_gpu_mixed"))
    assert p.key == "distributed.num_processes" and p.is_error
    assert "3 processes but 2 GPU(s)" in p.message and "num_processes = 2" in p.fix


def test_fewer_processes_than_gpus_is_a_note():
    (p,) = check(settings(hardware={"gpus": [2, 3]}, distributed={"num_processes": 1}), box("four_gpu_mixed"))
    assert p.severity == "note" and p.key == "distributed.num_processes" and "3 stay idle" in p.message


def test_near_full_gpu_warns_naming_processes_and_users():
    (p,) = check(settings(hardware={"gpus": [1]}), box("four_gpu_mixed"))
    assert p.severity == "warning" and p.key == "hardware.gpus"
    assert "GPU 1 (NVIDIA RTX A6000) is 96% full" in p.message
    assert "pid 4100001 (user unknown, 30.0 GiB)" in p.message  # another container's process
    assert "0, 2, 3" in p.fix


def test_near_full_names_real_users_of_real_processes():
    # pid 1 exists on every machine; it belongs to another user as far as "alice" is concerned
    table = load_table(FIXTURES / "four_gpu_mixed.json")
    table["devices"][1]["compute_processes"][0]["pid"] = 1
    hardware = box("four_gpu_mixed", user="alice", table=table)
    proc = hardware.gpus[1].processes[0]
    assert proc.user not in ("alice", "N/A")
    (p,) = check(settings(hardware={"gpus": [1]}), hardware)
    assert f"held by pid 1 {proc.command} ({proc.user}, 30.0 GiB)" in p.message


def test_near_full_of_my_own_processes_names_them():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        table = load_table(FIXTURES / "four_gpu_mixed.json")
        table["devices"][1]["compute_processes"] = [{"pid": sleeper.pid, "used_memory": 46 * 2**30}]
        me = ProcessMeter().identify(sleeper.pid)[0]
        (p,) = check(settings(hardware={"gpus": [1]}), box("four_gpu_mixed", user=me, table=table))
        assert f"held by pid {sleeper.pid} sleep ({me}, 46.0 GiB)" in p.message
    finally:
        sleeper.kill()
        sleeper.wait()


def test_bf16_on_an_old_card():
    problems = check(settings(hardware={"gpus": [2, 0], "mixed_precision": "bf16"}, distributed={"num_processes": 2}),
                     box("four_gpu_mixed"))
    (p,) = problems
    assert p.key == "hardware.mixed_precision" and p.is_error
    assert "GPU 0 (NVIDIA GeForce GTX 1080 Ti) has 6.1" in p.message
    assert 'hardware.mixed_precision = "fp16"' in p.fix and "1, 2, 3" in p.fix


def test_bf16_asked_through_training_args_names_that_key():
    (p,) = check(settings(hardware={"gpus": [0]}, training={"bf16": True}), box("four_gpu_mixed"))
    assert p.key == "training.bf16" and "set training.bf16 = false" in p.fix


def test_bf16_on_ampere_and_hopper_is_fine():
    assert check(settings(hardware={"gpus": [3], "mixed_precision": "bf16"}), box("four_gpu_mixed")) == []
    h100 = box("eight_h100")
    problems = check(settings(hardware={"mixed_precision": "bf16"}, distributed={"num_processes": 8}), h100)
    assert keys(problems, "error") == []


def test_bf16_unknown_compute_capability_warns():
    table = load_table(FIXTURES / "eight_h100.json")
    table["devices"][0]["compute_capability"] = {"error": "NOT_SUPPORTED"}
    busy, p = check(settings(hardware={"gpus": [0], "mixed_precision": "bf16"}), box("", table=table))
    assert p.severity == "warning" and "does not say" in p.message
    assert busy.key == "hardware.gpus" and "93% busy" in busy.message  # its 31 GiB rank computes: taken


def test_fp16_and_bf16_on_the_cpu():
    hardware = box("no_driver", cpu_bf16=False)
    (fp16,) = check(settings(hardware={"mixed_precision": "fp16"}), hardware)
    assert fp16.is_error and fp16.key == "hardware.mixed_precision" and "CPU" in fp16.message
    (bf16,) = check(settings(hardware={"mixed_precision": "bf16"}), hardware)
    assert bf16.severity == "warning" and "AVX512-BF16" in bf16.message
    assert check(settings(hardware={"mixed_precision": "bf16"}), box("no_driver", cpu_bf16=True)) == []
    (p,) = check(settings(training={"fp16": True}), hardware)
    assert p.key == "training.fp16" and p.is_error


def test_cuda_asked_without_a_gpu():
    (p,) = check(settings(hardware={"accelerator": "cuda"}), box("no_driver"))
    assert p.key == "hardware.accelerator" and "NVML: driver not found" in p.message


def test_empty_selection_with_cuda_is_refused_and_auto_falls_back_to_cpu():
    (p,) = check(settings(hardware={"accelerator": "cuda", "gpus": []}), box("four_gpu_mixed"))
    assert p.key == "hardware.gpus" and "hides every GPU" in p.message
    assert resolve_accelerator("auto", box("four_gpu_mixed"), 1, [])[0] == "cpu"
    assert check(settings(hardware={"accelerator": "auto", "gpus": []}), box("four_gpu_mixed")) == []


def test_mps_runs_one_process():
    mac = dataclasses.replace(box("no_driver"), mps=True)
    assert resolve_accelerator("auto", mac, 1) == ("mps", "Apple MPS found and one process asked")
    assert resolve_accelerator("auto", mac, 2)[0] == "cpu"
    (p,) = check(settings(hardware={"accelerator": "mps"}, distributed={"num_processes": 2}), mac)
    assert p.key == "distributed.num_processes" and "MPS runs one process" in p.message
    (missing,) = check(settings(hardware={"accelerator": "mps"}), box("no_driver"))
    assert missing.key == "hardware.accelerator"


def test_mig_card_selected_whole_and_several_instances():
    a100 = box("mig_a100")
    (whole,) = check(settings(hardware={"gpus": [0]}), a100)
    assert whole.severity == "warning" and "MIG enabled" in whole.message
    assert a100.gpus[0].mig_devices[0].uuid in whole.fix
    one = a100.gpus[0].mig_devices[0].uuid
    assert check(settings(hardware={"gpus": [one]}), a100) == []
    two = [m.uuid for m in a100.gpus[0].mig_devices[:2]]
    problems = check(settings(hardware={"gpus": two}, distributed={"num_processes": 2}), a100)
    assert any("2 MIG instances" in p.message and p.is_error for p in problems)


def test_a_lost_gpu_is_refused():
    table = load_table(FIXTURES / "gpu_lost.json")
    table["devices"][1]["handle_error"] = "GPU_IS_LOST"
    problems = check(settings(hardware={"gpus": [1]}), box("", table=table))
    assert any("GPU is lost" in p.message and p.is_error for p in problems)


def test_every_message_names_a_profile_key_and_check_is_pure():
    hardware = box("four_gpu_mixed")
    profile = settings(hardware={"gpus": [1, 0, 9], "mixed_precision": "bf16"}, distributed={"num_processes": 5})
    before = copy.deepcopy(profile)
    problems = check(profile, hardware, "p.toml")
    assert len(problems) >= 4 and profile == before
    assert all(p.key.split(".")[0] in ("hardware", "distributed", "training") for p in problems)
    assert all(p.key in str(p) for p in problems)
    assert problems == check(profile, hardware, "p.toml")


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
@pytest.mark.parametrize("precision", ["no", "fp16", "bf16"])
def test_every_recorded_box_gives_problems_not_exceptions(name, precision):
    hardware = box(name)
    problems = check(settings(hardware={"mixed_precision": precision}, distributed={"num_processes": 2}), hardware)
    assert all(isinstance(p, Problem) and p.key and p.message for p in problems)
    if hardware.gpus:  # two processes on every GPU of the box: enough GPUs except on one-GPU boxes
        too_many = [p for p in problems if p.key == "distributed.num_processes" and p.is_error]
        assert bool(too_many) == (len(hardware.gpus) < 2)


def busy_box(util: int = 95, pid: int = 4100077) -> dict[str, Any]:
    """four_gpu_mixed with its RTX 4090 (GPU 2) computing at `util`% for a process holding 1 GiB of its 24."""
    table = load_table(FIXTURES / "four_gpu_mixed.json")
    table["devices"][2]["utilization"] = {"gpu": util, "memory": 3}
    table["devices"][2]["memory"]["used"] = 2**30
    table["devices"][2]["compute_processes"] = [{"pid": pid, "used_memory": 2**30}]
    return table


def test_a_gpu_busy_computing_with_little_memory_used_warns_too():
    """Issue 13: busy by utilisation, not only by memory; issue 35: held by a process computing there at all."""
    (p,) = check(settings(hardware={"gpus": [2]}), box("four_gpu_mixed", table=busy_box()))
    assert p.severity == "warning" and p.key == "hardware.gpus"
    assert p.message == "GPU 2 (NVIDIA GeForce RTX 4090) is 95% busy, held by pid 4100077 (user unknown, 1.0 GiB)"
    assert "0, 3" in p.fix and "--queue" in p.fix  # GPU 1 is full and busy: no room there
    (quiet,) = check(settings(hardware={"gpus": [2]}), box("four_gpu_mixed", table=busy_box(util=15)))
    assert quiet.message == "GPU 2 (NVIDIA GeForce RTX 4090) is held by pid 4100077 (user unknown, 1.0 GiB)"


def test_one_rule_says_why_a_gpu_is_taken():
    from tuitrain.hardware.devices import GpuProcess
    from tuitrain.hardware.preflight import busy_reasons
    from tuitrain.runs.view.owners import RankOwner

    gpus = box("four_gpu_mixed").gpus
    held = "held by pid 4100001 (user unknown, 30.0 GiB), pid 4100002 (user unknown, 16.0 GiB)"
    assert busy_reasons(gpus[1]) == ["96% full", "97% busy", held]
    assert busy_reasons(gpus[0]) == [] and busy_reasons(gpus[2]) == []  # GPU 0 drives a desktop: graphics only
    busy = box("four_gpu_mixed", table=busy_box()).gpus[2]
    assert busy_reasons(busy) == ["95% busy", "held by pid 4100077 (user unknown, 1.0 GiB)"]
    # a run resumed on its own GPU is not kept off it by its own ranks; anyone else's process counts
    own = dataclasses.replace(busy, processes=(GpuProcess(7, 2**30, owner=RankOwner("r1", 0)),))
    assert busy_reasons(own, run_id="r1") == []
    assert busy_reasons(own, run_id="r2") == ["95% busy", "held by rank 0 of run r1 (1.0 GiB)"]
    assert busy_reasons(own) == ["95% busy", "held by rank 0 of run r1 (1.0 GiB)"]  # a new run owns nothing yet
