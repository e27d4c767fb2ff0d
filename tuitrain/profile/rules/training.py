"""[training] between its keys and the others': a key given twice (here and as tuitrain's own), the best
model's strategies, evaluation without validation data, early stopping without evaluation, one precision."""

from __future__ import annotations

from typing import Any, Mapping

from ..implied import PRECISION_FLAGS
from ..problems import Problem
from ..settings import SettingKey
from ..training_args import FieldSpec
from ..values import toml_literal
from .common import section_of, table_of, value_of, value_or_default

# [training] keys that mirror a tuitrain key: both given with different values is an error.
TRAINING_MIRRORS: dict[str, SettingKey] = {
    "seed": "run.seed",
    "log_level": "logging.log_level",
    "log_level_replica": "logging.log_level_replica",
    "log_on_each_node": "logging.log_on_each_node",
}


def rules_training(file: str, data: Mapping[str, Any],
                   fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    out: list[Problem] = []
    training = table_of(data, "training")

    def setting(leaf: str, kind: str) -> Any:
        if leaf in training:
            return value_of(training, leaf, kind)
        spec = fields.get(leaf) if fields else None
        return spec.default if spec is not None else None

    for leaf, other in TRAINING_MIRRORS.items():
        section, other_leaf = table_of(data, section_of(other)), other.rsplit(".", 1)[-1]
        mine, theirs = training.get(leaf), section.get(other_leaf)
        if leaf in training and other_leaf in section and mine != theirs:
            out.append(Problem(file, f"training.{leaf}",
                               f"{toml_literal(mine)} conflicts with {other} = {toml_literal(theirs)}",
                               f"keep only {other}"))
    eval_strategy = setting("eval_strategy", "str")
    save_strategy = setting("save_strategy", "str")
    # a bad choice is reported already; rules built on it would only add noise
    strategies_ok = all(
        not (spec := (fields or {}).get(leaf)) or not spec.choices or value in spec.choices
        for leaf, value in (("eval_strategy", eval_strategy), ("save_strategy", save_strategy)))
    if strategies_ok and value_of(training, "load_best_model_at_end", "bool", False):
        if eval_strategy != save_strategy:
            out.append(Problem(file, "training.load_best_model_at_end",
                               f"needs save_strategy ({toml_literal(save_strategy)}) to match "
                               f"eval_strategy ({toml_literal(eval_strategy)})",
                               f"set training.save_strategy = {toml_literal(eval_strategy)}"
                               if eval_strategy not in (None, "no") else 'set training.eval_strategy = "steps"'))
        elif eval_strategy == "steps":
            save_steps = setting("save_steps", "float")
            eval_steps = setting("eval_steps", "float") or setting("logging_steps", "float")
            if (isinstance(save_steps, (int, float)) and isinstance(eval_steps, (int, float))
                    and save_steps >= 1 and eval_steps >= 1 and save_steps % eval_steps != 0):
                out.append(Problem(file, "training.save_steps",
                                   f"load_best_model_at_end needs save_steps ({toml_literal(save_steps)}) "
                                   f"to be a multiple of eval_steps ({toml_literal(eval_steps)})",
                                   f"e.g. save_steps = {toml_literal(eval_steps)}"))
    dat = table_of(data, "data")
    if strategies_ok and eval_strategy not in (None, "no") and "train_file" in dat and "validation_file" not in dat:
        out.append(Problem(file, "training.eval_strategy",
                           f"{toml_literal(eval_strategy)} evaluates during training, but there is no validation "
                           "data: data.train_file is given without data.validation_file",
                           'set data.validation_file = "validation.csv", or training.eval_strategy = "no"'))
    metrics = table_of(data, "metrics")
    if "early_stopping_patience" in metrics and eval_strategy in (None, "no"):
        out.append(Problem(file, "metrics.early_stopping_patience",
                           "early stopping needs evaluation, but training.eval_strategy is \"no\"",
                           'set training.eval_strategy = "steps" (or "epoch")'))
    out.extend(precision_problems(file, data))
    return out


def precision_problems(file: str, data: Mapping[str, Any]) -> list[Problem]:
    """Two precisions said for one run, refused: training.bf16 / fp16 against a different hardware.mixed_precision
    (a flag set to false against the same one: accelerate trains in it all the same), or both flags true. One that
    agrees, or a flag with hardware.mixed_precision "no", is the run's precision (profile.implied.mixed_precision)."""
    out: list[Problem] = []
    training = table_of(data, "training")
    mixed = value_or_default(table_of(data, "hardware"), "hardware.mixed_precision")
    flags = {flag: value_of(training, flag, "bool") for flag in PRECISION_FLAGS}
    for flag, value in flags.items():
        if value is True and mixed not in ("no", flag):
            out.append(Problem(file, f"training.{flag}",
                               f"conflicts with hardware.mixed_precision = {toml_literal(mixed)}",
                               "set the precision once, in hardware.mixed_precision"))
        elif value is False and mixed == flag:
            out.append(Problem(file, f"training.{flag}",
                               f"is false, but hardware.mixed_precision = {toml_literal(mixed)} trains the run in "
                               f"{flag} all the same",
                               f"remove training.{flag}, or set hardware.mixed_precision = \"no\""))
    if all(flags.values()) and mixed == "no":
        out.append(Problem(file, "training.fp16", "is true and so is training.bf16: a run trains in one precision",
                           'set one precision, in hardware.mixed_precision ("bf16" or "fp16")'))
    return out

