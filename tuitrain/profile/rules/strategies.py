"""The strategies on what runs them: FSDP and DeepSpeed on CPU ranks or MPS, a world of one for FSDP,
layer-wise optimizers with several processes, [training] keys that would set a strategy up twice, and the
[distributed.fsdp] / [distributed.deepspeed] rules (a DeepSpeed JSON against [training])."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from tuitrain.installed import distribution_version

from ..implied import mixed_precision
from ..problems import Problem
from ..schema import DEEPSPEED_KEYS, DEEPSPEED_PLUGIN_KEYS, FSDP_KEYS
from ..settings import SettingKey
from ..shape import check_table
from ..training_args import FieldSpec
from ..values import describe_value, is_kind, toml_literal
from .common import resolve_path, table_of, value_of, value_or_default
from .machines import listed_machines, machine_count, machines_port_problem

# [training] keys that would set up a second FSDP / DeepSpeed next to the accelerate config.
TRAINING_STRATEGY_KEYS: dict[str, str] = {
    "fsdp": 'set distributed.strategy = "fsdp" and its options in [distributed.fsdp]',
    "fsdp_config": "put the options in [distributed.fsdp] (written into the accelerate config)",
    "deepspeed": 'set distributed.strategy = "deepspeed" and [distributed.deepspeed] config_file = "<your JSON>"',
}
# optimizer prefix -> (module found by importlib, pip name); both need optim_target_modules.
LOW_RANK_OPTIMIZERS: dict[str, tuple[str, str]] = {
    "galore_": ("galore_torch", "galore-torch"),
    "apollo_": ("apollo_torch", "apollo-torch"),
}


def cpu_strategy_problem(file: str, strategy: str, accelerate_version: str | None) -> Problem | None:
    """The refusal of FSDP or DeepSpeed on CPU ranks, or None: `validate` says it for
    accelerator = "cpu", the launch (tuitrain/launch/preflight.py) for whatever it chose."""
    if strategy == "fsdp":
        return Problem(file, "distributed.strategy",
                       f'"fsdp" does not run on the CPU with the installed accelerate {accelerate_version or "?"}: '
                       "with no GPU its ranks silently fall back to plain DDP (MULTI_CPU), nothing is sharded",
                       'use distributed.strategy = "ddp" for CPU ranks, or run FSDP on CUDA GPUs '
                       '(hardware.accelerator = "cuda")')
    if strategy == "deepspeed":
        return Problem(file, "distributed.strategy",
                       '"deepspeed" runs on CUDA GPUs here (its CPU path needs DeepSpeed\'s CPU accelerator '
                       "and oneCCL, which tuitrain does not set up)",
                       'use distributed.strategy = "ddp" for CPU ranks, or hardware.accelerator = "cuda"')
    return None


def mps_strategy_problem(file: str, strategy: str) -> Problem | None:
    """The refusal of FSDP or DeepSpeed on Apple MPS, or None: `validate` says it for
    accelerator = "mps", the plan (tuitrain/launch/plan.py) when it launches on MPS."""
    if strategy not in ("fsdp", "deepspeed"):
        return None
    return Problem(file, "distributed.strategy", f"{strategy} does not run on Apple MPS (no process group on MPS)",
                   'set distributed.strategy = "single" on MPS, or hardware.accelerator = "cuda" on a GPU machine')


FSDP_ALONE_FIX = ('set distributed.num_processes = 2 or more (one per GPU) to shard, '
                  'or distributed.strategy = "single" to drop FSDP')


def fsdp_world_of_one(fsdp: Mapping[str, Any], world: int) -> str | None:
    """What FSDP does with the sharding asked in a world of one process (num_processes × num_machines), in one
    line, or None (a larger world, or NO_SHARD asked). `validate` warns it for the num_processes a profile writes,
    `plan` says it in its strategy note for the processes it will start: torch says it only in the rank's log."""
    version = fsdp.get("version", FSDP_KEYS["version"].default)
    sharding = fsdp.get("sharding_strategy", FSDP_KEYS["sharding_strategy"].default)
    if world != 1 or (version != 2 and sharding == "no_shard"):
        return None
    if version == 2:
        what = "FSDP2 shards over that one device, which splits nothing"
    else:
        what = f"FSDP cannot shard: {sharding} runs as NO_SHARD"
    return f"with one process {what}: the whole model, gradients and optimizer state on one device, as without FSDP"


def fsdp_world_problem(file: str, dist: Mapping[str, Any]) -> Problem | None:
    """The warning of `fsdp_world_of_one` for a profile that writes num_processes = 1 on one machine (an unset one
    is one per GPU at launch: `plan` says it then)."""
    fsdp = dist.get("fsdp")
    processes = value_of(dist, "num_processes", "int")
    if value_or_default(dist, "distributed.strategy") != "fsdp" or processes is None or listed_machines(dist):
        return None
    said = fsdp_world_of_one(fsdp if isinstance(fsdp, dict) else {}, processes * value_or_default(dist, "distributed.num_machines"))
    if said is None:
        return None
    return Problem(file, "distributed.num_processes", said, FSDP_ALONE_FIX, severity="warning")

def low_rank_optimizer(optim: Any) -> tuple[str, str] | None:
    """(module, pip name) when `optim` is a GaLore / APOLLO optimizer name, else None."""
    if isinstance(optim, str):
        for prefix, found in LOW_RANK_OPTIMIZERS.items():
            if optim.startswith(prefix):
                return found
    return None


def layerwise_problem(file: str, optim: Any, processes: int, machines: int) -> Problem | None:
    """The refusal of a layer-wise GaLore / APOLLO optimizer in a world of more than one process
    (num_processes × num_machines), or None. Validation asks with the numbers the profile writes;
    the plan (tuitrain/launch/preflight.py) with the ones it will launch."""
    world = processes * machines
    if low_rank_optimizer(optim) is None or not optim.endswith("_layerwise") or world <= 1:
        return None
    fix = f"use {toml_literal(optim[: -len('_layerwise')])} or set distributed.num_processes = 1"
    return Problem(file, "training.optim",
                   f"{toml_literal(optim)} is layer-wise, which does not run with several processes "
                   f"({world} planned: num_processes × num_machines = {processes} × {machines}; "
                   "transformers: \"Layer-wise ... does not support DDP\")",
                   fix + (" and distributed.num_machines = 1" if machines > 1 else ""))


def read_deepspeed_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(config, None), or (None, why) for a file that exists but is no JSON object; (None, None)
    when there is no file (a path on another machine is not an error before launch)."""
    if not path.is_file():
        return None, None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read {path}: {exc}"
    except ValueError as exc:
        return None, f"{path} is not JSON: {exc}"
    if not isinstance(loaded, dict):
        return None, f"{path} holds {describe_value(loaded)}, not a JSON object"
    return loaded, None


def _ds_value(config: Mapping[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def rules_strategies(file: str, data: Mapping[str, Any], base_dir: Path | None,
                     fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    out: list[Problem] = []
    dist = table_of(data, "distributed")
    hardware = table_of(data, "hardware")
    training = table_of(data, "training")
    strategy = value_or_default(dist, "distributed.strategy")
    accelerator = value_or_default(hardware, "hardware.accelerator")
    machines = machine_count(dist)
    mixed = mixed_precision(data)[0]  # hardware.mixed_precision, or the training.bf16 / fp16 it leaves to

    # The strategy's own table is checked key by key (the other one is only "ignored", above).
    for sub, keys in (("fsdp", FSDP_KEYS), ("deepspeed", DEEPSPEED_KEYS)):
        table = dist.get(sub)
        if strategy == sub and isinstance(table, dict):
            out.extend(check_table(file, f"distributed.{sub}", "distributed", table, keys, fields))

    # a warning here (the file may be finished on the machine that launches); the launch refuses it
    no_port = machines_port_problem(file, machines, dist.get("main_process_port"), "warning")
    if no_port is not None:
        out.append(no_port)
    if accelerator == "cpu":
        on_cpu = cpu_strategy_problem(file, strategy, distribution_version("accelerate") if strategy == "fsdp" else None)
        if on_cpu is not None:
            out.append(on_cpu)
    on_mps = mps_strategy_problem(file, strategy) if accelerator == "mps" else None
    if on_mps is not None:
        out.append(on_mps)
    for leaf, fix in TRAINING_STRATEGY_KEYS.items():
        if training.get(leaf) not in (None, "", False, [], {}):
            out.append(Problem(file, f"training.{leaf}",
                               "would set up the strategy a second time: tuitrain passes it through the accelerate config",
                               f"remove it from [training]; {fix}"))
    if value_or_default(dist, "distributed.downcast_bf16") and mixed != "bf16":
        out.append(Problem(file, "distributed.downcast_bf16", f"has no effect without bf16 (the run's mixed precision "
                           f"is {toml_literal(mixed)}; and it only acts on TPUs)", "remove it", severity="warning"))

    optim = value_of(training, "optim", "str")
    if low_rank_optimizer(optim) is not None:
        if training.get("optim_target_modules") in (None, "", []):
            out.append(Problem(file, "training.optim_target_modules",
                               f"optim = {toml_literal(optim)} needs the modules to project",
                               'e.g. optim_target_modules = ["attn", "mlp"] (names or regexes), or "all-linear"'))
        # only the processes written here; the plan asks again with an unset num_processes filled in
        layerwise = layerwise_problem(file, optim, value_or_default(dist, "distributed.num_processes"), machines)
        if layerwise is not None:
            out.append(layerwise)

    fsdp, deepspeed = dist.get("fsdp"), dist.get("deepspeed")
    if strategy == "fsdp":
        out.extend(_rules_fsdp(file, fsdp if isinstance(fsdp, dict) else {}, training))
        alone = fsdp_world_problem(file, dist) if accelerator in ("auto", "cuda") else None  # else refused above
        if alone is not None:
            out.append(alone)
    if strategy == "deepspeed":
        out.extend(_rules_deepspeed(file, deepspeed if isinstance(deepspeed, dict) else {}, training, mixed, base_dir))
    return out


def _rules_fsdp(file: str, fsdp: Mapping[str, Any], training: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []

    def setting(dotted: SettingKey) -> Any:
        return value_or_default(fsdp, dotted)

    version = setting("distributed.fsdp.version")
    sharding = setting("distributed.fsdp.sharding_strategy")
    if version == 2:
        if sharding not in ("full_shard", "shard_grad_op"):
            out.append(Problem(file, "distributed.fsdp.sharding_strategy",
                               f"{toml_literal(sharding)} is not available with FSDP2 (version = 2), which shards "
                               "fully or keeps parameters gathered after forward",
                               'use "full_shard" or "shard_grad_op", or set distributed.fsdp.version = 1'))
        if setting("distributed.fsdp.forward_prefetch"):
            out.append(Problem(file, "distributed.fsdp.forward_prefetch", "is not implemented in FSDP2 (version = 2)",
                               "set forward_prefetch = false, or distributed.fsdp.version = 1"))
        if setting("distributed.fsdp.state_dict_type") == "local":
            out.append(Problem(file, "distributed.fsdp.state_dict_type", '"local" is not available with FSDP2',
                               'use "sharded" or "full"'))
        for leaf in ("backward_prefetch", "sync_module_states", "use_orig_params"):
            if leaf in fsdp:
                out.append(Problem(file, f"distributed.fsdp.{leaf}", "ignored by FSDP2 (version = 2)",
                                   "remove it", severity="warning"))
    elif setting("distributed.fsdp.cpu_ram_efficient_loading") and not setting("distributed.fsdp.sync_module_states"):
        out.append(Problem(file, "distributed.fsdp.sync_module_states",
                           "must be true with cpu_ram_efficient_loading (the other ranks get rank 0's weights by it)",
                           "set sync_module_states = true, or cpu_ram_efficient_loading = false"))
    policy = setting("distributed.fsdp.auto_wrap_policy")
    if policy != "transformer" and "transformer_layer_cls_to_wrap" in fsdp:
        out.append(Problem(file, "distributed.fsdp.transformer_layer_cls_to_wrap",
                           f"ignored with auto_wrap_policy = {toml_literal(policy)}",
                           'set auto_wrap_policy = "transformer" to use it', severity="warning"))
    if policy != "size" and "min_num_params" in fsdp:
        out.append(Problem(file, "distributed.fsdp.min_num_params", f"ignored with auto_wrap_policy = {toml_literal(policy)}",
                           'set auto_wrap_policy = "size" to use it', severity="warning"))
    if setting("distributed.fsdp.activation_checkpointing"):
        for leaf in ("activation_checkpointing", "gradient_checkpointing"):
            if value_of(training, leaf, "bool", False):
                out.append(Problem(file, f"training.{leaf}",
                                   "both this and distributed.fsdp.activation_checkpointing are on "
                                   "(transformers refuses both; FSDP's own is the one to use with FSDP)",
                                   f"remove training.{leaf}"))
    return out


def _rules_deepspeed(file: str, ds: Mapping[str, Any], training: Mapping[str, Any], mixed: str,
                     base_dir: Path | None) -> list[Problem]:
    out: list[Problem] = []
    config_file = value_or_default(ds, "distributed.deepspeed.config_file")
    if config_file is not None:
        for leaf in DEEPSPEED_PLUGIN_KEYS:
            if leaf in ds:
                out.append(Problem(file, f"distributed.deepspeed.{leaf}",
                                   "given together with config_file: accelerate refuses plugin fields next to a "
                                   "DeepSpeed JSON", f"set it in {config_file} instead (or use \"auto\" there), "
                                   "or remove config_file"))
    else:
        stage = value_or_default(ds, "distributed.deepspeed.zero_stage")
        offloads: tuple[tuple[SettingKey, str], ...] = (
            ("distributed.deepspeed.offload_optimizer_device", "offload_optimizer_nvme_path"),
            ("distributed.deepspeed.offload_param_device", "offload_param_nvme_path"))
        for device, path_key in offloads:
            device_key = device.rsplit(".", 1)[-1]
            if value_or_default(ds, device) == "nvme" and not value_of(ds, path_key, "str"):
                out.append(Problem(file, f"distributed.deepspeed.{path_key}", f'needed with {device_key} = "nvme"',
                                   f'e.g. {path_key} = "/local_nvme"'))
        if value_or_default(ds, "distributed.deepspeed.offload_param_device") != "none" and stage != 3:
            out.append(Problem(file, "distributed.deepspeed.offload_param_device",
                               f"parameter offload needs zero_stage = 3 (it is {stage})",
                               "set zero_stage = 3, or offload_param_device = \"none\"", severity="warning"))
        for leaf in ("zero3_init", "zero3_save_16bit_model"):
            if value_of(ds, leaf, "bool", False) and stage != 3:
                out.append(Problem(file, f"distributed.deepspeed.{leaf}", f"only acts with zero_stage = 3 (it is {stage})",
                                   "remove it, or set zero_stage = 3", severity="note"))

    # What DeepSpeed will be told, from the plugin fields or the JSON; transformers checks each
    # against TrainingArguments at start and fails the run on a mismatch.
    source, where = dict(ds), "distributed.deepspeed"
    if config_file is not None:
        loaded, why = read_deepspeed_json(resolve_path(config_file, base_dir))
        if why:
            out.append(Problem(file, "distributed.deepspeed.config_file", why, "give a DeepSpeed JSON config file"))
        source, where = (loaded or {}), "distributed.deepspeed.config_file"
    pairs = (("gradient_accumulation_steps", "gradient_accumulation_steps", 1),
             ("gradient_clipping", "max_grad_norm", 1.0))
    for ds_key, train_key, default in pairs:
        ds_value = source.get(ds_key)
        if ds_value is None or ds_value == "auto" or not is_kind(ds_value, "float"):
            continue
        given = train_key in training
        train_value = value_of(training, train_key, "float", default)
        if float(ds_value) != float(train_value):
            said = "" if given else " (its default)"
            shown = f"{config_file}'s {ds_key} is" if config_file is not None else "is"
            out.append(Problem(file, f"{where}.{ds_key}" if config_file is None else where,
                               f"{shown} {toml_literal(ds_value)} but training.{train_key} is "
                               f"{toml_literal(train_value)}{said}; transformers stops the run on the mismatch",
                               f"set training.{train_key} = {toml_literal(ds_value)}, or "
                               + (f"remove {where}.{ds_key} (DeepSpeed then takes \"auto\")" if config_file is None
                                  else f'write "auto" for {ds_key} in {config_file}')))
    if config_file is not None:
        for precision in ("fp16", "bf16"):
            enabled = _ds_value(source, f"{precision}.enabled")
            if isinstance(enabled, bool) and enabled != (mixed == precision):
                out.append(Problem(file, "hardware.mixed_precision",
                                   f"{config_file} has {precision}.enabled = {toml_literal(enabled)} but "
                                   f"the run's mixed precision is {toml_literal(mixed)}",
                                   f'set hardware.mixed_precision = "{precision if enabled else "no"}", '
                                   f'or write "auto" for {precision}.enabled in {config_file}'))
    return out

