"""GPU memory as nvidia-smi shows it: used without the driver's reserve (NVML's version 2 memory call).

On a real H100 (driver 580) NVML's version 1 call counted ~480 MiB the driver reserves as used:
an idle GPU read 0.5 GiB where nvidia-smi said 0 MiB, a run 1319 MiB where it said 839. The recorded
table h100_reserved.json says both answers; tables without `reserved` are of drivers with only v1.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tuitrain.hardware.devices import discover, no_identity
from tuitrain.hardware.preflight import busy_reasons
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.hardware.sampler import Sampler

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"
MiB = 2**20


def table(name: str) -> dict[str, Any]:
    return load_table(FIXTURES / f"{name}.json")


class Counting(RecordedNvml):
    """A recorded table that counts the memory calls of each version."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.calls = {"v1": 0, "v2": 0}

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: Any = None) -> Any:
        self.calls["v2" if version else "v1"] += 1
        return super().nvmlDeviceGetMemoryInfo(handle, version)


def test_used_memory_leaves_out_the_drivers_reserve_as_nvidia_smi_does():
    idle, busy = discover(RecordedNvml(table("h100_reserved")), no_identity).gpus
    assert (idle.memory_used, idle.memory_reserved) == (0, 480 * MiB)
    assert busy.memory_used == 839 * MiB == busy.processes[0].used_memory
    assert idle.memory_total == 81559 * MiB  # nvidia-smi's total: the reserve is part of it


def test_the_recorded_table_answers_version_one_as_the_driver_did():
    lib = RecordedNvml(table("h100_reserved"))
    lib.nvmlInit()
    handle = lib.nvmlDeviceGetHandleByIndex(1)
    assert lib.nvmlDeviceGetMemoryInfo(handle).used == 1319 * MiB
    v2 = lib.nvmlDeviceGetMemoryInfo(handle, lib.nvmlMemory_v2)
    assert (v2.used, v2.reserved, v2.free) == (839 * MiB, 480 * MiB, (81559 - 839 - 480) * MiB)


def test_a_driver_without_version_two_reads_version_one_and_is_asked_once():
    lib = Counting(table("eight_h100"))
    with Sampler(lib, history=5) as sampler:
        for _ in range(4):
            snapshot = sampler.sample()
    assert lib.calls == {"v2": 8, "v1": 4 * 8}  # v2 once per GPU, then never again in the session
    assert snapshot.gpus[0].memory_used == table("eight_h100")["devices"][0]["memory"]["used"]


def test_the_version_two_driver_is_asked_version_two_on_every_sample():
    lib = Counting(table("h100_reserved"))
    with Sampler(lib, history=5) as sampler:
        for _ in range(3):
            sampler.sample()
    assert lib.calls["v1"] == 0 and lib.calls["v2"] >= 3 * 2


def test_a_lost_gpu_is_still_lost_under_version_two():
    data = table("gpu_lost")
    for device in data["devices"]:
        device["memory"]["reserved"] = 300 * MiB
    with Sampler(RecordedNvml(data), history=10) as sampler:
        for _ in range(6):
            snapshot = sampler.sample()
        assert sampler.session.lost == {1}
    assert snapshot.gpus[1].lost and not snapshot.gpus[0].lost


def test_the_preflights_full_rule_counts_what_nvidia_smi_counts():
    data = copy.deepcopy(table("h100_reserved"))
    memory = data["devices"][1]["memory"]
    memory["used"] = int(memory["total"] * 0.895)  # 89.5 % by nvidia-smi; v1 would say 90.1 % with the reserve
    gpu = discover(RecordedNvml(data), no_identity).gpus[1]
    assert not any(reason.endswith("full") for reason in busy_reasons(gpu)), busy_reasons(gpu)


def test_gpus_text_and_json_show_nvidia_smis_figures(tmp_path):
    env = {**os.environ, "TUITRAIN_NVML_TABLE": str(FIXTURES / "h100_reserved.json")}
    argv = [sys.executable, "-m", "tuitrain", "gpus", "--runs-dir", str(tmp_path)]
    text = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert text.returncode == 0, text.stderr
    rows = [line for line in text.stdout.splitlines() if "H100" in line]
    assert "0.0 / 79.6 GiB" in rows[0] and "0.8 / 79.6 GiB" in rows[1], text.stdout
    data = json.loads(subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=60).stdout)
    assert [(g["memory_used"], g["memory_reserved"]) for g in data["gpus"]] == [(0, 480 * MiB), (839 * MiB, 480 * MiB)]
