"""Accelerate config files, both ways, as plain mappings (no accelerate import: it loads torch).

- `fsdp_section` / `deepspeed_section`: a profile's [distributed.fsdp] / [distributed.deepspeed]
  table (defaults filled in) → accelerate's `fsdp_config` / `deepspeed_config` mapping.
- `import_accelerate_config`: an accelerate YAML mapping → the profile's [distributed] and
  [hardware] tables, plus one Problem for every field that could not be mapped (never dropped
  silently) and a note for every renamed or defaulted one.
- `canonical_config`: what a config means to accelerate, in one spelling (old key names
  migrated, accelerate launch's own defaults filled in), so that two configs can be compared.
- `default_config_path` / `existing_default_config`: where accelerate keeps the user's default
  config (the app offers to import it when it exists).

The defaults below are those of `accelerate launch` 1.15 (commands/launch.py) and of its
FSDP / DeepSpeed plugins; tests/test_strategies_accelerate.py checks them against the installed
accelerate, so a drift shows up as a failing test, not as a silently different run.
"""

from __future__ import annotations

import json
import os
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from tuitrain.profile import Problem
from tuitrain.profile.schema import DEEPSPEED_KEYS, FSDP_KEYS
from tuitrain.profile.validate import check_value

# ---------------------------------------------------------------------------------- vocabulary

SHARDING = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")  # 1..5
WRAP = {"transformer": "TRANSFORMER_BASED_WRAP", "size": "SIZE_BASED_WRAP", "none": "NO_WRAP"}
PREFETCH = {"backward_pre": "BACKWARD_PRE", "backward_post": "BACKWARD_POST", "none": "NO_PREFETCH"}
STATE_DICT = {"full": "FULL_STATE_DICT", "local": "LOCAL_STATE_DICT", "sharded": "SHARDED_STATE_DICT"}  # 1..3

# `accelerate launch` defaults for the fsdp_* arguments (what a key left out of fsdp_config means).
LAUNCH_FSDP_DEFAULTS: dict[str, Any] = {
    "fsdp_version": 1,
    "fsdp_offload_params": False,
    "fsdp_min_num_params": 100_000_000,
    "fsdp_sharding_strategy": "FULL_SHARD",
    "fsdp_reshard_after_forward": True,
    "fsdp_auto_wrap_policy": None,           # the plugin then takes NO_WRAP
    "fsdp_transformer_layer_cls_to_wrap": None,  # the plugin then takes the model's _no_split_modules
    "fsdp_backward_prefetch": None,          # the plugin then takes NO_PREFETCH
    "fsdp_state_dict_type": None,            # the plugin then takes FULL (FSDP1) / SHARDED (FSDP2)
    "fsdp_forward_prefetch": False,
    "fsdp_use_orig_params": True,
    "fsdp_cpu_ram_efficient_loading": True,
    "fsdp_sync_module_states": True,
    "fsdp_activation_checkpointing": False,
}
FSDP1_ONLY = ("fsdp_sharding_strategy", "fsdp_backward_prefetch", "fsdp_forward_prefetch",
              "fsdp_use_orig_params", "fsdp_sync_module_states")
# Old or foreign spellings that accelerate 1.15 does NOT read under that name (so a config that
# uses them silently runs without the setting); we read them as the key they meant.
FSDP_ALIASES: dict[str, str] = {
    "fsdp_backward_prefetch_policy": "fsdp_backward_prefetch",  # the Trainer docs' FSDP example
    "fsdp_cpu_offload": "fsdp_offload_params",                  # transformers 5's Accelerate page
}
# accelerate key -> [distributed.fsdp] key, for the keys that map one to one.
FSDP_PLAIN = {
    "fsdp_version": "version",
    "fsdp_offload_params": "offload_params",
    "fsdp_min_num_params": "min_num_params",
    "fsdp_forward_prefetch": "forward_prefetch",
    "fsdp_use_orig_params": "use_orig_params",
    "fsdp_cpu_ram_efficient_loading": "cpu_ram_efficient_loading",
    "fsdp_sync_module_states": "sync_module_states",
    "fsdp_activation_checkpointing": "activation_checkpointing",
}
FSDP_KNOWN = set(LAUNCH_FSDP_DEFAULTS)

# DeepSpeed plugin defaults (accelerate.utils.DeepSpeedPlugin) for a key left out.
DS_DEFAULTS: dict[str, Any] = {
    "zero_stage": 2,
    "offload_optimizer_device": "none",
    "offload_param_device": "none",
    "offload_optimizer_nvme_path": None,
    "offload_param_nvme_path": None,
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "zero3_save_16bit_model": False,
    # zero3_init_flag: absent → on for ZeRO stage 3 (decided from the stage)
}
DS_KNOWN = set(DS_DEFAULTS) | {"deepspeed_config_file", "zero3_init_flag"}
# `accelerate launch` options that live in deepspeed_config: how several machines are started.
# tuitrain starts each machine itself (torchrun on each, accelerate's "standard" launcher).
DS_LAUNCHER_KEYS = {"deepspeed_multinode_launcher", "deepspeed_hostfile", "deepspeed_exclusion_filter",
                    "deepspeed_inclusion_filter"}
DS_PLAIN = {k: k for k in DS_DEFAULTS} | {"deepspeed_config_file": "config_file", "zero3_init_flag": "zero3_init"}

# Top-level keys of ClusterConfig and what a left-out key means (accelerate's loader defaults).
TOP_DEFAULTS: dict[str, Any] = {
    "compute_environment": "LOCAL_MACHINE",
    "debug": False,
    "downcast_bf16": False,
    "enable_cpu_affinity": False,
    "gpu_ids": "all",
    "machine_rank": 0,
    "main_process_ip": None,
    "main_process_port": None,
    "main_training_function": "main",
    "mixed_precision": "no",
    "num_machines": 1,
    "rdzv_backend": "static",
    "same_network": False,
    "use_cpu": False,
    "tpu_env": [],
    "tpu_use_cluster": False,
    "tpu_use_sudo": False,
}
# Keys that say nothing when at their default; a non-default value cannot be mapped.
NO_PROFILE_KEY: dict[str, str] = {
    "debug": "set ACCELERATE_DEBUG_MODE=1 in the environment to get accelerate's debug checks",
    "enable_cpu_affinity": "tuitrain has no key for it",
    "main_training_function": "only notebook_launcher uses it; tuitrain launches its engine module",
    "tpu_env": "TPUs are not supported by tuitrain",
    "tpu_use_cluster": "TPUs are not supported by tuitrain",
    "tpu_use_sudo": "TPUs are not supported by tuitrain",
    "tpu_name": "TPUs are not supported by tuitrain",
    "tpu_zone": "TPUs are not supported by tuitrain",
    "tpu_vm": "TPUs are not supported by tuitrain",
    "command_file": "TPUs are not supported by tuitrain",
    "commands": "TPUs are not supported by tuitrain",
    "dynamo_config": "use [training] torch_compile = true and torch_compile_backend / torch_compile_mode",
    "dynamo_backend": "use [training] torch_compile = true and torch_compile_backend",
    "fp8_config": "fp8 is not among tuitrain's precisions (no, fp16, bf16)",
    "megatron_lm_config": "Megatron-LM is not among tuitrain's strategies",
    "mpirun_config": "tuitrain starts CPU ranks with torchrun (gloo), not mpirun",
    "parallelism_config": "tensor / context parallelism is not among tuitrain's strategies",
}
EMPTY = (None, False, [], {}, "", "no", "NO")
# A comment line export writes for CPU ranks (MULTI_GPU with every GPU hidden), which import reads back.
CPU_RANKS_MARK = "tuitrain: hardware.accelerator = cpu"

# ---------------------------------------------------------------------------------- value helpers


def _bool(value: Any) -> Any:
    """accelerate writes booleans as YAML booleans or as the strings "true"/"false"."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    return value


def _upper_choice(value: Any, names: tuple[str, ...]) -> Any:
    """An enum given as its name (any case) or its 1-based number -> its name."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        i = int(value)
        return names[i - 1] if 1 <= i <= len(names) else value
    return value.strip().upper() if isinstance(value, str) else value


def _class_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    if isinstance(value, (list, tuple)):
        return [str(c).strip() for c in value if str(c).strip()]
    return value


def _float(value: Any) -> Any:
    """A number given as a number or a numeric string -> float; anything else unchanged."""
    if isinstance(value, bool):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# ---------------------------------------------------------------------------------- profile → accelerate


def fsdp_section(fsdp: Mapping[str, Any]) -> dict[str, Any]:
    """[distributed.fsdp] (defaults filled in) → accelerate's fsdp_config, every key that applies
    written out (a key left out would take accelerate launch's default, which may differ)."""
    get = lambda leaf: fsdp.get(leaf, FSDP_KEYS[leaf].default)  # noqa: E731
    version = get("version")
    policy = get("auto_wrap_policy")
    out: dict[str, Any] = {
        "fsdp_version": version,
        "fsdp_auto_wrap_policy": WRAP[policy],
        "fsdp_offload_params": bool(get("offload_params")),
        "fsdp_state_dict_type": STATE_DICT[get("state_dict_type")],
        "fsdp_cpu_ram_efficient_loading": bool(get("cpu_ram_efficient_loading")),
        "fsdp_activation_checkpointing": bool(get("activation_checkpointing")),
    }
    classes = get("transformer_layer_cls_to_wrap")
    if policy == "transformer" and classes:
        out["fsdp_transformer_layer_cls_to_wrap"] = ",".join(classes)
    if policy == "size":
        out["fsdp_min_num_params"] = int(get("min_num_params"))
    if version == 1:
        out["fsdp_sharding_strategy"] = get("sharding_strategy").upper()
        out["fsdp_backward_prefetch"] = PREFETCH[get("backward_prefetch")]
        out["fsdp_forward_prefetch"] = bool(get("forward_prefetch"))
        out["fsdp_sync_module_states"] = bool(get("sync_module_states"))
        out["fsdp_use_orig_params"] = bool(get("use_orig_params"))
    else:
        out["fsdp_reshard_after_forward"] = get("sharding_strategy") == "full_shard"
    return dict(sorted(out.items()))


def deepspeed_section(ds: Mapping[str, Any], config_file: str | None = None) -> dict[str, Any]:
    """[distributed.deepspeed] → accelerate's deepspeed_config. With a DeepSpeed JSON only the file
    (and zero3_init when given) go in: accelerate refuses plugin fields next to a JSON.
    `config_file`: the JSON's path as it should be written (resolved by the caller)."""
    if ds.get("config_file"):
        out: dict[str, Any] = {"deepspeed_config_file": config_file or ds["config_file"]}
        if ds.get("zero3_init") is not None:
            out["zero3_init_flag"] = bool(ds["zero3_init"])
        return out
    stage = ds.get("zero_stage", DEEPSPEED_KEYS["zero_stage"].default)
    out = {
        "zero_stage": stage,
        "offload_optimizer_device": ds.get("offload_optimizer_device") or "none",
        "offload_param_device": ds.get("offload_param_device") or "none",
        "zero3_init_flag": bool(ds["zero3_init"]) if ds.get("zero3_init") is not None else stage == 3,
    }
    for leaf in ("offload_optimizer_nvme_path", "offload_param_nvme_path", "gradient_accumulation_steps",
                 "gradient_clipping"):
        if ds.get(leaf) is not None:
            out[leaf] = ds[leaf]
    if stage == 3 or ds.get("zero3_save_16bit_model"):
        out["zero3_save_16bit_model"] = bool(ds.get("zero3_save_16bit_model"))
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------- canonical form


def _prefixed(key: Any) -> str:
    """An fsdp_config key as written, with accelerate's "fsdp_" prefix (some configs leave it out)."""
    return str(key) if str(key).startswith("fsdp") else "fsdp_" + str(key)


def _fsdp_name(key: Any) -> str:
    """An fsdp_config key as `accelerate launch` reads it (an alias taken as the key it meant)."""
    return FSDP_ALIASES.get(_prefixed(key), _prefixed(key))


def canonical_fsdp(raw: Mapping[str, Any]) -> dict[str, Any]:
    """An fsdp_config as accelerate 1.15 applies it: keys spelled as `accelerate launch` reads them
    (aliases taken as the key they meant), values normalised, launch defaults filled in, and only
    the keys that act for this FSDP version and wrap policy."""
    cfg = {_fsdp_name(key): value for key, value in raw.items()}
    out = {k: cfg.get(k, default) for k, default in LAUNCH_FSDP_DEFAULTS.items()}
    version = _int(out["fsdp_version"])
    out["fsdp_version"] = version
    for key in ("fsdp_offload_params", "fsdp_forward_prefetch", "fsdp_use_orig_params",
                "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states", "fsdp_activation_checkpointing"):
        out[key] = _bool(out[key])
    out["fsdp_min_num_params"] = _int(out["fsdp_min_num_params"])
    out["fsdp_sharding_strategy"] = _upper_choice(out["fsdp_sharding_strategy"], SHARDING)
    policy = _upper_choice(out["fsdp_auto_wrap_policy"] or "NO_WRAP", tuple(WRAP.values()))
    out["fsdp_auto_wrap_policy"] = policy
    out["fsdp_backward_prefetch"] = _upper_choice(out["fsdp_backward_prefetch"] or "NO_PREFETCH",
                                                  ("BACKWARD_PRE", "BACKWARD_POST"))
    state = out["fsdp_state_dict_type"] or ("FULL_STATE_DICT" if version == 1 else "SHARDED_STATE_DICT")
    out["fsdp_state_dict_type"] = _upper_choice(state, tuple(STATE_DICT.values()))
    out["fsdp_transformer_layer_cls_to_wrap"] = _class_list(out["fsdp_transformer_layer_cls_to_wrap"])
    if version == 2:
        out["fsdp_reshard_after_forward"] = _bool(out["fsdp_reshard_after_forward"])
        for key in FSDP1_ONLY:
            out.pop(key)
    else:
        # FSDP1 reads fsdp_sharding_strategy (accelerate launch always sets it); reshard_after_forward
        # only acts when no strategy is given, which cannot happen through `accelerate launch`.
        out.pop("fsdp_reshard_after_forward")
    if policy != "SIZE_BASED_WRAP":
        out.pop("fsdp_min_num_params")
    if policy != "TRANSFORMER_BASED_WRAP":
        out.pop("fsdp_transformer_layer_cls_to_wrap")
    out["unknown"] = {k: v for k, v in cfg.items() if k not in FSDP_KNOWN}
    return out


def canonical_deepspeed(raw: Mapping[str, Any]) -> dict[str, Any]:
    cfg = {str(k): v for k, v in raw.items()}
    if cfg.get("deepspeed_config_file"):
        out: dict[str, Any] = {"deepspeed_config_file": cfg["deepspeed_config_file"],
                               "zero3_init_flag": _bool(cfg.get("zero3_init_flag"))}
    else:
        out = {k: cfg.get(k, default) for k, default in DS_DEFAULTS.items()}
        out["zero_stage"] = _int(out["zero_stage"])
        out["zero3_save_16bit_model"] = _bool(out["zero3_save_16bit_model"])
        for key in ("offload_optimizer_device", "offload_param_device"):
            out[key] = str(out[key]).lower()
        out["gradient_accumulation_steps"] = _int(out["gradient_accumulation_steps"])
        clip = out["gradient_clipping"]
        out["gradient_clipping"] = clip if clip == "auto" or clip is None else _float(clip)
        flag = cfg.get("zero3_init_flag")
        out["zero3_init_flag"] = _bool(flag) if flag is not None else out["zero_stage"] == 3
    out["unknown"] = {k: v for k, v in cfg.items() if k not in DS_KNOWN | DS_LAUNCHER_KEYS}
    out["launcher"] = {k: v for k, v in cfg.items() if k in DS_LAUNCHER_KEYS}
    return out


def _gpu_ids(value: Any) -> str:
    """accelerate's gpu_ids in one spelling: "all" or "0,1" (an unreadable value as it is)."""
    ids = _gpu_id_list(value)
    return ids if isinstance(ids, str) else ",".join(map(str, ids)) if ids is not None else str(value)


def canonical_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """What an accelerate config means, in one spelling, for comparing two configs."""
    cfg = {str(k): v for k, v in config.items()}
    out = {k: cfg.get(k, default) for k, default in TOP_DEFAULTS.items()}
    out["distributed_type"] = str(cfg.get("distributed_type", "NO")).upper()
    out["num_processes"] = _int(cfg.get("num_processes", 1))
    for key in ("debug", "use_cpu", "same_network", "tpu_use_cluster", "tpu_use_sudo", "enable_cpu_affinity",
                "downcast_bf16"):
        out[key] = _bool(out[key])
    for key in ("machine_rank", "num_machines", "main_process_port"):
        out[key] = _int(out[key])
    out["mixed_precision"] = str(out["mixed_precision"] or "no").lower()
    out["gpu_ids"] = _gpu_ids(out["gpu_ids"])
    if out["distributed_type"] == "FSDP":
        out["fsdp_config"] = canonical_fsdp(_mapping(cfg.get("fsdp_config")))
    if out["distributed_type"] == "DEEPSPEED":
        out["deepspeed_config"] = canonical_deepspeed(_mapping(cfg.get("deepspeed_config")))
        if out["deepspeed_config"].get("deepspeed_config_file") and "mixed_precision" not in cfg:
            out["mixed_precision"] = None  # from the DeepSpeed JSON
    known = set(TOP_DEFAULTS) | {"distributed_type", "num_processes", "fsdp_config", "deepspeed_config"}
    out["unknown"] = {k: v for k, v in cfg.items() if k not in known and v not in EMPTY}
    return out


# ---------------------------------------------------------------------------------- accelerate → profile


@dataclass
class ImportResult:
    """The [distributed] table (whole) and the [hardware] and [training] keys an accelerate config maps to.

    `hardware_remove`: [hardware] keys to take out of a profile merged into (gpu_ids "all": no
    GPU selection). `training`: the TrainingArguments DeepSpeed's plugin fields must agree with.
    `problems`: errors (nothing usable), warnings (fields not mapped: the profile would run
    differently), notes (renamed, defaulted or ignored fields)."""

    distributed: dict[str, Any] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    hardware_remove: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def tables(self) -> dict[str, Any]:
        tables = {"hardware": dict(self.hardware), "distributed": dict(self.distributed)}
        if self.training:
            tables["training"] = dict(self.training)
        return tables

    def merge_into(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """A profile's data with [distributed] replaced and the [hardware] and [training] keys set (a new dict)."""
        merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
        hardware = merged.get("hardware") if isinstance(merged.get("hardware"), dict) else {}
        for key in self.hardware_remove:
            hardware.pop(key, None)
        hardware.update(self.hardware)
        merged["hardware"] = hardware
        merged["distributed"] = dict(self.distributed)
        if self.training:
            training = merged.get("training") if isinstance(merged.get("training"), dict) else {}
            merged["training"] = {**training, **self.training}
        return merged


DISTRIBUTED_TYPES = {"NO": "single", "MULTI_GPU": "ddp", "MULTI_CPU": "ddp", "FSDP": "fsdp", "DEEPSPEED": "deepspeed"}


def import_accelerate_config(config: Any, file: str, base_dir: Path | None = None,
                             comments: Sequence[str] = ()) -> ImportResult:
    """An accelerate config (the parsed YAML or JSON) → profile tables and a word on every field.

    `base_dir`: where a relative deepspeed_config_file is looked for (to read its precision).
    `comments`: the file's comment lines (export marks a config for CPU ranks in one)."""
    result = ImportResult()
    problems = result.problems

    def note(key: str, message: str, fix: str | None = None, severity: str = "note") -> None:
        problems.append(Problem(file, key, message, fix, severity))  # type: ignore[arg-type]

    if not isinstance(config, dict):
        note("", "is not an accelerate config (expected a mapping of keys)", "give the YAML that "
             "`accelerate config` writes", "error")
        return result
    cfg = {str(k): v for k, v in config.items()}
    env = str(cfg.get("compute_environment", "LOCAL_MACHINE"))
    if env != "LOCAL_MACHINE":
        note("compute_environment", f"{env}: only LOCAL_MACHINE configs can be imported (tuitrain launches "
             "on this machine or a cluster of them)", "write a LOCAL_MACHINE config with `accelerate config`", "error")
        return result
    kind = str(cfg.get("distributed_type", "")).upper()
    if kind not in DISTRIBUTED_TYPES:
        what = f"{kind!r} is not one of tuitrain's strategies" if kind else "missing"
        note("distributed_type", what, "tuitrain imports NO, MULTI_GPU, MULTI_CPU, FSDP and DEEPSPEED configs", "error")
        return result
    canon = canonical_config(cfg)
    dist: dict[str, Any] = {"strategy": DISTRIBUTED_TYPES[kind]}
    hardware: dict[str, Any] = {}
    done = {"compute_environment", "distributed_type"}

    # -- processes and machines
    total = canon["num_processes"]
    machines = canon["num_machines"] if _whole(canon["num_machines"]) and canon["num_machines"] >= 1 else 1
    done |= {"num_processes", "num_machines"}
    if not _whole(canon["num_machines"]) or canon["num_machines"] != machines:
        note("num_machines", f"{canon['num_machines']!r} is not a number of machines (1 or more); imported as 1",
             "set distributed.num_machines", "warning")
    if not _whole(total) or total < 1:
        note("num_processes", f"{total!r}: accelerate leaves it to the command line (e.g. under SLURM); "
             "tuitrain needs the number", "set distributed.num_processes (per machine) in the profile", "warning")
        total = machines
    if total % machines:
        note("num_processes", f"{total} processes do not split evenly over {machines} machines; "
             f"tuitrain runs num_processes on each machine, so this imports {total // machines or 1} per machine",
             "check distributed.num_processes", "warning")
    dist["num_processes"] = max(total // machines, 1)
    if kind == "NO" and total > 1:
        note("num_processes", f"{total} processes with distributed_type NO: accelerate runs one", None, "warning")
        dist["num_processes"] = 1
    if machines > 1:
        dist["num_machines"] = machines
    for key in ("machine_rank", "main_process_ip", "main_process_port"):
        done.add(key)
        if canon[key] not in (None, TOP_DEFAULTS[key]):
            dist[key] = canon[key]
    done |= {"rdzv_backend", "same_network", "downcast_bf16"}
    if canon["rdzv_backend"] in ("static", "c10d"):
        dist["rdzv_backend"] = canon["rdzv_backend"]
    else:
        note("rdzv_backend", f"{canon['rdzv_backend']!r} is not one of static, c10d", "set distributed.rdzv_backend",
             "warning")
    dist["same_network"] = canon["same_network"]
    if "same_network" not in cfg:
        note("same_network", "absent: accelerate reads it as false (rendezvous through main_process_ip:port as "
             "an endpoint); written as distributed.same_network = false")
    if canon["downcast_bf16"] is not False:
        dist["downcast_bf16"] = canon["downcast_bf16"]

    # -- device and precision
    done |= {"use_cpu", "gpu_ids", "mixed_precision"}
    if not isinstance(canon["use_cpu"], bool):
        note("use_cpu", f"= {_shown(canon['use_cpu'])} is not true or false; read as false", "set "
             'hardware.accelerator = "cpu" for CPU ranks', "warning")
    if canon["use_cpu"] is True or kind == "MULTI_CPU":
        hardware["accelerator"] = "cpu"
        if kind == "MULTI_CPU":
            note("distributed_type", "MULTI_CPU: accelerate starts one process for it without mpirun; tuitrain "
                 "runs the CPU ranks as real gloo processes (strategy ddp, accelerator cpu)")
    elif kind == "MULTI_GPU" and any(CPU_RANKS_MARK in line for line in comments):
        hardware["accelerator"] = "cpu"
        note("distributed_type", "MULTI_GPU from `tuitrain profile export-accelerate` for CPU ranks (its header "
             "says so): imported as hardware.accelerator = \"cpu\"")
    elif kind in ("MULTI_GPU", "FSDP", "DEEPSPEED"):
        hardware["accelerator"] = "cuda"
        if kind == "MULTI_GPU":
            note("distributed_type", "MULTI_GPU: imported as hardware.accelerator = \"cuda\"; if this config "
                 "starts CPU ranks (MULTI_GPU with CUDA_VISIBLE_DEVICES empty, as tuitrain runs them), set "
                 "hardware.accelerator = \"cpu\"")
    else:
        hardware["accelerator"] = "auto"
    ids = _gpu_id_list(cfg.get("gpu_ids", "all"))
    if ids == "all":
        result.hardware_remove.append("gpus")
    elif ids is None:
        result.hardware_remove.append("gpus")
        note("gpu_ids", f"= {_shown(cfg.get('gpu_ids'))} is not a list of GPU numbers or UUIDs; imported as all "
             "GPUs", "set hardware.gpus, e.g. gpus = [0, 1]", "warning")
    else:
        hardware["gpus"] = ids
        note("gpu_ids", f"{canon['gpu_ids']} are CUDA device numbers; hardware.gpus are physical (NVML) "
             "indices, the same when CUDA_DEVICE_ORDER=PCI_BUS_ID (tuitrain's default) and no "
             "CUDA_VISIBLE_DEVICES hides a GPU", "check them against `tuitrain gpus`")
    mixed = cfg.get("mixed_precision")
    if mixed is None and kind == "DEEPSPEED" and canon["deepspeed_config"].get("deepspeed_config_file"):
        found = _precision_from_json(canon["deepspeed_config"]["deepspeed_config_file"], base_dir)
        if found:
            hardware["mixed_precision"] = found
        else:
            note("mixed_precision", "absent: the DeepSpeed JSON decides (\"auto\" there follows "
                 "hardware.mixed_precision); hardware.mixed_precision left as it was")
    elif canon["mixed_precision"] in ("no", "fp16", "bf16"):
        hardware["mixed_precision"] = canon["mixed_precision"]
    else:
        note("mixed_precision", f"{canon['mixed_precision']!r} is not one of no, fp16, bf16", "set "
             "hardware.mixed_precision", "warning")

    # -- strategy tables
    for section in ("fsdp_config", "deepspeed_config"):
        if cfg.get(section) is not None and not isinstance(cfg[section], Mapping):
            note(section, f"= {_shown(cfg[section])} is not a mapping of keys: nothing in it "
                 "could be imported", f"write {section} as `key: value` lines under it", "warning")
    if kind == "FSDP":
        done.add("fsdp_config")
        dist["fsdp"] = _import_fsdp(_mapping(cfg.get("fsdp_config")), note)
    elif cfg.get("fsdp_config"):
        done.add("fsdp_config")
        note("fsdp_config", f"ignored by accelerate with distributed_type {kind}", None, "note")
    if kind == "DEEPSPEED":
        done.add("deepspeed_config")
        dist["deepspeed"] = _import_deepspeed(_mapping(cfg.get("deepspeed_config")), note, machines, base_dir)
    elif cfg.get("deepspeed_config"):
        done.add("deepspeed_config")
        note("deepspeed_config", f"ignored by accelerate with distributed_type {kind}", None, "note")

    # -- everything else: at its default it says nothing; otherwise it could not be mapped
    quiet = []
    for key, value in cfg.items():
        if key in done:
            continue
        default = TOP_DEFAULTS.get(key)
        if value in EMPTY or value == default or _bool(value) == default:
            quiet.append(key)
            continue
        why = NO_PROFILE_KEY.get(key, "tuitrain has no key for it")
        note(key, f"= {_shown(value)} could not be mapped: {why}", None, "warning")
    if quiet:
        note("", "at accelerate's defaults, nothing to carry over: " + ", ".join(sorted(quiet)))
    result.distributed = _checked(dist, "distributed", note)
    result.hardware = _checked(hardware, "hardware", note)
    result.training = _training_from_deepspeed(result.distributed.get("deepspeed") or {}, note)
    return result


# DeepSpeed plugin field -> the TrainingArguments key transformers checks it against at start
DS_TRAINING_PAIRS = {"gradient_accumulation_steps": "gradient_accumulation_steps", "gradient_clipping": "max_grad_norm"}


def _training_from_deepspeed(ds: Mapping[str, Any], note: Any) -> dict[str, Any]:
    """[training] values that agree with the imported DeepSpeed fields: transformers' DeepSpeed
    integration stops a run whose TrainingArguments differ from them."""
    training: dict[str, Any] = {}
    for ds_key, train_key in DS_TRAINING_PAIRS.items():
        value = ds.get(ds_key)
        if value is None:
            continue
        training[train_key] = value
        note(f"deepspeed_config.{ds_key}", f"{_shown(value)}: also written as training.{train_key} = {_shown(value)} "
             "(transformers stops a run where the two differ)")
    return training


# profile key -> the accelerate key it came from, where the names differ
_SOURCES = {
    "distributed.strategy": "distributed_type",
    "hardware.accelerator": "distributed_type",
    "hardware.gpus": "gpu_ids",
    "hardware.mixed_precision": "mixed_precision",
    **{f"distributed.fsdp.{ours}": f"fsdp_config.{acc}" for acc, ours in FSDP_PLAIN.items()},
    **{f"distributed.fsdp.{leaf}": f"fsdp_config.fsdp_{leaf}" for leaf in (
        "sharding_strategy", "auto_wrap_policy", "transformer_layer_cls_to_wrap", "backward_prefetch",
        "state_dict_type")},
    **{f"distributed.deepspeed.{ours}": f"deepspeed_config.{acc}" for acc, ours in DS_PLAIN.items()},
}


def _broken_text(key: str, value: Any) -> list[Problem]:
    """A string with lone UTF-16 surrogates (a YAML "\\ud83d\\ude00" escape pair) is no text a file can hold."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return [Problem("imported", key, "not valid text (a character escaped as two \\u halves?)",
                                "write the character itself, or as \\UXXXXXXXX")]
    return []


def _checked(table: dict[str, Any], prefix: str, note: Any) -> dict[str, Any]:
    """`table` without the values a profile cannot hold (wrong type, not a choice, out of range),
    each named as a warning under the accelerate key it came from: an import never copies through
    a value that would break the profile, nor drops one silently."""
    out: dict[str, Any] = {}
    for leaf, value in table.items():
        key = f"{prefix}.{leaf}"
        if key in ("distributed.fsdp", "distributed.deepspeed") and isinstance(value, dict):
            out[leaf] = _checked(value, key, note)
            continue
        found = check_value("imported", key, value) or _broken_text(key, value)
        if not found:
            out[leaf] = value
            continue
        source = _SOURCES.get(key, key.removeprefix("distributed.").removeprefix("hardware."))
        note(source, f"= {_shown(value)} could not be mapped: {found[0].message}",
             f"set {key} in the profile" + (f" ({found[0].fix})" if found[0].fix else ""), "warning")
    return out


_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxlevel = 60, 60, 6, 6, 3


def _shown(value: Any) -> str:
    """A value as a message shows it: short, whatever its size (YAML aliases can make it huge)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        text = json.dumps(value)
        return text if len(text) <= 80 else text[:76] + '..."'
    return _SHORT.repr(value)


def _reverse(table: Mapping[str, str], value: Any) -> str | None:
    """The key of `table` whose value is `value` (None for anything else, unhashable values too)."""
    return next((k for k, v in table.items() if isinstance(value, str) and v == value), None)


def _gpu_id_list(value: Any) -> list[int | str] | str | None:
    """accelerate's gpu_ids ("all", "0,1", 3, [0, 1], "GPU-<uuid>") -> "all" or a list of CUDA
    numbers and UUIDs; None for anything else."""
    if value is None or value == "all":
        return "all"
    items = value if isinstance(value, list) else str(value).split(",") if isinstance(value, (str, int)) else None
    if items is None or isinstance(value, bool):
        return None
    out: list[int | str] = []
    for item in items:
        text = str(item).strip() if isinstance(item, (str, int)) and not isinstance(item, bool) else None
        if text is None or not (text.isdigit() or text.startswith(("GPU-", "MIG-"))):
            return None
        out.append(int(text) if text.isdigit() else text)
    return out or "all"


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_path(path: Any, base_dir: Path | None, note: Any) -> Any:
    """deepspeed_config_file as the profile should hold it: a relative path is relative to the
    accelerate config's folder, and a profile's to its own folder, so it is written out in full."""
    if not isinstance(path, str) or base_dir is None or Path(path).expanduser().is_absolute():
        return path  # not a path at all: the schema check names it
    full = str((base_dir / path).resolve())
    note("deepspeed_config.deepspeed_config_file", f"{path} is relative to the accelerate config's folder: "
         f"written as {full}")
    return full


def _precision_from_json(path: Any, base_dir: Path | None) -> str | None:
    if not isinstance(path, str):
        return None
    full = Path(path).expanduser()
    if not full.is_absolute() and base_dir is not None:
        full = base_dir / full
    try:
        loaded = json.loads(full.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for precision in ("bf16", "fp16"):
        section = loaded.get(precision) if isinstance(loaded, dict) else None
        if isinstance(section, dict) and section.get("enabled") is True:
            return precision
    return None


def _import_fsdp(raw: Mapping[str, Any], note: Any) -> dict[str, Any]:
    canon = canonical_fsdp(raw)
    for key, value in raw.items():
        if _prefixed(key) in FSDP_ALIASES:
            note(f"fsdp_config.{key}", f"an old or foreign name that accelerate 1.15 does not read (a config "
                 f"with it runs without the setting); read as {_fsdp_name(key)}, and written under that "
                 "name on export")
        full = _fsdp_name(key)
        if full in FSDP_KNOWN and full not in canon:
            note(f"fsdp_config.{key}", f"= {_shown(value)} not imported: accelerate does not use it with "
                 f"fsdp_version {_shown(canon['fsdp_version'])} and auto wrap policy "
                 f"{_shown(canon['fsdp_auto_wrap_policy'])}")
    table: dict[str, Any] = {}
    for acc, ours in FSDP_PLAIN.items():
        if acc in canon:
            table[ours] = canon[acc]
    version = canon["fsdp_version"]
    if version not in (1, 2):
        note("fsdp_config.fsdp_version", f"{version!r} is not 1 or 2", "set distributed.fsdp.version", "warning")
    if version == 2:
        table["sharding_strategy"] = "full_shard" if canon["fsdp_reshard_after_forward"] else "shard_grad_op"
    elif isinstance(canon["fsdp_sharding_strategy"], str) and canon["fsdp_sharding_strategy"] in SHARDING:
        table["sharding_strategy"] = canon["fsdp_sharding_strategy"].lower()
    else:
        note("fsdp_config.fsdp_sharding_strategy", f"{canon['fsdp_sharding_strategy']!r} is not a sharding strategy",
             "set distributed.fsdp.sharding_strategy", "warning")
    policy = _reverse(WRAP, canon["fsdp_auto_wrap_policy"])
    if policy is None:
        note("fsdp_config.fsdp_auto_wrap_policy", f"{canon['fsdp_auto_wrap_policy']!r} is not a wrap policy",
             "set distributed.fsdp.auto_wrap_policy", "warning")
    else:
        table["auto_wrap_policy"] = policy
    if canon.get("fsdp_transformer_layer_cls_to_wrap"):
        table["transformer_layer_cls_to_wrap"] = canon["fsdp_transformer_layer_cls_to_wrap"]
    if "fsdp_backward_prefetch" in canon:
        prefetch = _reverse(PREFETCH, canon["fsdp_backward_prefetch"])
        if prefetch is None:
            note("fsdp_config.fsdp_backward_prefetch", f"{canon['fsdp_backward_prefetch']!r} is not one of "
                 f"{', '.join(PREFETCH.values())}; not imported", "set distributed.fsdp.backward_prefetch", "warning")
        else:
            table["backward_prefetch"] = prefetch
    state = _reverse(STATE_DICT, canon["fsdp_state_dict_type"])
    if state:
        table["state_dict_type"] = state
    else:
        note("fsdp_config.fsdp_state_dict_type", f"{canon['fsdp_state_dict_type']!r} is not one of "
             f"{', '.join(STATE_DICT.values())}; not imported", "set distributed.fsdp.state_dict_type", "warning")
    for key, value in canon["unknown"].items():
        note(f"fsdp_config.{key}", f"= {_shown(value)} could not be mapped: not among "
             "[distributed.fsdp]'s keys", "check whether accelerate 1.15 reads it at all", "warning")
    return {k: table[k] for k in FSDP_KEYS if k in table}


def _import_deepspeed(raw: Mapping[str, Any], note: Any, machines: int = 1,
                      base_dir: Path | None = None) -> dict[str, Any]:
    canon = canonical_deepspeed(raw)
    for key, value in canon["launcher"].items():
        if key == "deepspeed_multinode_launcher" and (value == "standard" or machines == 1):
            continue  # what tuitrain does anyway / nothing to launch across machines
        note(f"deepspeed_config.{key}", f"= {_shown(value)} could not be mapped: tuitrain starts "
             "every machine itself (accelerate's \"standard\" launcher: torchrun on each machine), not through "
             "DeepSpeed's pdsh / MPI / SLURM runner", "run `tuitrain run PROFILE` on each machine with its "
             "distributed.machine_rank", "warning")
    table: dict[str, Any] = {}
    if canon.get("deepspeed_config_file"):
        table["config_file"] = _json_path(canon["deepspeed_config_file"], base_dir, note)
        if canon["zero3_init_flag"] is not None:
            table["zero3_init"] = canon["zero3_init_flag"]
        ignored = [k for k in raw if k in DS_DEFAULTS]
        if ignored:
            note("deepspeed_config", f"{', '.join(ignored)} next to deepspeed_config_file: accelerate refuses "
                 "that combination; not imported", "set them in the DeepSpeed JSON", "warning")
    else:
        for acc, ours in DS_PLAIN.items():
            if acc == "deepspeed_config_file":
                continue
            value = canon.get(acc)
            if value is None or value == "auto":
                continue
            table[ours] = value
        if not canon["zero3_save_16bit_model"] and canon["zero_stage"] != 3:
            table.pop("zero3_save_16bit_model", None)
        if table.get("zero3_init") is True and canon["zero_stage"] != 3:
            note("deepspeed_config.zero3_init_flag", f"true with zero_stage {canon['zero_stage']}: accelerate turns "
                 "it off (it only acts at stage 3); imported as written")
    table = {k: table[k] for k in DEEPSPEED_KEYS if k in table}
    for key, value in canon["unknown"].items():
        note(f"deepspeed_config.{key}", f"= {_shown(value)} could not be mapped: not among "
             "[distributed.deepspeed]'s keys", "set it in a DeepSpeed JSON (distributed.deepspeed.config_file)",
             "warning")
    return table


# ---------------------------------------------------------------------------------- files


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """accelerate's default config file (what `accelerate config` writes and `accelerate launch`
    reads when no --config_file is given): $HF_HOME/accelerate/default_config.yaml, HF_HOME
    defaulting to $XDG_CACHE_HOME/huggingface (~/.cache/huggingface). The legacy JSON is
    returned when it is the only one there."""
    env = os.environ if environ is None else environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    folder = Path(os.path.expanduser(home)) / "accelerate"
    yaml_file, json_file = folder / "default_config.yaml", folder / "default_config.json"
    return json_file if json_file.is_file() and not yaml_file.is_file() else yaml_file


def existing_default_config(environ: Mapping[str, str] | None = None) -> Path | None:
    """accelerate's default config when the user has one (for the app to offer importing it)."""
    path = default_config_path(environ)
    return path if path.is_file() else None


def import_accelerate_file(path: Path) -> ImportResult:
    """Read an accelerate config file and import it (its comments included); OSError / ValueError
    when it cannot be read as YAML or JSON."""
    text = path.read_text(encoding="utf-8")
    comments = [line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip().startswith("#")]
    return import_accelerate_config(parse_config_text(text, path.suffix), str(path), base_dir=path.parent,
                                    comments=comments)


def parse_config_text(text: str, suffix: str = ".yaml") -> Any:
    """The parsed YAML (or, for suffix ".json", JSON) of an accelerate config; ValueError if not."""
    import yaml

    if suffix == ".json":
        return json.loads(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {exc}") from None
