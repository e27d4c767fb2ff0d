"""Which field of the editor's form a profile key gets: its kind (choice, bool, a number, text or a
TOML literal), choices, default and help, from the schema, or for [training] from the installed
TrainingArguments."""

from __future__ import annotations

from typing import Any

from tuitrain.profile.schema import KeySpec
from tuitrain.tui.fields import FieldDef

# [training] keys shown as fields (their kinds and choices come from the installed TrainingArguments);
# any other key of the file's [training] is a raw key/value row.
TRAINING_FIELDS = (
    "max_steps", "num_train_epochs", "per_device_train_batch_size", "per_device_eval_batch_size",
    "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay",
    "optim", "max_grad_norm", "logging_steps", "eval_strategy", "eval_steps", "save_strategy", "save_steps",
    "save_total_limit", "load_best_model_at_end", "metric_for_best_model", "greater_is_better",
    "gradient_checkpointing", "report_to", "dataloader_num_workers",
)
FALLBACK_CHOICES = {
    "eval_strategy": ("no", "steps", "epoch"),
    "save_strategy": ("no", "steps", "epoch", "best"),
    "lr_scheduler_type": ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
                          "constant_with_warmup", "inverse_sqrt", "reduce_lr_on_plateau"),
    "optim": ("adamw_torch", "adamw_torch_fused", "adafactor", "sgd", "adagrad"),
}


def field_for(path: tuple[str, ...], spec: KeySpec) -> FieldDef:
    if spec.choices and spec.kind in ("str", "int"):
        kind = "choice"
    elif spec.kind == "bool":
        kind = "bool"
    elif spec.kind in ("int", "float", "str", "list[str]", "list[float]"):
        kind = spec.kind
    else:
        kind = "literal"
    return FieldDef(path, kind, spec.choices, spec.default, spec.doc or (spec.example or ""))


def training_field(key: str, specs: dict[str, Any] | None) -> FieldDef:
    spec = (specs or {}).get(key)
    if spec is None:
        choices = FALLBACK_CHOICES.get(key)
        return FieldDef(("training", key), "choice" if choices else "literal", choices)
    base = spec.base_type
    if spec.choices and base == "str":
        kind = "choice"
    elif base == "bool":
        kind = "bool"
    elif base in ("int", "float", "str"):
        kind = base
    else:
        kind = "literal"
    return FieldDef(("training", key), kind, tuple(spec.choices) if spec.choices else None, spec.default,
                    (spec.help or "").split(". ")[0][:200])
