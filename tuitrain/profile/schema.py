"""The shape of a profile: sections, keys, types, defaults, choices and ranges, as data.

shape.py and rules/ check against these tables; `settings_with_defaults` fills them in. [training] is
not described here: its keys are the installed TrainingArguments' (see training_args.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .problems import Problem
from .settings import Settings

TASKS = ("sequence-classification", "causal-lm", "token-classification", "seq2seq")
# Each built-in generated data set, and the tasks its columns serve.
GENERATOR_TASKS: dict[str, tuple[str, ...]] = {
    "sentiment-words": ("sequence-classification", "causal-lm"),
    "word-tags": ("token-classification",),
    "reverse-words": ("seq2seq",),
}
GENERATORS = tuple(GENERATOR_TASKS)
DATA_FILE_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}
# Each metric a profile may name, and the tasks it applies to.
METRIC_TASKS: dict[str, tuple[str, ...]] = {
    "accuracy": ("sequence-classification", "causal-lm"),
    "f1": ("sequence-classification",),
    "precision": ("sequence-classification",),
    "recall": ("sequence-classification",),
    "matthews_correlation": ("sequence-classification",),
    "perplexity": ("causal-lm", "seq2seq"),
    "seqeval": ("token-classification",),
    "rouge": ("seq2seq",),
    "bleu": ("seq2seq",),
}
METRICS = tuple(METRIC_TASKS)
DEFAULT_METRICS = {"sequence-classification": ["accuracy"], "causal-lm": ["perplexity"],
                   "token-classification": ["seqeval"], "seq2seq": ["rouge", "bleu"]}
# The packages a metric's local evaluate module wraps (the `tasks` extra), by import name and pip name.
METRIC_PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "seqeval": (("seqeval", "seqeval"),),
    "rouge": (("rouge_score", "rouge-score"),),
    "bleu": (("sacrebleu", "sacrebleu"),),
}
# [data] defaults that depend on the task (the column names its usual data sets use).
TASK_DATA_DEFAULTS: dict[str, dict[str, Any]] = {
    "token-classification": {"text_column": "tokens", "label_column": "tags"},
    "seq2seq": {"text_column": "source"},
}
LOG_LEVELS = ("debug", "info", "warning", "error", "critical", "passive")
RESUME_ARG = "--resume_from_checkpoint"
# The sections [script] replaces: the script builds its own model, data and TrainingArguments.
ENGINE_SECTIONS = ("model", "data", "training", "metrics")


@dataclass(frozen=True)
class KeySpec:
    """One key of a section.

    kind: "str" | "int" | "float" | "bool" | "list[float]" | "list[str]" | "gpus" | "gpus|count" | "dict".
    default: the value when absent; None means optional (absent stays absent in the file, and
    `settings_with_defaults` puts None there). `min`/`max` are inclusive unless `min_exclusive`.
    """

    kind: str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    example: str | None = None
    doc: str = ""


@dataclass(frozen=True)
class TableSpec:
    """A sub-table: `keys` describes it; `free` means any keys are accepted (checked elsewhere)."""

    keys: dict[str, KeySpec] = field(default_factory=dict)
    free: bool = False
    doc: str = ""


@dataclass(frozen=True)
class TableListSpec:
    """An array of tables (`[[distributed.machines]]`): each item has `keys`; `required` must be in every item."""

    keys: dict[str, KeySpec] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    doc: str = ""


Section = dict[str, "KeySpec | TableSpec | TableListSpec"]

STRATEGIES = ("single", "ddp", "fsdp", "deepspeed")
QUANTIZE = ("nf4", "fp4", "int8")  # [model.lora].quantize: bitsandbytes' 4-bit types and its 8-bit
MIXED_PRECISIONS = ("no", "fp16", "bf16")
FSDP_SHARDING = ("full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "hybrid_shard_zero2")
FSDP_WRAP = ("transformer", "size", "none")
FSDP_PREFETCH = ("backward_pre", "backward_post", "none")
FSDP_STATE_DICT = ("sharded", "full", "local")
OFFLOAD_DEVICES = ("none", "cpu", "nvme")

# [distributed.fsdp]: keys named as accelerate's fsdp_config keys without the "fsdp_" prefix
# (launch/accelerate_export.py writes them, profile/accelerate_import.py reads them).
FSDP_KEYS: dict[str, KeySpec] = {
    "version": KeySpec("int", 1, choices=(1, 2), doc="1: FullyShardedDataParallel; 2: FSDP2 (fully_shard, "
                       "per-parameter sharding)"),
    "sharding_strategy": KeySpec("str", "full_shard", choices=FSDP_SHARDING,
                                 doc="full_shard: params, grads and optimizer state; shard_grad_op: grads and "
                                     "optimizer state; no_shard: like DDP; hybrid_shard / hybrid_shard_zero2: "
                                     "full_shard / shard_grad_op within a machine, replicated across machines"),
    "auto_wrap_policy": KeySpec("str", "transformer", choices=FSDP_WRAP,
                                doc="transformer: wrap each layer class; size: wrap blocks of min_num_params; "
                                    "none: one unit"),
    "transformer_layer_cls_to_wrap": KeySpec("list[str]", example='transformer_layer_cls_to_wrap = ["BertLayer"]',
                                             doc="layer classes to wrap (absent: the model's _no_split_modules, "
                                                 "read in each rank)"),
    "min_num_params": KeySpec("int", 100_000_000, min=1, doc="size policy: parameters per wrapped block"),
    "backward_prefetch": KeySpec("str", "backward_pre", choices=FSDP_PREFETCH,
                                 doc="fetch the next parameters during backward (backward_pre: more memory, "
                                     "faster); FSDP1 only"),
    "forward_prefetch": KeySpec("bool", False, doc="fetch the next layer's parameters during forward; FSDP1 only"),
    "offload_params": KeySpec("bool", False, doc="keep parameters and gradients in CPU memory (slower, "
                              "much less GPU memory)"),
    "state_dict_type": KeySpec("str", "sharded", choices=FSDP_STATE_DICT,
                               doc="checkpoints: sharded (each rank its shard, fast) or full (gathered on rank 0)"),
    "sync_module_states": KeySpec("bool", True, doc="broadcast rank 0's weights at start (needed with "
                                  "cpu_ram_efficient_loading); FSDP1 only"),
    "use_orig_params": KeySpec("bool", True, doc="keep the original parameters (needed for frozen "
                               "parameters, torch.compile); FSDP1 only"),
    "cpu_ram_efficient_loading": KeySpec("bool", True, doc="load pretrained weights on rank 0 only and "
                                         "broadcast them (needs sync_module_states)"),
    "activation_checkpointing": KeySpec("bool", False, doc="recompute activations in backward: less memory, "
                                        "~20% slower (instead of training.gradient_checkpointing)"),
}

# [distributed.deepspeed]: either config_file (a DeepSpeed JSON) or the plugin fields.
DEEPSPEED_PLUGIN_KEYS = ("zero_stage", "offload_optimizer_device", "offload_param_device",
                         "offload_optimizer_nvme_path", "offload_param_nvme_path",
                         "gradient_accumulation_steps", "gradient_clipping", "zero3_save_16bit_model")
DEEPSPEED_KEYS: dict[str, KeySpec] = {
    "config_file": KeySpec("str", example='config_file = "ds_zero3.json"',
                           doc="a DeepSpeed JSON config (relative to the profile's folder); replaces the fields below"),
    "zero_stage": KeySpec("int", 2, choices=(0, 1, 2, 3),
                          doc="ZeRO stage: 1 optimizer state, 2 + gradients, 3 + parameters sharded; 0 off"),
    "offload_optimizer_device": KeySpec("str", "none", choices=OFFLOAD_DEVICES,
                                        doc="where optimizer state lives (cpu/nvme: stage 2 or 3)"),
    "offload_param_device": KeySpec("str", "none", choices=OFFLOAD_DEVICES,
                                    doc="where parameters live (cpu/nvme: stage 3)"),
    "offload_optimizer_nvme_path": KeySpec("str", doc="folder for optimizer offload to nvme"),
    "offload_param_nvme_path": KeySpec("str", doc="folder for parameter offload to nvme"),
    "gradient_accumulation_steps": KeySpec("int", min=1, doc='absent: "auto" (training.gradient_accumulation_steps)'),
    "gradient_clipping": KeySpec("float", min=0, doc='absent: "auto" (training.max_grad_norm)'),
    "zero3_init": KeySpec("bool", doc="build the model already partitioned (zero.Init); absent: on with "
                          "zero_stage = 3"),
    "zero3_save_16bit_model": KeySpec("bool", False, doc="stage 3: also save a gathered 16-bit model"),
}

# [model.lora]: LoRA adapters through peft (peft's LoraConfig names: r, lora_alpha, lora_dropout, target_modules).
LORA_KEYS: dict[str, KeySpec] = {
    "r": KeySpec("int", 8, min=1, doc="the adapters' rank"),
    "alpha": KeySpec("float", 16.0, min=0, min_exclusive=True, doc="scaling: the update is multiplied by alpha / r"),
    "dropout": KeySpec("float", 0.0, min=0, max=0.99, doc="dropout on the adapters' input"),
    "target_modules": KeySpec("list[str]", example='target_modules = ["c_attn"]',
                              doc="the layers to adapt, by name (absent: peft's default for the model type); "
                                  "checked against the model's layers when a rank starts"),
    "quantize": KeySpec("str", choices=QUANTIZE, example='quantize = "nf4"',
                        doc="QLoRA: load the frozen base quantized through bitsandbytes (nf4, fp4: 4-bit; int8: "
                            "8-bit); absent: full precision; needs tuitrain[qlora]"),
    "double_quant": KeySpec("bool", True, doc="nf4/fp4: quantize the quantization constants too (QLoRA's "
                            "double quantization, ~0.4 bit a weight saved)"),
}

# [[distributed.machines]]: one table per machine, the first being the main machine (rank 0).
MACHINE_KEYS: dict[str, KeySpec] = {
    "host": KeySpec("str", example='host = "node1"',
                    doc="an SSH destination as `ssh` understands it: a ~/.ssh/config alias, user@host, an address"),
    "python": KeySpec("str", example='python = "/opt/envs/train/bin/python"',
                      doc="the Python of the environment tuitrain is installed in there (absent: the same path "
                          "as here)"),
    "workdir": KeySpec("str", example='workdir = "/home/me/project"',
                       doc="the folder to run in there (absent: the current folder here)"),
    "gpus": KeySpec("gpus", example="gpus = [0, 1]",
                    doc="that machine's GPUs by NVML index or UUID (absent: all of them)"),
    "num_processes": KeySpec("int", min=1, max=4096,
                             doc="processes on that machine (absent: distributed.num_processes, or one per listed GPU)"),
    "network_interface": KeySpec("str", example='network_interface = "eth1"',
                                 doc="this machine's interface toward the others, when it differs from "
                                     "distributed.network_interface"),
}

# Names from accelerate's config file, torchrun or transformers' fsdp_config for settings a
# profile spells otherwise: table -> name -> (where it lives, as the fix shows it; why). A None
# home means tuitrain has no such setting.
FOREIGN_KEYS: dict[str, dict[str, tuple[str | None, str]]] = {
    "hardware": {
        "gpu_ids": ("'gpus'", "accelerate's gpu_ids; e.g. gpus = [0, 1]"),
        "use_cpu": ('accelerator = "cpu"', "accelerate's use_cpu"),
    },
    "distributed": {
        "gpu_ids": ("hardware.gpus", "accelerate's gpu_ids; e.g. [hardware] gpus = [0, 1]"),
        "use_cpu": ('hardware.accelerator = "cpu"', "accelerate's use_cpu"),
        "distributed_type": ("distributed.strategy",
                             'accelerate\'s distributed_type; strategy = "single", "ddp", "fsdp" or "deepspeed"'),
        "fsdp_config": ("the [distributed.fsdp] table",
                        'with distributed.strategy = "fsdp"; its keys drop the fsdp_ prefix'),
        "deepspeed_config": ("the [distributed.deepspeed] table", 'with distributed.strategy = "deepspeed"'),
        "nproc_per_node": ("distributed.num_processes", "torchrun's --nproc_per_node"),
        "nnodes": ("distributed.num_machines", "torchrun's --nnodes"),
        "node_rank": ("distributed.machine_rank", "torchrun's --node_rank"),
        "master_addr": ("distributed.main_process_ip", "torchrun's --master_addr"),
        "master_port": ("distributed.main_process_port", "torchrun's --master_port"),
    },
    "distributed.fsdp": {
        "cpu_offload": ("'offload_params'", "the older accelerate / transformers name"),
        "backward_prefetch_policy": ("'backward_prefetch'", "the name in the Trainer docs' FSDP example"),
        "reshard_after_forward": ("'sharding_strategy'", ('FSDP2 reshards after forward with "full_shard", '
                                                          'not with "shard_grad_op"')),
        "limit_all_gathers": (None, "accelerate launch has none either; FSDP runs with accelerate's default, true"),
        **dict.fromkeys(("xla", "xla_fsdp_settings", "xla_fsdp_grad_ckpt", "xla_fsdp_v2"),
                        (None, "PyTorch/XLA FSDP runs on TPUs, which tuitrain does not support")),
    },
    "distributed.deepspeed": {
        "zero3_init_flag": ("'zero3_init'", "accelerate's name"),
        "zero_optimization": ("'zero_stage'", ("zero_optimization is a DeepSpeed JSON section; a whole JSON goes "
                                               "in a file named by config_file")),
        "fp16": ("hardware.mixed_precision", 'e.g. [hardware] mixed_precision = "fp16"'),
        "bf16": ("hardware.mixed_precision", 'e.g. [hardware] mixed_precision = "bf16"'),
        "train_micro_batch_size_per_gpu": ("training.per_device_train_batch_size", "DeepSpeed's name"),
    },
}
# The prefix accelerate puts on every key of a table that a profile writes without it.
FOREIGN_PREFIXES: dict[str, str] = {"distributed.fsdp": "fsdp_", "distributed.deepspeed": "deepspeed_"}

SCHEMA: dict[str, Section] = {
    "run": {
        "name": KeySpec("str", doc="run name (default: the profile file's stem)", example='name = "my-run"'),
        "output_dir": KeySpec("str", "", doc='checkpoints folder ("" = the run directory\'s output/)'),
        "seed": KeySpec("int", 42, min=0),
        "hang_after": KeySpec("float", min=0, min_exclusive=True, example="hang_after = 300",
                              doc="seconds a training step may go without progress before the run is marked hung? "
                                  "(absent: learned, 10x the recent step time, at least 60; evaluation, saving "
                                  "and start-up get at least 600)"),
        "queue": KeySpec("bool", False,
                         doc="always queue it: run and the app's Launch wait for its GPUs to be free, as run --queue "
                             "(--set run.queue=false starts it at once)"),
        "on_hang": KeySpec("str", "notify", choices=("notify", "stop", "kill", "restart"),
                           doc="a hung run: notify marks it and takes its stacks; stop saves if the ranks can still "
                               "agree, else ends it as failed (hung); kill ends it at once; restart ends it and "
                               "starts it again from its latest complete checkpoint (needs run.restarts)"),
        "restarts": KeySpec("int", 0, min=0, example="restarts = 3",
                            doc="how many times a run whose rank crashed (or whose NCCL timed out, or that hung with "
                                "on_hang = \"restart\") is started again, on every machine, from its latest complete "
                                "checkpoint; a stop, a cause that would fail again (a missing file, a bad key) and a "
                                "restart without a new checkpoint since the last one end it"),
        "restart_backoff": KeySpec("float", 10.0, min=0, example="restart_backoff = 30",
                                   doc="seconds before the first restart; each later one waits twice as long as the "
                                       "one before, up to run.restart_backoff_max"),
        "restart_backoff_max": KeySpec("float", 600.0, min=0, doc="the longest wait before a restart, in seconds"),
        "on_oom": KeySpec("str", "fail", choices=("fail", "split_batch"),
                          doc="a rank's CUDA out-of-memory: fail ends the run; split_batch starts it again from its "
                              "latest complete checkpoint with per_device_train_batch_size divided by its smallest "
                              "factor (halved when even) and gradient_accumulation_steps multiplied by it, so the "
                              "effective batch and the steps are unchanged, down to a batch of 1"),
    },
    "model": {
        "task": KeySpec("str", "sequence-classification", choices=TASKS),
        "name_or_path": KeySpec("str", "", doc="a local folder or a Hub model id"),
        "tokenizer": KeySpec("str", "", doc='tokenizer folder or Hub id ("" = same as name_or_path)'),
        "num_labels": KeySpec("int", 2, min=1),
        "labels": KeySpec("list[str]", example='labels = ["O", "B-PER", "I-PER"]',
                          doc="token-classification: the tag names in class id order (absent: the generated set's, "
                              "or the tags found in the data, \"O\" first)"),
        "class_weights": KeySpec("list[float]", min=0, example="class_weights = [1.0, 2.0]"),
        "trust_remote_code": KeySpec("bool", False),
        "config": TableSpec(free=True, doc="a transformers config for a model trained from scratch"),
        "train_tokenizer": TableSpec(
            keys={
                "vocab_size": KeySpec("int", 1000, min=16),
                "kind": KeySpec("str", "wordlevel", choices=("wordlevel", "wordpiece")),
                "lowercase": KeySpec("bool", True),
            },
            doc="a tokenizer trained on the training text",
        ),
        "lora": TableSpec(keys=LORA_KEYS, doc="train LoRA adapters (peft) instead of the whole model: "
                          "checkpoints hold the adapter; `tuitrain export` merges it into a full model"),
    },
    "data": {
        "generate": KeySpec("str", choices=GENERATORS, doc="a built-in generated data set"),
        "num_train": KeySpec("int", 2000, min=1),
        "num_validation": KeySpec("int", 200, min=1),
        "dataset": KeySpec("str", doc="a Hub data set name"),
        "dataset_config": KeySpec("str"),
        "train_file": KeySpec("str", example='train_file = "data/train.csv"'),
        "validation_file": KeySpec("str", example='validation_file = "data/validation.csv"'),
        "train_split": KeySpec("str", "train"),
        "validation_split": KeySpec("str", "validation"),
        "text_column": KeySpec("str", "text", doc="the text (token-classification: the words, default \"tokens\"; "
                               "seq2seq: the input, default \"source\")"),
        "text_pair_column": KeySpec("str"),
        "label_column": KeySpec("str", "label", doc="the label (token-classification: the tags, one per word; "
                                "default \"tags\")"),
        "target_column": KeySpec("str", "target", doc="seq2seq: the text to generate"),
        "max_target_length": KeySpec("int", 64, min=1, doc="seq2seq: target tokens kept (and generated at evaluation)"),
        "max_length": KeySpec("int", 128, min=1),
        "block_size": KeySpec("int", 128, min=1),
    },
    "training": {},  # TrainingArguments keys; see training_args.py
    "metrics": {
        "names": KeySpec("list[str]", choices=METRICS, example='names = ["accuracy", "f1"]'),
        "early_stopping_patience": KeySpec("int", min=1),
        "early_stopping_threshold": KeySpec("float", 0.0, min=0),
    },
    "hardware": {
        "accelerator": KeySpec("str", "auto", choices=("auto", "cuda", "mps", "cpu")),
        # "gpus|count": a list (shape.py's "gpus" checks) or a count; rules/hardware.py checks both
        "gpus": KeySpec("gpus|count", doc="NVML indices or GPU UUIDs (absent = all visible), or a number N: any N "
                        "free GPUs, chosen when the run starts", example='gpus = [0, 1]'),
        "min_free_memory": KeySpec("str", doc='memory each GPU must have free for the run to start on it (a queued '
                                   'run waits for it), e.g. "20GiB": small runs share a big GPU',
                                   example='min_free_memory = "20GiB"'),
        "device_order": KeySpec("str", "PCI_BUS_ID", choices=("PCI_BUS_ID", "FASTEST_FIRST")),
        "mps_fallback": KeySpec("bool", False),
        "mixed_precision": KeySpec("str", "no", choices=MIXED_PRECISIONS,
                                   doc='"bf16" (Ampere GPUs or newer; CPUs with AVX512-BF16/AMX), "fp16" (GPUs only), or "no"'),
        "cpu_threads_per_process": KeySpec("int", min=1, max=1024,
                                           doc="OMP_NUM_THREADS of each process (absent: the machine's physical cores "
                                               "divided by its processes)", example="cpu_threads_per_process = 4"),
    },
    "distributed": {
        "strategy": KeySpec("str", "single", choices=STRATEGIES,
                            doc="single: one device; ddp: a model copy per process; fsdp: parameters sharded "
                                "across GPUs; deepspeed: ZeRO sharding and offload"),
        "num_processes": KeySpec("int", 1, min=1, max=4096,
                                 doc="processes per machine (absent: one per selected GPU for ddp/fsdp/deepspeed on "
                                     "NVIDIA GPUs, else 1; CPU ranks use gloo)"),
        "num_machines": KeySpec("int", 1, min=1, max=65536, doc="machines taking part (each runs num_processes)"),
        "machine_rank": KeySpec("int", 0, min=0, max=65535, doc="this machine's rank, 0 to num_machines - 1 (0 hosts the rendezvous)"),
        "main_process_ip": KeySpec("str", doc="address of machine 0 (needed with num_machines > 1)",
                                   example='main_process_ip = "10.0.0.1"'),
        "main_process_port": KeySpec("int", min=1, max=65535, doc="one machine: absent = a free port picked at launch; "
                                     "several machines: required (they all meet there), e.g. 29500"),
        "rdzv_backend": KeySpec("str", "static", choices=("static", "c10d"),
                                doc="static: fixed ranks; c10d: torch elastic rendezvous"),
        "same_network": KeySpec("bool", True, doc="all machines on one network (false: rendezvous through "
                                "main_process_ip:port as an endpoint)"),
        "downcast_bf16": KeySpec("bool", False, doc="TPU only: keep fp32 tensors as fp32 under bf16"),
        "network_interface": KeySpec("str", example='network_interface = "eth1"',
                                     doc="the exact network interface the ranks talk over (sets GLOO_SOCKET_IFNAME "
                                         "and NCCL_SOCKET_IFNAME), so a machine with several cannot pick the wrong one"),
        "machines": TableListSpec(keys=MACHINE_KEYS, required=("host",),
                                  doc="[[distributed.machines]]: one table per machine, started over SSH; the "
                                      "first is the main machine (rank 0)"),
        "fsdp": TableSpec(keys=FSDP_KEYS, free=True,
                          doc="FSDP settings (checked when strategy = \"fsdp\")"),
        "deepspeed": TableSpec(keys=DEEPSPEED_KEYS, free=True,
                               doc="DeepSpeed settings (checked when strategy = \"deepspeed\")"),
    },
    "logging": {
        "log_level": KeySpec("str", "passive", choices=LOG_LEVELS),
        "log_level_replica": KeySpec("str", "warning", choices=LOG_LEVELS),
        "log_on_each_node": KeySpec("bool", True),
    },
    "script": {
        "path": KeySpec("str", example='path = "train.py"',
                        doc="your own training script (relative to the profile's folder), run on every rank instead "
                            "of tuitrain's engine"),
        "module": KeySpec("str", example='module = "pkg.train"', doc="or a module run as `python -m`"),
        "args": KeySpec("list[str]", [], example='args = ["--epochs", "3"]', doc="the script's own arguments"),
        "workdir": KeySpec("str", example='workdir = "."',
                           doc="the folder the script runs in (absent: the profile's folder)"),
        "resume_arg": KeySpec("str", RESUME_ARG, example=f'resume_arg = "{RESUME_ARG}"',
                              doc="how `tuitrain resume` hands the checkpoint to the script: this option, then "
                                  "the path (one argument when it ends with '=')"),
    },
}


@dataclass
class Profile:
    """A loaded profile.

    `data` is the parsed TOML after migrations and overrides, without defaults (saving it back
    writes what the user wrote); `notes` holds the warnings and notes found while loading.
    """

    path: Path | None
    data: dict[str, Any]
    notes: list[Problem] = field(default_factory=list)

    @property
    def name(self) -> str:
        run = self.data.get("run")
        if isinstance(run, dict) and isinstance(run.get("name"), str) and run["name"]:
            return run["name"]
        if self.path is not None:
            return Path(self.path).stem
        return "profile"


def data_default(task: str, leaf: str) -> Any:
    """A [data] key's default for a task."""
    spec = SCHEMA["data"][leaf]
    return TASK_DATA_DEFAULTS.get(task, {}).get(leaf, spec.default if isinstance(spec, KeySpec) else None)


def section_defaults(section: str, task: str = "sequence-classification") -> dict[str, Any]:
    """Defaults of one section's plain keys (optional keys -> None; sub-tables are left out)."""
    out: dict[str, Any] = {}
    for key, spec in SCHEMA.get(section, {}).items():
        if isinstance(spec, KeySpec):
            out[key] = copy.deepcopy(spec.default)
    if section == "metrics":
        out["names"] = list(DEFAULT_METRICS.get(task, ["accuracy"]))
    if section == "data":
        out.update(TASK_DATA_DEFAULTS.get(task, {}))
    return out


def settings_with_defaults(profile: Profile) -> Settings:
    """A new dict with every section and key present: defaults filled in, optional keys as None.

    [training] stays as written (TrainingArguments supplies its own defaults); sub-tables that
    are absent ([model.config], [model.train_tokenizer], [distributed.fsdp], ...) are None, and so
    is an empty or absent [[distributed.machines]] (listed machines also set num_machines when unset);
    [model.train_tokenizer] gets its defaults when present. [script] is None when absent (the engine
    trains). run.name is the profile's name.
    """
    data = copy.deepcopy(profile.data)
    given_model = data.get("model")
    model: dict[str, Any] = given_model if isinstance(given_model, dict) else {}
    task: str = model["task"] if model.get("task") in TASKS else "sequence-classification"
    out: dict[str, Any] = {}
    for section, spec in SCHEMA.items():
        given = data.get(section)
        given = given if isinstance(given, dict) else {}
        if section == "training":
            out[section] = given
            continue
        if section == "script" and not given:
            out[section] = None  # no [script]: tuitrain's engine trains
            continue
        filled = section_defaults(section, task)
        filled.update(given)
        for key, sub in spec.items():
            if isinstance(sub, TableSpec):
                table = given.get(key)
                if isinstance(table, dict):
                    filled[key] = {**{k: copy.deepcopy(s.default) for k, s in sub.keys.items()}, **table}
                else:
                    filled[key] = None
            elif isinstance(sub, TableListSpec):
                items = given.get(key)
                filled[key] = copy.deepcopy(items) if isinstance(items, list) and items else None
        if section == "distributed" and filled.get("machines") and "num_machines" not in given:
            filled["num_machines"] = len(filled["machines"])  # the machines listed are the machines taking part
        out[section] = filled
    out["run"]["name"] = profile.name
    for section, value in data.items():  # unknown sections pass through untouched
        out.setdefault(section, value)
    return cast(Settings, out)

