"""Accelerate configs in and out (issue 6): the Trainer docs' four configs round-trip through a
profile, and accelerate's own loader (and `accelerate launch`'s own checks) accept every config
we write. Tests may import accelerate; the CLI may not (test_import_rule.py)."""

from __future__ import annotations

import copy
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.commands.launch import _validate_launch_command, launch_command_parser

from conftest import cli
from tuitrain.launch.accelerate_default_config import default_config_path
from tuitrain.launch.plan import export_accelerate_config
from tuitrain.profile import builtin_profile_path, settings_with_defaults, validate_profile
from tuitrain.profile.accelerate_canonical import canonical_config
from tuitrain.profile.accelerate_import import import_accelerate_config
from tuitrain.profile.accelerate_names import LAUNCH_FSDP_DEFAULTS, TOP_DEFAULTS
from tuitrain.yaml_text import dump as dump_yaml

FIXTURES = Path(__file__).parent / "fixtures" / "accelerate"
DOCS = ["ddp_multinode", "fsdp", "deepspeed_config_file", "deepspeed_plugin"]
DEMO = tomllib.loads(builtin_profile_path().read_text(encoding="utf-8"))


def accelerate_accepts(path: Path) -> Any:
    """accelerate's loader, its ClusterConfig, and `accelerate launch`'s own argument checks."""
    loaded = load_config_from_file(str(path))
    assert isinstance(loaded, ClusterConfig)
    ClusterConfig.from_yaml_file(str(path))
    args = launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
    args, defaults, _ = _validate_launch_command(args)
    return args


def write(tmp_path: Path, config: dict[str, Any], name: str = "accelerate.yaml") -> Path:
    path = tmp_path / name
    path.write_text(dump_yaml(config, ["written by a test"]), encoding="utf-8")
    return path


def settings_of(data: dict[str, Any]) -> dict[str, Any]:
    from tuitrain.profile import Profile

    return settings_with_defaults(Profile(path=None, data=data))


def demo(**sections: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(DEMO)
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return data


# ------------------------------------------------------------------ the four configs of the Trainer docs


@pytest.mark.parametrize("name", DOCS)
def test_docs_config_is_a_valid_accelerate_config(name: str) -> None:
    accelerate_accepts(FIXTURES / f"{name}.yaml")


@pytest.mark.parametrize("name", DOCS)
def test_docs_config_imports_to_the_fixture_profile(name: str) -> None:
    raw = yaml.safe_load((FIXTURES / f"{name}.yaml").read_text())
    result = import_accelerate_config(raw, f"{name}.yaml")
    assert result.errors == []
    profile = tomllib.loads((FIXTURES / f"{name}.toml").read_text())
    assert profile["distributed"] == result.distributed
    for key, value in result.hardware.items():
        assert profile["hardware"][key] == value
    assert [p for p in validate_profile(profile, f"{name}.toml", FIXTURES) if p.is_error] == []


@pytest.mark.parametrize("name", DOCS)
def test_docs_config_comes_back_out_equivalent(name: str, tmp_path: Path, runs_dir: Path) -> None:
    result = cli("profile", "export-accelerate", str(FIXTURES / f"{name}.toml"), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    exported = write(tmp_path, yaml.safe_load(result.stdout))
    accelerate_accepts(exported)
    original = canonical_config(yaml.safe_load((FIXTURES / f"{name}.yaml").read_text()))
    assert canonical_config(yaml.safe_load(result.stdout)) == original


def test_docs_fsdp_prefetch_key_is_not_read_by_accelerate_but_ours_is(tmp_path: Path) -> None:
    """The docs' fsdp_backward_prefetch_policy is an old name: accelerate 1.15 leaves backward
    prefetch unset with it. The import reads it as meant and the export writes the name
    accelerate reads."""
    docs = accelerate_accepts(FIXTURES / "fsdp.yaml")
    assert docs.fsdp_backward_prefetch is None
    config, _ = export_accelerate_config(settings_of(tomllib.loads((FIXTURES / "fsdp.toml").read_text())))
    ours = accelerate_accepts(write(tmp_path, config))
    assert ours.fsdp_backward_prefetch == "BACKWARD_PRE"
    assert ours.fsdp_transformer_layer_cls_to_wrap == "BertLayer"
    assert str(ours.fsdp_sharding_strategy).upper() in ("FULL_SHARD", "1")


# ------------------------------------------------------------------ every config we write


GENERATED: dict[str, dict[str, Any]] = {
    "single-cpu": {},
    "single-auto": {"hardware": {"accelerator": "auto"}},
    "ddp-cpu": {"distributed": {"strategy": "ddp", "num_processes": 2}},
    "ddp-cuda-gpus": {"hardware": {"accelerator": "cuda", "gpus": [1, 3], "mixed_precision": "bf16"},
                      "distributed": {"strategy": "ddp", "num_processes": 2, "main_process_port": 29555}},
    "ddp-cuda-any-two-gpus": {"hardware": {"accelerator": "cuda", "gpus": 2}, "distributed": {"strategy": "ddp"}},
    "ddp-two-machines": {"hardware": {"accelerator": "cuda"},
                         "distributed": {"strategy": "ddp", "num_processes": 4, "num_machines": 2, "machine_rank": 1,
                                         "main_process_ip": "10.1.2.3", "main_process_port": 29500,
                                         "rdzv_backend": "c10d", "same_network": False}},
    "fsdp-defaults": {"hardware": {"accelerator": "cuda"}, "distributed": {"strategy": "fsdp", "num_processes": 2}},
    "fsdp-size-offload": {"hardware": {"accelerator": "cuda", "mixed_precision": "bf16"},
                          "distributed": {"strategy": "fsdp", "num_processes": 4,
                                          "fsdp": {"auto_wrap_policy": "size", "min_num_params": 2000,
                                                   "offload_params": True, "sharding_strategy": "hybrid_shard",
                                                   "backward_prefetch": "none", "state_dict_type": "full",
                                                   "activation_checkpointing": True}}},
    "fsdp2": {"hardware": {"accelerator": "cuda"},
              "distributed": {"strategy": "fsdp", "num_processes": 2,
                              "fsdp": {"version": 2, "sharding_strategy": "shard_grad_op",
                                       "transformer_layer_cls_to_wrap": ["BertLayer", "BertEmbeddings"]}}},
    "deepspeed-zero3-nvme": {"hardware": {"accelerator": "cuda", "mixed_precision": "bf16"},
                             "training": {"gradient_accumulation_steps": 4},
                             "distributed": {"strategy": "deepspeed", "num_processes": 2,
                                             "deepspeed": {"zero_stage": 3, "offload_optimizer_device": "nvme",
                                                           "offload_optimizer_nvme_path": "/nvme",
                                                           "offload_param_device": "cpu",
                                                           "gradient_accumulation_steps": 4,
                                                           "zero3_save_16bit_model": True}}},
    "deepspeed-two-machines": {"hardware": {"accelerator": "cuda"},
                               "distributed": {"strategy": "deepspeed", "num_processes": 8, "num_machines": 2,
                                               "machine_rank": 0, "main_process_ip": "10.1.2.3",
                                               "main_process_port": 29500, "deepspeed": {"zero_stage": 2}}},
    "deepspeed-json": {"hardware": {"accelerator": "cuda", "mixed_precision": "bf16"},
                       "distributed": {"strategy": "deepspeed", "num_processes": 2,
                                       "deepspeed": {"config_file": "/etc/ds_zero2.json"}}},
}


@pytest.mark.parametrize("name", list(GENERATED))
def test_every_generated_config_is_accepted_and_round_trips(name: str, tmp_path: Path) -> None:
    data = demo(**copy.deepcopy(GENERATED[name]))
    assert [p for p in validate_profile(data, "p.toml", None) if p.is_error] == []
    config, _ = export_accelerate_config(settings_of(data))
    args = accelerate_accepts(write(tmp_path, config))
    dist = data["distributed"]
    assert args.num_processes == dist.get("num_processes", 1) * dist.get("num_machines", 1)
    assert args.use_fsdp == (dist.get("strategy") == "fsdp")
    assert args.use_deepspeed == (dist.get("strategy") == "deepspeed")
    # and back: the imported tables export to the same config
    back = import_accelerate_config(config, "exported.yaml")
    assert back.errors == []
    again, _ = export_accelerate_config(settings_of(back.merge_into(data)))
    assert canonical_config(again) == canonical_config(config)


def test_deepspeed_on_several_machines_is_started_by_torchrun_on_each_not_by_pdsh(tmp_path: Path) -> None:
    """accelerate hands a multi-machine DeepSpeed launch to DeepSpeed's runner (pdsh over ssh from
    machine 0) unless deepspeed_multinode_launcher is "standard"; tuitrain starts every machine."""
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    config, _ = export_accelerate_config(settings_of(demo(**copy.deepcopy(GENERATED["deepspeed-two-machines"]))))
    assert config["deepspeed_config"]["deepspeed_multinode_launcher"] == "standard"
    args = accelerate_accepts(write(tmp_path, config))
    assert args.deepspeed_multinode_launcher == "standard"
    args.deepspeed_fields_from_accelerate_config = ",".join(config["deepspeed_config"])  # as launch_command sets it
    cmd, env = prepare_deepspeed_cmd_env(args)
    assert cmd is None and env["ACCELERATE_USE_DEEPSPEED"] == "true"  # no runner command: torchrun's own launch
    del config["deepspeed_config"]["deepspeed_multinode_launcher"]  # what a config without it would do
    args = accelerate_accepts(write(tmp_path, config, "without.yaml"))
    args.deepspeed_fields_from_accelerate_config = ",".join(config["deepspeed_config"])
    cmd, _ = prepare_deepspeed_cmd_env(args)
    assert cmd[0] == "deepspeed" and "pdsh" in cmd
    one, _ = export_accelerate_config(settings_of(demo(hardware={"accelerator": "cuda"}, distributed={
        "strategy": "deepspeed", "num_processes": 2})))
    assert "deepspeed_multinode_launcher" not in one["deepspeed_config"]  # nothing to launch across machines


def test_cpu_ranks_are_multi_gpu_with_every_gpu_hidden(tmp_path: Path) -> None:
    from tuitrain.hardware import Hardware
    from tuitrain.launch import plan_launch

    plan = plan_launch(settings_of(demo(distributed={"strategy": "ddp", "num_processes": 2})), Hardware(), tmp_path)
    assert plan.accelerate_config["distributed_type"] == "MULTI_GPU" and plan.env["CUDA_VISIBLE_DEVICES"] == ""
    args = accelerate_accepts(write(tmp_path, plan.accelerate_config))
    assert args.multi_gpu and not args.cpu and args.num_processes == 2
    assert plan.argv[3:5] == ["--config_file", str(tmp_path / "accelerate.yaml")]
    assert any("never used unseen" in n and "#1133" in n for n in plan.notes)


def test_a_gpu_selection_is_left_to_cuda_visible_devices(tmp_path: Path) -> None:
    """accelerate launch sets CUDA_VISIBLE_DEVICES to gpu_ids unless they are "all": renumbered ids
    there would replace the physical selection, so the plan writes "all"."""
    config, header = export_accelerate_config(settings_of(demo(
        hardware={"accelerator": "cuda", "gpus": [1, 3]}, distributed={"strategy": "ddp", "num_processes": 2})))
    assert config["gpu_ids"] == "1,3" and any("CUDA_DEVICE_ORDER" in line for line in header)
    env = dict(HF_HUB_OFFLINE="1", TUITRAIN_NVML_TABLE=str(Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"))
    import json
    import os

    done = subprocess.run([sys.executable, "-m", "tuitrain", "plan", str(FIXTURES / "fsdp.toml"), "--json",
                           "--set", "hardware.gpus=[2,3]", "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, **env})
    plan = json.loads(done.stdout)
    assert plan["env"]["CUDA_VISIBLE_DEVICES"] == "2,3" and plan["accelerate_config"]["gpu_ids"] == "all"
    assert plan["accelerate_config"]["distributed_type"] == "FSDP"


def test_launch_defaults_are_those_of_the_installed_accelerate() -> None:
    parser = launch_command_parser()
    defaults = {a.dest: a.default for a in parser._actions if a.dest.startswith("fsdp_")}
    for key, ours in LAUNCH_FSDP_DEFAULTS.items():
        theirs = defaults[key]
        if isinstance(theirs, str) and theirs.lower() in ("true", "false"):
            theirs = theirs.lower() == "true"
        if isinstance(theirs, str) and theirs.isdigit():
            theirs = int(theirs)
        assert theirs == ours, key
    fields = ClusterConfig.__dataclass_fields__
    for key in ("machine_rank", "num_machines", "main_process_ip", "main_process_port", "rdzv_backend",
                "same_network", "downcast_bf16", "tpu_use_cluster", "tpu_use_sudo", "enable_cpu_affinity",
                "main_training_function"):
        assert fields[key].default == TOP_DEFAULTS[key], key


def test_default_config_path_is_accelerates(tmp_path: Path) -> None:
    from accelerate.commands.config import config_args

    assert default_config_path() == Path(config_args.default_config_file)
    assert default_config_path({"HF_HOME": str(tmp_path)}) == tmp_path / "accelerate" / "default_config.yaml"
    assert default_config_path({"XDG_CACHE_HOME": str(tmp_path)}) == \
        tmp_path / "huggingface" / "accelerate" / "default_config.yaml"


# ------------------------------------------------------------------ a real accelerate launch of our FSDP config

RANK_REPORT = r'''
import json, os, sys
report = {k: v for k, v in os.environ.items() if k.startswith(("FSDP_", "ACCELERATE_")) or k in ("WORLD_SIZE", "RANK")}
try:
    from accelerate import Accelerator
    accelerator = Accelerator(cpu=True)  # what the engine does on the CPU (use_cpu)
    report["distributed_type"] = str(accelerator.distributed_type)
    report["num_processes"] = accelerator.num_processes
    report["fsdp_plugin"] = getattr(accelerator.state, "fsdp_plugin", None) is not None
except Exception as exc:
    report["error"] = f"{type(exc).__name__}: {exc}"
with open(os.path.join(sys.argv[1], f"rank-{os.environ['RANK']}.json"), "w") as handle:
    json.dump(report, handle)
'''


@pytest.mark.slow
def test_accelerate_launch_takes_our_fsdp_config_and_on_the_cpu_runs_ddp_instead(tmp_path: Path) -> None:
    """`accelerate launch` with the FSDP config we write starts both ranks and hands them our
    settings; on a machine without GPUs the ranks' Accelerator is MULTI_CPU (plain DDP), not
    FSDP — the reason the plan refuses FSDP on the CPU. If this starts failing, the installed
    accelerate runs FSDP on CPUs: lift the refusal in tuitrain/launch/preflight.py."""
    import json
    import os

    data = demo(distributed={"strategy": "fsdp", "num_processes": 2,
                             "fsdp": {"sharding_strategy": "shard_grad_op", "sync_module_states": False,
                                      "cpu_ram_efficient_loading": False, "auto_wrap_policy": "size",
                                      "min_num_params": 1000}})
    config, _ = export_accelerate_config(settings_of(data))
    path = write(tmp_path, config)
    script = tmp_path / "report.py"
    script.write_text(RANK_REPORT)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1"}
    from tuitrain.runs.keeper.supervisor import free_port

    done = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(path),
                           "--main_process_port", str(free_port()), str(script), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in (0, 1)]
    for report in ranks:
        assert report["WORLD_SIZE"] == "2" and report["ACCELERATE_USE_FSDP"] == "true"
        assert report["FSDP_SHARDING_STRATEGY"] == "SHARD_GRAD_OP" and report["FSDP_MIN_NUM_PARAMS"] == "1000"
        assert report["FSDP_AUTO_WRAP_POLICY"] == "SIZE_BASED_WRAP"
        assert "error" not in report, report
        assert report["distributed_type"] == "DistributedType.MULTI_CPU" and report["fsdp_plugin"] is False


# ------------------------------------------------------------------ import: bad values are named, never a traceback

BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "clipping-text": ({"distributed_type": "DEEPSPEED", "deepspeed_config": {"gradient_clipping": "abc"}},
                      "deepspeed_config.gradient_clipping"),
    "clipping-list": ({"distributed_type": "DEEPSPEED", "deepspeed_config": {"gradient_clipping": [1]}},
                      "deepspeed_config.gradient_clipping"),
    "accumulation-text": ({"distributed_type": "DEEPSPEED", "deepspeed_config": {"gradient_accumulation_steps": "many"}},
                          "deepspeed_config.gradient_accumulation_steps"),
    "deepspeed-config-text": ({"distributed_type": "DEEPSPEED", "deepspeed_config": "foo"}, "deepspeed_config"),
    "fsdp-config-list": ({"distributed_type": "FSDP", "fsdp_config": [1, 2]}, "fsdp_config"),
    "machines-text": ({"distributed_type": "MULTI_GPU", "num_machines": "two"}, "num_machines"),
    "machines-zero": ({"distributed_type": "MULTI_GPU", "num_machines": 0}, "num_machines"),
    "state-dict-typo": ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_state_dict_type": "SHARDED"}},
                        "fsdp_config.fsdp_state_dict_type"),
    "prefetch-typo": ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_backward_prefetch": "BACKWARD_PREE"}},
                      "fsdp_config.fsdp_backward_prefetch"),
    "machine-rank-text": ({"distributed_type": "MULTI_GPU", "machine_rank": "x"}, "machine_rank"),
    "port-text": ({"distributed_type": "MULTI_GPU", "main_process_port": "notaport"}, "main_process_port"),
    "offload-maybe": ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_offload_params": "maybe"}},
                      "fsdp_config.fsdp_offload_params"),
    "zero-stage-7": ({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 7}},
                     "deepspeed_config.zero_stage"),
    "offload-disk": ({"distributed_type": "DEEPSPEED", "deepspeed_config": {"offload_optimizer_device": "disk"}},
                     "deepspeed_config.offload_optimizer_device"),
    "pdsh-launcher": ({"distributed_type": "DEEPSPEED", "num_machines": 2, "num_processes": 4,
                       "main_process_ip": "10.0.0.1", "main_process_port": 29500,
                       "deepspeed_config": {"deepspeed_multinode_launcher": "pdsh", "deepspeed_hostfile": "/h"}},
                      "deepspeed_config.deepspeed_multinode_launcher"),
}


@pytest.mark.parametrize("name", list(BAD_VALUES))
def test_a_bad_value_is_a_warning_naming_its_key_and_is_not_carried_over(name: str) -> None:
    raw, key = BAD_VALUES[name]
    result = import_accelerate_config({"compute_environment": "LOCAL_MACHINE", "num_processes": 2, **raw}, "bad.yaml")
    warned = [p for p in result.problems if p.severity == "warning" and p.key == key]
    assert warned, [str(p) for p in result.problems]
    assert warned[0].fix  # and what to do about it
    data = result.merge_into(copy.deepcopy(DEMO))
    # whatever was carried over is a valid profile: the bad value was left out, not copied through
    assert [str(p) for p in validate_profile(data, "p.toml", None) if p.is_error and
            p.key.split(".")[0] in ("distributed", "hardware")] == []


def test_gpu_ids_as_a_yaml_list_are_gpu_numbers() -> None:
    result = import_accelerate_config({"distributed_type": "MULTI_GPU", "num_processes": 2, "gpu_ids": [0, 1]}, "x")
    assert result.hardware["gpus"] == [0, 1]


HOSTILE = [None, True, "maybe", 2.5, -1, 10**30, [1, [2]], {"x": 1}, "", "é😀", float("nan")]


def test_no_value_anywhere_makes_import_raise_or_breaks_the_profile() -> None:
    """Every key accelerate knows, at the top and in fsdp_config / deepspeed_config, given each
    hostile value: the import names problems, never raises, and never copies a value that the
    profile's own validation would refuse."""
    from tuitrain.profile.accelerate_names import DS_KNOWN, FSDP_KNOWN

    base = {"compute_environment": "LOCAL_MACHINE", "num_processes": 2}
    cases = [({**base, "distributed_type": "MULTI_GPU", key: value}, key) for key in TOP_DEFAULTS
             if key != "compute_environment" for value in HOSTILE]
    cases += [({**base, "distributed_type": "FSDP", "fsdp_config": {key: value}}, key)
              for key in FSDP_KNOWN for value in HOSTILE]
    cases += [({**base, "distributed_type": "DEEPSPEED", "deepspeed_config": {key: value}}, key)
              for key in DS_KNOWN | {"deepspeed_multinode_launcher"} for value in HOSTILE]
    cases += [({**base, "distributed_type": "MULTI_GPU", "num_processes": value}, "num_processes") for value in HOSTILE]
    for raw, key in cases:
        result = import_accelerate_config(raw, "hostile.yaml")
        data = result.merge_into(copy.deepcopy(DEMO))
        # (rules across keys may still object, e.g. more processes than GPUs listed: --into then
        # writes nothing; what must never happen is a value of the wrong type or range)
        broken = [str(p) for p in validate_profile(data, "p.toml", None) if p.is_error and
                  p.key.split(".")[0] in ("distributed", "hardware") and
                  (p.message.startswith(("expected", "must be", "nan is")) or " is not one of " in p.message)]
        assert broken == [], (key, raw, broken)


def test_fsdp_keys_accelerate_ignores_for_the_version_are_named() -> None:
    raw = {"distributed_type": "FSDP", "num_processes": 2,
           "fsdp_config": {"fsdp_version": 2, "fsdp_sharding_strategy": "NO_SHARD", "fsdp_forward_prefetch": True,
                           "fsdp_min_num_params": 5, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP"}}
    result = import_accelerate_config(raw, "v2.yaml")
    named = {p.key for p in result.problems}
    assert {"fsdp_config.fsdp_sharding_strategy", "fsdp_config.fsdp_forward_prefetch",
            "fsdp_config.fsdp_min_num_params"} <= named


def test_a_relative_deepspeed_json_is_written_in_full(tmp_path: Path) -> None:
    raw = {"distributed_type": "DEEPSPEED", "num_processes": 2, "deepspeed_config": {"deepspeed_config_file": "ds.json"}}
    result = import_accelerate_config(raw, "x.yaml", base_dir=tmp_path)
    assert result.distributed["deepspeed"]["config_file"] == str((tmp_path / "ds.json").resolve())


def test_cpu_ranks_export_no_gpu_ids_even_with_gpus_listed(tmp_path: Path) -> None:
    config, _ = export_accelerate_config(settings_of(demo(hardware={"accelerator": "cpu", "gpus": [0]},
                                                          distributed={"strategy": "ddp", "num_processes": 3})))
    assert config["gpu_ids"] == "all"
    args = accelerate_accepts(write(tmp_path, config))
    assert args.num_processes == 3 and args.gpu_ids == "all"
