"""Preflight rules of issue 6: each a refusal (or warning) before anything starts, naming the
profile key to change. Profile-only rules come from validation; rules about this machine (what
is installed, which port is taken, what the installed accelerate can do) from the plan, probed
for real here (importlib.util.find_spec, a real listening socket)."""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from conftest import demo_profile_data
from tuitrain.hardware import Hardware
from tuitrain.launch import plan_launch
from tuitrain.profile import Problem, Profile, settings_with_defaults, validate_profile

CPU_BOX = Hardware(cpu_count=2)   # what this machine is: no NVIDIA GPU, no MPS
MAC = Hardware(mps=True, cpu_count=8)


def validation(data: dict[str, Any], base_dir: Path | None = None, severity: str = "error") -> list[Problem]:
    return [p for p in validate_profile(data, "p.toml", base_dir) if p.severity == severity]


def planned(data: dict[str, Any], hardware: Hardware = CPU_BOX, file: str = "p.toml",
            tmp: Path = Path("/tmp/tuitrain-test-run")) -> list[Problem]:
    plan = plan_launch(settings_with_defaults(Profile(path=None, data=data)), hardware, tmp, file=file)
    return plan.problems


def one(problems: list[Problem], key: str, severity: str = "error") -> Problem:
    found = [p for p in problems if p.key == key and p.severity == severity]
    assert len(found) == 1, [str(p) for p in problems]
    p = found[0]
    assert key in str(p)              # the line a user sees names the key ...
    assert p.fix                      # ... and says what to do
    return p


# ------------------------------------------------------------------ MPS


def test_mps_with_more_than_one_process() -> None:
    data = demo_profile_data(hardware={"accelerator": "mps"}, distributed={"strategy": "ddp", "num_processes": 2})
    one(validation(data), "distributed.num_processes")
    p = one(planned(data, MAC), "distributed.num_processes")
    assert "num_processes = 1" in p.fix


@pytest.mark.parametrize("strategy", ["fsdp", "deepspeed"])
def test_fsdp_or_deepspeed_with_mps(strategy: str) -> None:
    data = demo_profile_data(hardware={"accelerator": "mps"}, distributed={"strategy": strategy})
    p = one(validation(data), "distributed.strategy")
    assert strategy in p.message and "MPS" in p.message
    # one rule (profile.rules.strategies.mps_strategy_problem): an error in `validate` and in the launch, same words
    assert p in planned(data, MAC)  # (deepspeed's "not installed" here may stand beside it)


def test_auto_on_a_mac_never_picks_mps_for_fsdp() -> None:
    data = demo_profile_data(hardware={"accelerator": "auto"}, distributed={"strategy": "fsdp"})
    plan = plan_launch(settings_with_defaults(Profile(None, data)), MAC, Path("/tmp/x"))
    assert plan.accelerator == "cpu"
    assert any(p.key == "distributed.strategy" and "CPU" in p.message for p in plan.errors)


# ------------------------------------------------------------------ packages


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is not None, reason="deepspeed is installed here")
def test_deepspeed_not_installed_says_how_to_install_it() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"}, distributed={"strategy": "deepspeed"})
    assert validation(data) == []  # a profile for another machine is fine as a file
    p = next(p for p in planned(data) if "not installed" in p.message)
    assert p.key == "distributed.strategy" and "pip install deepspeed" in p.fix


@pytest.mark.skipif(importlib.util.find_spec("galore_torch") is not None, reason="galore-torch is installed here")
def test_galore_without_galore_torch() -> None:
    data = demo_profile_data(training={"optim": "galore_adamw", "optim_target_modules": ["attention", "intermediate"]})
    assert validation(data) == []
    p = one(planned(data), "training.optim")
    assert "galore-torch" in p.message and "pip install galore-torch" in p.fix


def test_layerwise_galore_with_more_than_one_process() -> None:
    data = demo_profile_data(training={"optim": "galore_adamw_layerwise", "optim_target_modules": "all-linear"},
                             distributed={"strategy": "ddp", "num_processes": 2})
    p = one(validation(data), "training.optim")
    assert "layer-wise" in p.message and '"galore_adamw"' in p.fix and "num_processes = 1" in p.fix
    single = demo_profile_data(training={"optim": "galore_adamw_layerwise", "optim_target_modules": "all-linear"})
    assert [q for q in validation(single) if q.key == "training.optim"] == []


def test_galore_needs_optim_target_modules() -> None:
    p = one(validation(demo_profile_data(training={"optim": "galore_adafactor"})), "training.optim_target_modules")
    assert "galore_adafactor" in p.message and "all-linear" in p.fix


# ------------------------------------------------------------------ precision


def test_fp16_on_the_cpu() -> None:
    one(validation(demo_profile_data(hardware={"mixed_precision": "fp16"})), "hardware.mixed_precision")
    one(validation(demo_profile_data(training={"fp16": True})), "training.fp16")
    auto = demo_profile_data(hardware={"accelerator": "auto", "mixed_precision": "fp16"})
    assert validation(auto) == []  # auto could be a GPU elsewhere ...
    one(planned(auto), "hardware.mixed_precision")  # ... but here it is the CPU


# ------------------------------------------------------------------ DeepSpeed


def test_gradient_accumulation_in_deepspeed_plugin_and_training_differs() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"}, training={"gradient_accumulation_steps": 2},
                             distributed={"strategy": "deepspeed", "deepspeed": {"gradient_accumulation_steps": 4}})
    p = one(validation(data), "distributed.deepspeed.gradient_accumulation_steps")
    assert "training.gradient_accumulation_steps" in p.message and "4" in p.message and "2" in p.message
    data["training"]["gradient_accumulation_steps"] = 4
    assert validation(data) == []


def test_gradient_accumulation_in_deepspeed_json_and_training_differs(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text(json.dumps({"gradient_accumulation_steps": 8, "zero_optimization": {"stage": 2},
                                                  "bf16": {"enabled": "auto"}}))
    data = demo_profile_data(hardware={"accelerator": "cuda"}, training={"gradient_accumulation_steps": 2},
                             distributed={"strategy": "deepspeed", "deepspeed": {"config_file": "ds.json"}})
    p = one(validation(data, tmp_path), "distributed.deepspeed.config_file")
    assert "gradient_accumulation_steps" in p.message and "training.gradient_accumulation_steps" in p.fix
    (tmp_path / "ds.json").write_text(json.dumps({"gradient_accumulation_steps": "auto"}))
    assert validation(data, tmp_path) == []


def test_deepspeed_gradient_clipping_against_max_grad_norm() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"},
                             distributed={"strategy": "deepspeed", "deepspeed": {"gradient_clipping": 0.7}})
    p = one(validation(data), "distributed.deepspeed.gradient_clipping")
    assert "training.max_grad_norm" in p.message and "max_grad_norm = 0.7" in p.fix


def test_deepspeed_json_with_plugin_fields() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"},
                             distributed={"strategy": "deepspeed", "deepspeed": {"config_file": "/x/ds.json", "zero_stage": 3}})
    p = one(validation(data), "distributed.deepspeed.zero_stage")
    assert "config_file" in p.message


def test_deepspeed_json_missing_is_a_machine_check(tmp_path: Path) -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"},
                             distributed={"strategy": "deepspeed", "deepspeed": {"config_file": "ds_zero3.json"}})
    assert validation(data, tmp_path) == []  # written on a laptop for a cluster: fine
    profile = tmp_path / "p.toml"
    p = one(planned(data, file=str(profile)), "distributed.deepspeed.config_file")
    assert str(tmp_path / "ds_zero3.json") in p.message


# ------------------------------------------------------------------ processes, devices, ports


def test_num_processes_larger_than_the_gpus_selected() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda", "gpus": [0]}, distributed={"strategy": "ddp", "num_processes": 2})
    p = one(validation(data), "distributed.num_processes")
    assert "1 GPU" in p.message and "num_processes = 1" in p.fix


def test_more_cpu_processes_than_cores_is_a_warning() -> None:
    data = demo_profile_data(distributed={"strategy": "ddp", "num_processes": 3})
    p = one(planned(data, Hardware(cpu_count=2)), "distributed.num_processes", "warning")
    assert "2 core" in p.message


def test_rendezvous_port_already_in_use() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data = demo_profile_data(distributed={"strategy": "ddp", "num_processes": 2, "main_process_port": port})
        p = one(planned(data), "distributed.main_process_port")
        assert str(port) in p.message and "in use" in p.message
    assert [q for q in planned(data) if q.key == "distributed.main_process_port"] == []  # free again


def test_several_machines_need_a_fixed_port() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"}, distributed={"strategy": "ddp", "num_machines": 2,
                                                                            "main_process_ip": "10.0.0.1"})
    # one rule (profile.rules.machines.machines_port_problem), two severities: `validate` (CLI and the
    # editor's checks) warns, since the file may be finished on the machine that launches it; the
    # plan (`tuitrain plan` / `run`, the app's launch screen) refuses. Same words in both.
    warned = one(validation(data, severity="warning"), "distributed.main_process_port", "warning")
    refused = one(planned(data), "distributed.main_process_port", "error")
    assert (warned.message, warned.fix) == (refused.message, refused.fix)
    assert "num_machines = 2" in refused.message and "the launch refuses" in refused.message


# ------------------------------------------------------------------ FSDP


def test_fsdp_on_the_cpu_is_refused_naming_the_strategy() -> None:
    data = demo_profile_data(hardware={"accelerator": "auto"}, distributed={"strategy": "fsdp", "num_processes": 2})
    assert validation(data) == []  # the file is fine (a GPU machine runs it) ...
    p = one(planned(data), "distributed.strategy")  # ... this machine is not
    assert "CPU" in p.message and "DDP" in p.message and '"ddp"' in p.fix
    on_cpu = demo_profile_data(distributed={"strategy": "fsdp", "num_processes": 2})  # accelerator = "cpu": never runs
    assert [str(q) for q in validation(on_cpu)] == [str(p)]  # validate says what the launch says


def test_fsdp2_takes_no_hybrid_sharding_nor_forward_prefetch() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"},
                             distributed={"strategy": "fsdp", "fsdp": {"version": 2, "sharding_strategy": "hybrid_shard",
                                                                       "forward_prefetch": True}})
    found = validation(data)
    one(found, "distributed.fsdp.sharding_strategy")
    one(found, "distributed.fsdp.forward_prefetch")


def test_cpu_ram_efficient_loading_needs_sync_module_states() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"},
                             distributed={"strategy": "fsdp", "fsdp": {"sync_module_states": False}})
    p = one(validation(data), "distributed.fsdp.sync_module_states")
    assert "cpu_ram_efficient_loading = false" in p.fix


def test_fsdp_keys_are_checked_when_fsdp_is_the_strategy() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"},
                             distributed={"strategy": "fsdp", "fsdp": {"fsdp_sharding_strategy": "FULL_SHARD",
                                                                       "sharding_strategy": "everything"}})
    found = validation(data)
    assert "did you mean 'sharding_strategy'" in one(found, "distributed.fsdp.fsdp_sharding_strategy").fix
    (choice,) = [q for q in found if q.key == "distributed.fsdp.sharding_strategy"]
    assert "full_shard" in choice.message  # the choices are the fix


def test_fsdp_and_activation_checkpointing_twice() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"}, training={"gradient_checkpointing": True},
                             distributed={"strategy": "fsdp", "fsdp": {"activation_checkpointing": True}})
    one(validation(data), "training.gradient_checkpointing")


@pytest.mark.parametrize("leaf", ["fsdp", "deepspeed"])
def test_strategy_set_up_again_in_training(leaf: str) -> None:
    value = "full_shard auto_wrap" if leaf == "fsdp" else "ds.json"
    p = one(validation(demo_profile_data(training={leaf: value})), f"training.{leaf}")
    assert "[distributed" in p.fix


# ------------------------------------------------------------------ num_processes default

def test_num_processes_defaults_to_one_per_selected_gpu(tmp_path: Path) -> None:
    """Unset num_processes with a multi-process strategy on GPUs means one per selected GPU (as
    torchrun --nproc_per_node=gpu); set, it is kept; `single` stays one process."""
    from tuitrain.hardware.devices import discover, no_identity
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.runs.start.from_profile import plan_profile

    table = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
    box = Hardware(gpus=discover(RecordedNvml(load_table(table)), no_identity).gpus, cpu_count=16)

    def plan(hardware: dict[str, Any], distributed: dict[str, Any]):
        data = demo_profile_data(hardware={"accelerator": "cuda", **hardware}, distributed=distributed)
        return plan_profile(Profile(path=None, data=data), tmp_path / "run", box)

    chosen = plan({"gpus": [2, 1]}, {"strategy": "ddp", "num_processes": None})
    assert chosen.num_processes == 2 and chosen.accelerate_config["num_processes"] == 2
    assert any("num_processes = 2: one process per selected GPU" in n for n in chosen.notes)
    assert plan({"gpus": None}, {"strategy": "ddp", "num_processes": None}).num_processes == 4
    kept = plan({"gpus": [2, 1]}, {"strategy": "ddp", "num_processes": 1})
    assert kept.num_processes == 1 and not any("per selected GPU" in n for n in kept.notes)
    assert plan({"gpus": [2, 1]}, {"strategy": "single", "num_processes": None}).num_processes == 1


# ------------------------------------------------------------------ layer-wise optimizers and the default world

def _four_gpus() -> Hardware:
    from tuitrain.hardware.devices import discover, no_identity
    from tuitrain.hardware.recorded import RecordedNvml, load_table

    table = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
    return Hardware(gpus=discover(RecordedNvml(load_table(table)), no_identity).gpus, cpu_count=16)


def _plan_as_tuitrain_plan(data: dict[str, Any], hardware: Hardware, run_dir: Path):
    """What `tuitrain plan` does (runs/start/from_profile.py plan_profile), with galore_torch "installed"."""
    from tuitrain.launch.preflight import MachineFacts
    from tuitrain.runs.start.from_profile import launch_settings

    settings, _notes = launch_settings(Profile(path=None, data=data), hardware)
    return plan_launch(settings, hardware, run_dir, file="p.toml", machine=MachineFacts(modules={"galore_torch": True}))


LAYERWISE = {"optim": "galore_adamw_layerwise", "optim_target_modules": "all-linear"}


def test_layerwise_galore_is_refused_when_num_processes_defaults_to_the_gpus(tmp_path: Path) -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"}, training=LAYERWISE,
                             distributed={"strategy": "ddp", "num_processes": None})
    assert validation(data) == []  # nothing in the file says more than one process ...
    plan = _plan_as_tuitrain_plan(data, _four_gpus(), tmp_path / "run")
    assert plan.num_processes == 4  # ... the planner's default (one per GPU) does
    p = one(plan.problems, "training.optim")
    assert "layer-wise" in p.message and "4 planned" in p.message
    assert '"galore_adamw"' in p.fix and "distributed.num_processes = 1" in p.fix
    data["distributed"]["num_processes"] = 1  # written: one process, no refusal
    assert [q for q in _plan_as_tuitrain_plan(data, _four_gpus(), tmp_path / "run").problems
            if q.key == "training.optim"] == []


def test_layerwise_galore_with_num_processes_written_is_refused_once(tmp_path: Path) -> None:
    """Written, validation refuses it, and `tuitrain plan` stops there (load_profile raises before
    any plan): the plan-time check never adds a second report."""
    from tuitrain.profile import ProfileError, load_profile
    from tuitrain.profile.save import save_profile

    data = demo_profile_data(hardware={"accelerator": "cuda"}, training=LAYERWISE,
                             distributed={"strategy": "ddp", "num_processes": 4})
    path = tmp_path / "p.toml"
    save_profile(data, path)
    with pytest.raises(ProfileError) as raised:
        load_profile(path)
    assert [p.key for p in raised.value.problems if p.key == "training.optim"] == ["training.optim"]
    # the same rule, so the same words either way
    assert one(validation(data), "training.optim") == one(_plan_as_tuitrain_plan(data, _four_gpus(), tmp_path).problems,
                                                          "training.optim")


def test_layerwise_galore_counts_machines_too() -> None:
    data = demo_profile_data(hardware={"accelerator": "cuda"}, training=LAYERWISE,
                             distributed={"strategy": "ddp", "num_processes": 1, "num_machines": 2, "main_process_ip": "10.0.0.1",
                                          "main_process_port": 29500})
    p = one(validation(data), "training.optim")
    assert "2 planned" in p.message and "distributed.num_machines = 1" in p.fix
