"""Discovery through NVML: the gate, N/A fields, MIG, lost GPUs, and no driver at all.

Recorded device tables (tests/fixtures/nvml) stand in for pynvml on this driverless machine;
the real pynvml is used where it can be (no driver: a normal state).
"""

from __future__ import annotations

import json
import math
import os
import pickle
from pathlib import Path

import pytest

from tuitrain.hardware import GpuInfo, Hardware, detect_hardware
from tuitrain.hardware.devices import discover, no_identity
from tuitrain.hardware.na import NA, plain
from tuitrain.hardware.nvml import NvmlSession
from tuitrain.hardware.probe import cpu_has_bf16, hardware_from
from tuitrain.hardware.recorded import TABLE_ENV, RecordedNvml, library_from_env, load_table

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"


def recorded(name: str) -> RecordedNvml:
    return RecordedNvml(load_table(FIXTURES / f"{name}.json"))


# ---------------------------------------------------------------------------- NA


def test_na_prints_as_na_is_falsy_and_nan_in_arithmetic():
    assert str(NA) == "N/A" and NA == "N/A" and not NA
    assert f"{NA}" == "N/A" and f"{NA:>6.1f}" == "   N/A" and f"{NA:<5d}|" == "N/A  |"
    assert math.isnan(NA + 1) and math.isnan(2 * NA) and math.isnan(NA / 3) and math.isnan(float(NA))
    assert NA + " GiB" == "N/A GiB"
    assert not (NA < 1) and not (NA > 1) and NA != 0
    assert (NA or 0) == 0
    assert pickle.loads(pickle.dumps(NA)) is NA
    assert plain({"a": NA, "b": (1, NA)}) == {"a": None, "b": [1, None]}
    assert json.dumps(plain(GpuInfo(0))).count("null") > 10


# ---------------------------------------------------------------------------- no driver


@pytest.mark.no_nvidia_driver
def test_real_pynvml_without_a_driver_is_a_normal_state():
    discovery = discover()  # the real pynvml: this machine has no NVIDIA driver
    assert not discovery.available and discovery.gpus == ()
    assert discovery.status_line == "no NVIDIA GPU (NVML: driver not found)"


def test_recorded_no_driver_table_says_the_same():
    discovery = discover(recorded("no_driver"), no_identity)
    assert (discovery.available, discovery.reason, discovery.gpus) == (False, "driver not found", ())


def test_session_without_a_driver_answers_na_to_everything():
    with NvmlSession.open(recorded("no_driver")) as session:
        assert not session.available
        assert session.device_count() == 0
        assert session.device_call(0, "nvmlDeviceGetName") is NA
        assert session.system_call("nvmlSystemGetDriverVersion") is NA


@pytest.mark.no_nvidia_driver
def test_detect_hardware_on_this_machine():
    hardware = detect_hardware(environ={})
    assert isinstance(hardware, Hardware)
    assert hardware.gpus == () and not hardware.has_cuda and not hardware.mps
    assert hardware.nvml_reason == "driver not found"
    assert hardware.cpu_count == os.cpu_count()
    assert hardware.host.memory_total > 0 and hardware.user


def test_detect_hardware_honours_the_table_env_var():
    hardware = detect_hardware(environ={TABLE_ENV: str(FIXTURES / "eight_h100.json")})
    assert hardware.has_cuda and len(hardware.gpus) == 8 and hardware.nvml_reason == ""
    assert library_from_env({}) is None


# ---------------------------------------------------------------------------- full tables


def test_four_gpu_box_every_field():
    discovery = discover(recorded("four_gpu_mixed"), no_identity)
    assert discovery.available and discovery.driver_version == "550.54.15"
    old, busy, fast, idle = discovery.gpus
    assert [g.index for g in discovery.gpus] == [0, 1, 2, 3]
    assert old.name == "NVIDIA GeForce GTX 1080 Ti" and old.compute_capability == (6, 1)
    assert old.pci_bus_id == "00000000:01:00.0" and old.uuid.startswith("GPU-1080")
    assert old.power_limit == 250.0 and old.power_draw == 21.0  # milliwatts → watts
    assert old.mig_enabled is NA and old.mig_devices == ()
    assert [(p.pid, p.kind) for p in old.processes] == [(4100010, "graphics")]
    assert busy.memory_total == 49140 * 2**20 and busy.memory_used == 47300 * 2**20
    assert 0.96 < busy.memory_fraction < 0.97 and busy.utilization == 97 and busy.temperature == 81
    assert [p.used_memory for p in busy.processes] == [30 * 2**30, 16 * 2**30]
    assert busy.processes[0].user is NA  # a pid this machine does not have (another container's)
    assert fast.compute_capability_text == "8.9" and fast.speed_estimate == 16384 * 2520
    assert idle.processes == () and not idle.lost


def test_eight_h100():
    gpus = discover(recorded("eight_h100"), no_identity).gpus
    assert len(gpus) == 8 and {g.name for g in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert all(g.mig_enabled is False and len(g.processes) == 1 for g in gpus)
    assert len({g.uuid for g in gpus}) == 8


def test_mig_gpu_lists_its_instances_and_na_fields():
    mig, whole = discover(recorded("mig_a100"), no_identity).gpus
    assert mig.mig_enabled is True and whole.mig_enabled is False
    assert [m.name.split()[-1] for m in mig.mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    assert all(m.uuid.startswith("MIG-") for m in mig.mig_devices)
    assert mig.mig_devices[0].memory_total == 40192 * 2**20
    assert mig.utilization is NA and mig.memory_utilization is NA  # NotSupported under MIG
    (proc,) = mig.processes
    assert proc.used_memory is NA and proc.kind == "compute"  # NVML: value not available


def test_a_mig_instances_used_memory_is_read_every_sample():
    """Issue 21, item 7: the GPUs screen shows each instance's memory as it is now, not as it was at the first look."""
    from tuitrain.hardware.devices import read_dynamic, read_static

    lib = recorded("mig_a100")
    with NvmlSession.open(lib) as session:
        static = read_static(session, 0)
        first = read_dynamic(session, static, no_identity)
        assert [m.memory_used for m in first.mig_devices] == [11 * 2**30, 0, 0]
        lib.devices[0]["mig_devices"][1]["memory"] = {"total": 20937965568, "used": 5 * 2**30}
        second = read_dynamic(session, static, no_identity)
    assert [m.memory_used for m in second.mig_devices] == [11 * 2**30, 5 * 2**30, 0]
    assert second.mig_devices[1].memory_total == 20937965568 and second.mig_devices[1].name.endswith("2g.20gb")


def test_not_supported_fields_are_na_and_never_raise():
    lib = recorded("not_supported")
    with NvmlSession.open(lib) as session:
        from tuitrain.hardware.devices import discover_in

        (gpu,) = discover_in(session, no_identity).gpus
        assert session.errors  # every refusal counted, none raised
    assert gpu.name == "NVIDIA GeForce GT 730" and gpu.temperature == 44
    for field in ("uuid", "memory_total", "memory_used", "utilization", "power_draw", "power_limit",
                  "num_cores", "max_sm_clock", "mig_enabled", "memory_fraction", "memory_free", "speed_estimate"):
        assert getattr(gpu, field) is NA, field
    assert gpu.processes == () and not gpu.lost
    assert "N/A" in f"{gpu.memory_used} / {gpu.memory_total}"


def test_a_function_the_library_lacks_is_na():
    class Old(RecordedNvml):
        nvmlDeviceGetNumGpuCores = None  # an older pynvml without it

    lib = Old(load_table(FIXTURES / "eight_h100.json"))
    with NvmlSession.open(lib) as session:
        assert session.device_call(0, "nvmlDeviceGetNumGpuCores") is NA
        assert session.device_call(0, "nvmlDeviceGetName") == "NVIDIA H100 80GB HBM3"


def test_a_gpu_lost_after_three_samples_turns_na_and_is_not_asked_again():
    lib = recorded("gpu_lost")
    with NvmlSession.open(lib) as session:
        from tuitrain.hardware.devices import read_dynamic, read_static

        static = [read_static(session, i) for i in range(session.device_count())]
        for _ in range(3):
            healthy, lost = [read_dynamic(session, s, no_identity) for s in static]
            assert lost.memory_used == 20 * 2**30 and not lost.lost
        healthy, lost = [read_dynamic(session, s, no_identity) for s in static]
        assert lost.lost and lost.memory_used is NA and lost.utilization is NA and lost.processes == ()
        assert lost.name == "NVIDIA GeForce RTX 3090"  # static fields stay
        assert healthy.memory_used == 20 * 2**30 and not healthy.lost
        reads = lib.memory_reads[1]
        read_dynamic(session, static[1], no_identity)
        assert lib.memory_reads[1] == reads  # a lost GPU is not asked again
        assert session.lost == {1}


def test_a_gpu_lost_before_discovery():
    table = load_table(FIXTURES / "gpu_lost.json")
    table["devices"][1]["handle_error"] = "GPU_IS_LOST"
    ok, lost = discover(RecordedNvml(table), no_identity).gpus
    assert lost.lost and lost.name is NA and lost.uuid is NA and ok.name == "NVIDIA GeForce RTX 3090"


def test_the_gate_is_the_real_pynvml_error_class():
    import pynvml

    from tuitrain.hardware.recorded import error

    assert isinstance(error("NOT_SUPPORTED"), pynvml.NVMLError_NotSupported)
    assert isinstance(error("GPU_IS_LOST"), pynvml.NVMLError_GpuIsLost)


def test_hardware_keeps_the_fields_the_planner_uses():
    gpu = GpuInfo(0, "NVIDIA A100", "GPU-x", 80 * 2**30)  # positional, as before
    hardware = Hardware(gpus=(gpu,), cpu_count=4)
    assert hardware.has_cuda and hardware.gpus[0].memory_total == 80 * 2**30 and not hardware.mps
    built = hardware_from(discover(recorded("four_gpu_mixed"), no_identity), user="me")
    assert built.has_cuda and built.gpu(2).name == "NVIDIA GeForce RTX 4090" and built.gpu(9) is None


def test_cpu_bf16_flag(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse avx512f avx512_bf16\n")
    assert cpu_has_bf16(cpuinfo) is True
    cpuinfo.write_text("processor : 0\nflags : fpu sse\n")
    assert cpu_has_bf16(cpuinfo) is False
    assert cpu_has_bf16(tmp_path / "missing") is NA


# ---------------------------------------------------------------------------- the host without psutil


def test_host_memory_is_read_from_meminfo_as_psutil_counts_it(tmp_path: Path) -> None:
    from tuitrain.hardware.host import memory_total_used

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:  1000 kB\nMemAvailable:   12000000 kB\n")
    assert memory_total_used(meminfo) == (16000000 * 1024, 4000000 * 1024)


def test_host_memory_without_meminfo_asks_psutil(tmp_path: Path) -> None:
    import psutil

    from tuitrain.hardware.host import memory_total_used

    total, used = memory_total_used(tmp_path / "missing")
    assert total == psutil.virtual_memory().total and 0 < used <= total


def test_no_driver_library_means_driver_not_found_without_pynvml(monkeypatch) -> None:
    import tuitrain.hardware.nvml as nvml

    monkeypatch.setattr(nvml, "default_library", lambda: (_ for _ in ()).throw(AssertionError("pynvml loaded")))
    monkeypatch.setattr(nvml, "driver_library_loadable", lambda: False)
    with NvmlSession.open() as session:
        assert (session.available, session.reason) == (False, "driver not found")


def test_tuitrain_gpus_lists_a_mig_gpus_instances_under_it_with_their_memory():
    """Issue 21, item 7: as the app's GPUs screen does, before the GPU's processes; memory used of total."""
    from tuitrain.cli.gpus import process_rows

    rows = process_rows(discover(recorded("mig_a100"), no_identity).gpus)
    assert [(r[0], r[3], r[4], r[7]) for r in rows[:3]] == [
        ("0", "└ MIG 3g.40gb", "11.0/39.2 GiB", "instance"), ("0", "└ MIG 2g.20gb", "0.0/19.5 GiB", "instance"),
        ("0", "└ MIG 1g.10gb", "0.0/9.5 GiB", "instance")]
    assert rows[3][:2] == ["0", "4100200"] and len(rows) == 4
