"""accelerate 1.15's config vocabulary, as plain data: its FSDP / DeepSpeed names (and how a
profile's values spell in them), what a key left out of a config means, and the keys a profile
has no place for. Read by the export (`launch/accelerate_export.py`), the canonical form
(`accelerate_canonical.py`) and the import (`accelerate_import.py`).

The defaults below are those of `accelerate launch` 1.15 (commands/launch.py) and of its
FSDP / DeepSpeed plugins; tests/test_strategies_accelerate.py checks them against the installed
accelerate, so a drift shows up as a failing test, not as a silently different run.
"""

from __future__ import annotations

from typing import Any

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
EMPTY: tuple[Any, ...] = (None, False, [], {}, "", "no", "NO")
# A comment line export writes for CPU ranks (MULTI_GPU with every GPU hidden), which import reads back.
CPU_RANKS_MARK = "tuitrain: hardware.accelerator = cpu"
