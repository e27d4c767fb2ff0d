"""What an accelerate config means to accelerate 1.15, in one spelling: old key names migrated,
values normalised, `accelerate launch`'s own defaults filled in, so that two configs can be
compared (and the import reads one spelling). Plain mappings: no accelerate import (it loads torch)."""

from __future__ import annotations

from typing import Any, Mapping

from .accelerate_names import (
    DS_DEFAULTS,
    DS_KNOWN,
    DS_LAUNCHER_KEYS,
    EMPTY,
    FSDP1_ONLY,
    FSDP_ALIASES,
    FSDP_KNOWN,
    LAUNCH_FSDP_DEFAULTS,
    SHARDING,
    STATE_DICT,
    TOP_DEFAULTS,
    WRAP,
)
from .values import whole_number

# ---------------------------------------------------------------------------------- values


def as_bool(value: Any) -> Any:
    """accelerate writes booleans as YAML booleans or as the strings "true"/"false"."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    return value


def _upper_choice(value: Any, names: tuple[str, ...]) -> Any:
    """An enum given as its name (any case) or its 1-based number -> its name."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) or (isinstance(value, str) and whole_number(value) is not None):
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


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_int(value: Any) -> Any:
    if isinstance(value, str) and (number := whole_number(value)) is not None:
        return number
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value



def gpu_id_list(value: Any) -> list[int | str] | str | None:
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
        index = text is not None and text.isascii() and text.isdecimal()  # "²" is a digit int() refuses
        if text is None or not (index or text.startswith(("GPU-", "MIG-"))):
            return None
        out.append(int(text) if index else text)
    return out or "all"



# ---------------------------------------------------------------------------------- configs


def fsdp_prefixed(key: Any) -> str:
    """An fsdp_config key as written, with accelerate's "fsdp_" prefix (some configs leave it out)."""
    return str(key) if str(key).startswith("fsdp") else "fsdp_" + str(key)


def fsdp_key_as_read(key: Any) -> str:
    """An fsdp_config key as `accelerate launch` reads it (an alias taken as the key it meant)."""
    return FSDP_ALIASES.get(fsdp_prefixed(key), fsdp_prefixed(key))


def canonical_fsdp(raw: Mapping[str, Any]) -> dict[str, Any]:
    """An fsdp_config as accelerate 1.15 applies it: keys spelled as `accelerate launch` reads them
    (aliases taken as the key they meant), values normalised, launch defaults filled in, and only
    the keys that act for this FSDP version and wrap policy."""
    cfg = {fsdp_key_as_read(key): value for key, value in raw.items()}
    out = {k: cfg.get(k, default) for k, default in LAUNCH_FSDP_DEFAULTS.items()}
    version = as_int(out["fsdp_version"])
    out["fsdp_version"] = version
    for key in ("fsdp_offload_params", "fsdp_forward_prefetch", "fsdp_use_orig_params",
                "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states", "fsdp_activation_checkpointing"):
        out[key] = as_bool(out[key])
    out["fsdp_min_num_params"] = as_int(out["fsdp_min_num_params"])
    out["fsdp_sharding_strategy"] = _upper_choice(out["fsdp_sharding_strategy"], SHARDING)
    policy = _upper_choice(out["fsdp_auto_wrap_policy"] or "NO_WRAP", tuple(WRAP.values()))
    out["fsdp_auto_wrap_policy"] = policy
    out["fsdp_backward_prefetch"] = _upper_choice(out["fsdp_backward_prefetch"] or "NO_PREFETCH",
                                                  ("BACKWARD_PRE", "BACKWARD_POST"))
    state = out["fsdp_state_dict_type"] or ("FULL_STATE_DICT" if version == 1 else "SHARDED_STATE_DICT")
    out["fsdp_state_dict_type"] = _upper_choice(state, tuple(STATE_DICT.values()))
    out["fsdp_transformer_layer_cls_to_wrap"] = _class_list(out["fsdp_transformer_layer_cls_to_wrap"])
    if version == 2:
        out["fsdp_reshard_after_forward"] = as_bool(out["fsdp_reshard_after_forward"])
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
                               "zero3_init_flag": as_bool(cfg.get("zero3_init_flag"))}
    else:
        out = {k: cfg.get(k, default) for k, default in DS_DEFAULTS.items()}
        out["zero_stage"] = as_int(out["zero_stage"])
        out["zero3_save_16bit_model"] = as_bool(out["zero3_save_16bit_model"])
        for key in ("offload_optimizer_device", "offload_param_device"):
            out[key] = str(out[key]).lower()
        out["gradient_accumulation_steps"] = as_int(out["gradient_accumulation_steps"])
        clip = out["gradient_clipping"]
        out["gradient_clipping"] = clip if clip == "auto" or clip is None else _float(clip)
        flag = cfg.get("zero3_init_flag")
        out["zero3_init_flag"] = as_bool(flag) if flag is not None else out["zero_stage"] == 3
    out["unknown"] = {k: v for k, v in cfg.items() if k not in DS_KNOWN | DS_LAUNCHER_KEYS}
    out["launcher"] = {k: v for k, v in cfg.items() if k in DS_LAUNCHER_KEYS}
    return out


def _gpu_ids(value: Any) -> str:
    """accelerate's gpu_ids in one spelling: "all" or "0,1" (an unreadable value as it is)."""
    ids = gpu_id_list(value)
    return ids if isinstance(ids, str) else ",".join(map(str, ids)) if ids is not None else str(value)


def canonical_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """What an accelerate config means, in one spelling, for comparing two configs."""
    cfg = {str(k): v for k, v in config.items()}
    out = {k: cfg.get(k, default) for k, default in TOP_DEFAULTS.items()}
    out["distributed_type"] = str(cfg.get("distributed_type", "NO")).upper()
    out["num_processes"] = as_int(cfg.get("num_processes", 1))
    for key in ("debug", "use_cpu", "same_network", "tpu_use_cluster", "tpu_use_sudo", "enable_cpu_affinity",
                "downcast_bf16"):
        out[key] = as_bool(out[key])
    for key in ("machine_rank", "num_machines", "main_process_port"):
        out[key] = as_int(out[key])
    out["mixed_precision"] = str(out["mixed_precision"] or "no").lower()
    out["gpu_ids"] = _gpu_ids(out["gpu_ids"])
    if out["distributed_type"] == "FSDP":
        out["fsdp_config"] = canonical_fsdp(as_mapping(cfg.get("fsdp_config")))
    if out["distributed_type"] == "DEEPSPEED":
        out["deepspeed_config"] = canonical_deepspeed(as_mapping(cfg.get("deepspeed_config")))
        if out["deepspeed_config"].get("deepspeed_config_file") and "mixed_precision" not in cfg:
            out["mixed_precision"] = None  # from the DeepSpeed JSON
    known = set(TOP_DEFAULTS) | {"distributed_type", "num_processes", "fsdp_config", "deepspeed_config"}
    out["unknown"] = {k: v for k, v in cfg.items() if k not in known and v not in EMPTY}
    return out
