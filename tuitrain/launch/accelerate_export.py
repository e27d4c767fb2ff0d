"""A profile's [distributed.fsdp] / [distributed.deepspeed] tables → accelerate's `fsdp_config` /
`deepspeed_config` mappings (plain data: no accelerate import, it loads torch). The rest of the
accelerate config is planned in `launch/plan.py`."""

from __future__ import annotations

from typing import Any, Mapping

from tuitrain.profile.accelerate_names import PREFETCH, STATE_DICT, WRAP
from tuitrain.profile.schema import DEEPSPEED_KEYS, FSDP_KEYS


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
