"""The settings a run is planned and trained from, typed: a profile with its defaults filled in
(`schema.settings_with_defaults`), one `TypedDict` per section and sub-table, so mypy checks every key a reader
names. SCHEMA (schema.py) is the one source of the keys; tests/test_settings_types.py fails when these and SCHEMA
differ by a key, either way.

total=False as `rundir.record.RunRecord`: a profile with defaults has every key (an optional one as None), but
partial settings (a machine's arrival, a test's) may lack some. [training] stays `dict[str, Any]`: its keys are
the installed TrainingArguments' (training_args.py), an open set. Sub-tables accept keys SCHEMA does not name
(`free`: [model.config], foreign [distributed.fsdp] keys, each checked by the rules): only the declared keys are
read here. Unknown sections pass through `settings_with_defaults` untyped.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class RunSettings(TypedDict, total=False):
    name: str
    output_dir: str
    seed: int
    hang_after: float | None
    queue: bool
    on_hang: str
    restarts: int
    restart_backoff: float
    restart_backoff_max: float
    on_oom: str


class TrainTokenizerSettings(TypedDict, total=False):
    vocab_size: int
    kind: str
    lowercase: bool


class LoraSettings(TypedDict, total=False):
    r: int
    alpha: float
    dropout: float
    target_modules: list[str] | None
    quantize: str | None
    double_quant: bool


class ModelSettings(TypedDict, total=False):
    task: str
    name_or_path: str
    tokenizer: str
    num_labels: int
    labels: list[str] | None
    class_weights: list[float] | None
    trust_remote_code: bool
    config: dict[str, Any] | None  # free: a transformers config
    train_tokenizer: TrainTokenizerSettings | None
    lora: LoraSettings | None


class DataSettings(TypedDict, total=False):
    generate: str | None
    num_train: int
    num_validation: int
    dataset: str | None
    dataset_config: str | None
    train_file: str | None
    validation_file: str | None
    train_split: str
    validation_split: str
    text_column: str
    text_pair_column: str | None
    label_column: str
    target_column: str
    max_target_length: int
    max_length: int
    block_size: int


class MetricsSettings(TypedDict, total=False):
    names: list[str]  # with defaults: the task's (schema.DEFAULT_METRICS) when absent
    early_stopping_patience: int | None
    early_stopping_threshold: float


GpuSelection = list[int | str]  # NVML indices or GPU UUIDs


class HardwareSettings(TypedDict, total=False):
    accelerator: str
    gpus: GpuSelection | int | None  # a list, a count of any free GPUs, or None: all
    min_free_memory: str | None
    device_order: str
    mps_fallback: bool
    mixed_precision: str
    cpu_threads_per_process: int | None


class MachineSettings(TypedDict, total=False):
    """One [[distributed.machines]] table, as written (no defaults are filled in)."""

    host: str
    python: str | None
    workdir: str | None
    gpus: GpuSelection | None
    num_processes: int | None
    network_interface: str | None


class FsdpSettings(TypedDict, total=False):
    version: int
    sharding_strategy: str
    auto_wrap_policy: str
    transformer_layer_cls_to_wrap: list[str] | None
    min_num_params: int
    backward_prefetch: str
    forward_prefetch: bool
    offload_params: bool
    state_dict_type: str
    sync_module_states: bool
    use_orig_params: bool
    cpu_ram_efficient_loading: bool
    activation_checkpointing: bool


class DeepspeedSettings(TypedDict, total=False):
    config_file: str | None
    zero_stage: int
    offload_optimizer_device: str
    offload_param_device: str
    offload_optimizer_nvme_path: str | None
    offload_param_nvme_path: str | None
    gradient_accumulation_steps: int | None
    gradient_clipping: float | None
    zero3_init: bool | None
    zero3_save_16bit_model: bool


class DistributedSettings(TypedDict, total=False):
    strategy: str
    num_processes: int
    num_machines: int
    machine_rank: int
    main_process_ip: str | None
    main_process_port: int | None
    rdzv_backend: str
    same_network: bool
    downcast_bf16: bool
    network_interface: str | None
    machines: list[MachineSettings] | None
    fsdp: FsdpSettings | None
    deepspeed: DeepspeedSettings | None


class LoggingSettings(TypedDict, total=False):
    log_level: str
    log_level_replica: str
    log_on_each_node: bool


class ScriptSettings(TypedDict, total=False):
    path: str | None
    module: str | None
    args: list[str]
    workdir: str | None
    resume_arg: str


class Settings(TypedDict, total=False):
    """A profile with defaults (`settings_with_defaults`): every section; [script] None when the engine trains."""

    run: RunSettings
    model: ModelSettings
    data: DataSettings
    training: dict[str, Any]  # TrainingArguments' keys, as written
    metrics: MetricsSettings
    hardware: HardwareSettings
    distributed: DistributedSettings
    logging: LoggingSettings
    script: ScriptSettings | None


# The profile's sections, and every plain key of them and of their sub-tables by its dotted name, as the rules
# name them (rules.common.table_of, value_or_default) over the profile as written: a misspelt name is a mypy error.
SectionName = Literal["run", "model", "data", "training", "metrics", "hardware", "distributed", "logging", "script"]
SettingKey = Literal[
    "run.name", "run.output_dir", "run.seed", "run.hang_after", "run.queue", "run.on_hang", "run.restarts",
    "run.restart_backoff", "run.restart_backoff_max", "run.on_oom", "model.task",
    "model.name_or_path", "model.tokenizer", "model.num_labels", "model.labels", "model.class_weights",
    "model.trust_remote_code", "model.train_tokenizer.vocab_size", "model.train_tokenizer.kind",
    "model.train_tokenizer.lowercase", "model.lora.r", "model.lora.alpha", "model.lora.dropout",
    "model.lora.target_modules", "model.lora.quantize", "model.lora.double_quant", "data.generate", "data.num_train",
    "data.num_validation", "data.dataset", "data.dataset_config", "data.train_file", "data.validation_file",
    "data.train_split", "data.validation_split", "data.text_column", "data.text_pair_column", "data.label_column",
    "data.target_column", "data.max_target_length", "data.max_length", "data.block_size", "metrics.names",
    "metrics.early_stopping_patience", "metrics.early_stopping_threshold", "hardware.accelerator", "hardware.gpus",
    "hardware.min_free_memory", "hardware.device_order", "hardware.mps_fallback", "hardware.mixed_precision",
    "hardware.cpu_threads_per_process", "distributed.strategy", "distributed.num_processes",
    "distributed.num_machines", "distributed.machine_rank", "distributed.main_process_ip",
    "distributed.main_process_port", "distributed.rdzv_backend", "distributed.same_network",
    "distributed.downcast_bf16", "distributed.network_interface", "distributed.fsdp.version",
    "distributed.fsdp.sharding_strategy", "distributed.fsdp.auto_wrap_policy",
    "distributed.fsdp.transformer_layer_cls_to_wrap", "distributed.fsdp.min_num_params",
    "distributed.fsdp.backward_prefetch", "distributed.fsdp.forward_prefetch", "distributed.fsdp.offload_params",
    "distributed.fsdp.state_dict_type", "distributed.fsdp.sync_module_states", "distributed.fsdp.use_orig_params",
    "distributed.fsdp.cpu_ram_efficient_loading", "distributed.fsdp.activation_checkpointing",
    "distributed.deepspeed.config_file", "distributed.deepspeed.zero_stage",
    "distributed.deepspeed.offload_optimizer_device", "distributed.deepspeed.offload_param_device",
    "distributed.deepspeed.offload_optimizer_nvme_path", "distributed.deepspeed.offload_param_nvme_path",
    "distributed.deepspeed.gradient_accumulation_steps", "distributed.deepspeed.gradient_clipping",
    "distributed.deepspeed.zero3_init", "distributed.deepspeed.zero3_save_16bit_model", "logging.log_level",
    "logging.log_level_replica", "logging.log_on_each_node", "script.path", "script.module", "script.args",
    "script.workdir", "script.resume_arg"
]
