"""The shape of a profile: sections, keys, types, defaults, choices and ranges, as data.

validate.py checks against these tables; `profile_with_defaults` fills them in. [training] is
not described here: its keys are the installed TrainingArguments' (see training_args.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .problems import Problem

TASKS = ("sequence-classification", "causal-lm")
GENERATORS = ("sentiment-words",)
DATA_FILE_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}
METRICS = ("accuracy", "f1", "precision", "recall", "matthews_correlation", "perplexity")
DEFAULT_METRICS = {"sequence-classification": ["accuracy"], "causal-lm": ["perplexity"]}
LOG_LEVELS = ("debug", "info", "warning", "error", "critical", "passive")


@dataclass(frozen=True)
class KeySpec:
    """One key of a section.

    kind: "str" | "int" | "float" | "bool" | "list[float]" | "list[str]" | "gpus" | "dict".
    default: the value when absent; None means optional (absent stays absent in the file, and
    `profile_with_defaults` puts None there). `min`/`max` are inclusive unless `min_exclusive`.
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


Section = dict[str, "KeySpec | TableSpec"]

SCHEMA: dict[str, Section] = {
    "run": {
        "name": KeySpec("str", doc="run name (default: the profile file's stem)", example='name = "my-run"'),
        "output_dir": KeySpec("str", "", doc='checkpoints folder ("" = the run directory\'s output/)'),
        "seed": KeySpec("int", 42, min=0),
    },
    "model": {
        "task": KeySpec("str", "sequence-classification", choices=TASKS),
        "name_or_path": KeySpec("str", "", doc="a local folder or a Hub model id"),
        "tokenizer": KeySpec("str", "", doc='tokenizer folder or Hub id ("" = same as name_or_path)'),
        "num_labels": KeySpec("int", 2, min=1),
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
        "text_column": KeySpec("str", "text"),
        "text_pair_column": KeySpec("str"),
        "label_column": KeySpec("str", "label"),
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
        "gpus": KeySpec("gpus", doc="NVML indices or GPU UUIDs (absent = all visible)",
                        example='gpus = [0, 1]'),
        "device_order": KeySpec("str", "PCI_BUS_ID", choices=("PCI_BUS_ID", "FASTEST_FIRST")),
        "mps_fallback": KeySpec("bool", False),
        "mixed_precision": KeySpec("str", "no", choices=("no", "fp16", "bf16")),
    },
    "distributed": {
        "strategy": KeySpec("str", "single", choices=("single", "ddp", "fsdp", "deepspeed")),
        "num_processes": KeySpec("int", 1, min=1),
        "num_machines": KeySpec("int", 1, min=1),
        "machine_rank": KeySpec("int", 0, min=0),
        "main_process_ip": KeySpec("str"),
        "main_process_port": KeySpec("int", min=1, max=65535, doc="absent = pick a free port"),
        "rdzv_backend": KeySpec("str", "static", choices=("static", "c10d")),
        "fsdp": TableSpec(free=True, doc="FSDP settings (schema to come)"),
        "deepspeed": TableSpec(free=True, doc="DeepSpeed settings (schema to come)"),
    },
    "logging": {
        "log_level": KeySpec("str", "passive", choices=LOG_LEVELS),
        "log_level_replica": KeySpec("str", "warning", choices=LOG_LEVELS),
        "log_on_each_node": KeySpec("bool", True),
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


def section_defaults(section: str, task: str = "sequence-classification") -> dict[str, Any]:
    """Defaults of one section's plain keys (optional keys -> None; sub-tables are left out)."""
    out: dict[str, Any] = {}
    for key, spec in SCHEMA.get(section, {}).items():
        if isinstance(spec, KeySpec):
            out[key] = copy.deepcopy(spec.default)
    if section == "metrics":
        out["names"] = list(DEFAULT_METRICS.get(task, ["accuracy"]))
    return out


def profile_with_defaults(profile: Profile) -> dict[str, Any]:
    """A new dict with every section and key present: defaults filled in, optional keys as None.

    [training] stays as written (TrainingArguments supplies its own defaults); sub-tables that
    are absent ([model.config], [model.train_tokenizer], [distributed.fsdp], ...) are None;
    [model.train_tokenizer] gets its defaults when present. run.name is the profile's name.
    """
    data = copy.deepcopy(profile.data)
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    task = model.get("task") if model.get("task") in TASKS else "sequence-classification"
    out: dict[str, Any] = {}
    for section, spec in SCHEMA.items():
        given = data.get(section)
        given = given if isinstance(given, dict) else {}
        if section == "training":
            out[section] = given
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
        out[section] = filled
    out["run"]["name"] = profile.name
    for section, value in data.items():  # unknown sections pass through untouched
        out.setdefault(section, value)
    return out
