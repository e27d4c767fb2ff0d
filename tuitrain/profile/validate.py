"""Validation: every problem of a profile at once, each naming its key and a fix.

`validate_profile(data, file, base_dir)` checks the shape (schema.py), the [training] keys
against the installed TrainingArguments (training_args.py), then the rules between keys.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import ChainMap
from dataclasses import replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Iterable, Mapping

from tuitrain.installed import distribution_version

from .datafiles import Scan, not_commas, scan_data_file
from .folders import unusable_folder
from .implied import PRECISION_FLAGS, mixed_precision
from .model_config import accepts, config_keys, exact
from .problems import Problem, Severity, close_matches, did_you_mean
from .schema import (
    DATA_FILE_FORMATS,
    DEEPSPEED_KEYS,
    DEEPSPEED_PLUGIN_KEYS,
    DEFAULT_METRICS,
    ENGINE_SECTIONS,
    FOREIGN_KEYS,
    FOREIGN_PREFIXES,
    FSDP_KEYS,
    GENERATOR_TASKS,
    METRIC_PACKAGES,
    METRIC_TASKS,
    QUANTIZE,
    SCHEMA,
    TASKS,
    KeySpec,
    TableListSpec,
    TableSpec,
    data_default,
)
from .training_args import FieldSpec, applicable_migration, installed_model_types, training_args_failure, training_args_fields

_AUTO: Any = object()

# [training] keys owned by another section, or by tuitrain itself.
TRAINING_OWNED: dict[str, tuple[str, str]] = {
    "output_dir": ("the output folder is set in [run], not [training]",
                   'move it: [run] output_dir = "..." (default: the run directory\'s output/)'),
    "local_rank": ("set by the launcher for each rank", "remove it from [training]"),
}
# [training] keys that mirror a tuitrain key: both given with different values is an error.
TRAINING_MIRRORS: dict[str, str] = {
    "seed": "run.seed",
    "log_level": "logging.log_level",
    "log_level_replica": "logging.log_level_replica",
    "log_on_each_node": "logging.log_on_each_node",
}
# Range rules for [training] values: key -> (low, low_exclusive, high).
TRAINING_RANGES: dict[str, tuple[float | None, bool, float | None]] = {
    "learning_rate": (0, True, None),
    "per_device_train_batch_size": (1, False, None),
    "per_device_eval_batch_size": (1, False, None),
    "gradient_accumulation_steps": (1, False, None),
    "logging_steps": (0, True, None),
    "eval_steps": (0, True, None),
    "save_steps": (0, True, None),
    "warmup_ratio": (0, False, 1),
    "warmup_steps": (0, False, None),
    "num_train_epochs": (0, True, None),
    "weight_decay": (0, False, None),
    "max_grad_norm": (0, False, None),
    "dataloader_num_workers": (0, False, None),
    "save_total_limit": (1, False, None),
    "eval_accumulation_steps": (1, False, None),
}
TRAINING_EXAMPLES: dict[str, str] = {
    "max_steps": "1000", "num_train_epochs": "3", "eval_steps": "100", "save_steps": "100",
    "logging_steps": "10", "save_total_limit": "3", "learning_rate": "5e-05", "report_to": '"none"',
}
# Seq2SeqTrainingArguments' own keys (beyond TrainingArguments'), accepted with task = "seq2seq".
SEQ2SEQ_TRAINING_FIELDS: dict[str, FieldSpec] = {
    "predict_with_generate": FieldSpec("predict_with_generate", "bool", False,
                                       help="generate at evaluation, so ROUGE and BLEU score generated text (tuitrain: on)"),
    "generation_max_length": FieldSpec("generation_max_length", "optional-int", None,
                                       help="the longest generated sequence (tuitrain: data.max_target_length)"),
    "generation_num_beams": FieldSpec("generation_num_beams", "optional-int", None, help="beams at evaluation"),
    "sortish_sampler": FieldSpec("sortish_sampler", "bool", False, help="batches of similar lengths"),
}
_KIND_WORDS = {
    "int": "a whole number (int)",
    "float": "a number (float)",
    "bool": "true or false (bool)",
    "str": "a string (str)",
    "list": "a list",
    "dict": "a table",
    "list[float]": "a list of numbers",
    "list[str]": "a list of strings",
    "gpus": "a list of GPU indices or UUIDs",
}


# --------------------------------------------------------------------------- value helpers

def toml_literal(value: Any) -> str:
    """A short TOML rendering of a value, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_literal(v)}" for k, v in value.items()) + " }"
    return str(value)


def describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {toml_literal(value)}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {toml_literal(value)}"
    if isinstance(value, str):
        return f"the string {toml_literal(value)}"
    if isinstance(value, list):
        return f"the list {_clip(toml_literal(value))}"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__} ({value})"


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def is_kind(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind in ("list", "list[float]", "list[str]", "gpus"):
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    return True


def _choices_text(choices: Iterable[Any], limit: int = 12) -> str:
    items = [toml_literal(c) for c in choices]
    if len(items) > limit:
        items = items[:limit] + [f"… ({len(items) - limit} more)"]
    return ", ".join(items)


def _choice_problem(file: str, key: str, value: Any, choices: tuple[Any, ...]) -> Problem:
    many = len(choices) > 12
    hint = did_you_mean(str(value), [str(c) for c in choices], n=3 if many else 1) \
        if isinstance(value, str) else None
    example = f"e.g. {key.rsplit('.', 1)[-1]} = {toml_literal(choices[0])}" if choices else None
    return Problem(file, key, f"{toml_literal(value)} is not one of {_choices_text(choices)}", hint or example)


def _range_problem(file: str, key: str, leaf: str, value: Any,
                   low: float | None, low_excl: bool, high: float | None) -> Problem | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isnan(value):
        return Problem(file, key, "nan is not a usable value", f"e.g. {leaf} = {toml_literal(low or 1)}")
    too_low = low is not None and (value <= low if low_excl else value < low)
    too_high = high is not None and value > high
    if not (too_low or too_high):
        return None
    if low is not None and high is not None:
        want = f"between {toml_literal(low)} and {toml_literal(high)}"
    elif low is not None:
        want = f"{'greater than' if low_excl else 'at least'} {toml_literal(low)}"
    else:
        want = f"at most {toml_literal(high)}"
    return Problem(file, key, f"must be {want}, got {toml_literal(value)}")


def _example_for(leaf: str, spec: KeySpec) -> str:
    if spec.example:
        return spec.example
    if spec.choices:
        return f"{leaf} = {toml_literal(spec.choices[0])}"
    if spec.default is not None and spec.default != "":
        return f"{leaf} = {toml_literal(spec.default)}"
    samples = {"int": "1", "float": "0.5", "bool": "true", "str": '"..."', "dict": "{ }"}
    return f"{leaf} = {samples.get(spec.kind, '[...]')}"


def _type_problem(file: str, key: str, value: Any, kinds: Iterable[str], example: str) -> Problem:
    words = " or ".join(_KIND_WORDS.get(k, k) for k in kinds)
    return Problem(file, key, f"expected {words}, got {describe_value(value)}", f"e.g. {example}")


# --------------------------------------------------------------------------- plain sections

def _check_key(file: str, key: str, leaf: str, value: Any, spec: KeySpec) -> list[Problem]:
    if not is_kind(value, spec.kind):
        return [_type_problem(file, key, value, [spec.kind], _example_for(leaf, spec))]
    out: list[Problem] = []
    if spec.kind in ("str", "int", "float"):
        if spec.choices and value not in spec.choices:
            out.append(_choice_problem(file, key, value, spec.choices))
        range_p = _range_problem(file, key, leaf, value, spec.min, spec.min_exclusive, spec.max)
        if range_p:
            out.append(range_p)
    elif spec.kind == "list[float]":
        for i, item in enumerate(value):
            if not is_kind(item, "float"):
                out.append(_type_problem(file, f"{key}[{i}]", item, ["float"], _example_for(leaf, spec)))
            else:
                range_p = _range_problem(file, f"{key}[{i}]", leaf, item, spec.min, spec.min_exclusive, spec.max)
                if range_p:
                    out.append(range_p)
    elif spec.kind == "list[str]":
        for i, item in enumerate(value):
            if not isinstance(item, str):
                out.append(_type_problem(file, f"{key}[{i}]", item, ["str"], _example_for(leaf, spec)))
            elif spec.choices and item not in spec.choices:
                out.append(_choice_problem(file, f"{key}[{i}]", item, spec.choices))
    elif spec.kind == "gpus":
        seen: set[Any] = set()
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (int, str)) or item == "":
                out.append(Problem(file, f"{key}[{i}]",
                                   f"expected a GPU index (int >= 0) or UUID (string), got {describe_value(item)}",
                                   'e.g. gpus = [0, 1] or gpus = ["GPU-8f0c..."]'))
            elif isinstance(item, int) and item < 0:
                out.append(Problem(file, f"{key}[{i}]", f"GPU index must be at least 0, got {item}"))
            elif item in seen:
                out.append(Problem(file, f"{key}[{i}]", f"GPU {toml_literal(item)} is listed twice",
                                   "list each GPU once"))
            else:
                seen.add(item)
    return out


def _elsewhere(leaf: str, here: str, fields: Mapping[str, FieldSpec] | None) -> list[str]:
    """Dotted places where a key of this name does belong."""
    spots = [f"{sec}.{leaf}" for sec, keys in SCHEMA.items() if sec != here and leaf in keys]
    spots += [f"{sec}.{sub}.{leaf}" for sec, keys in SCHEMA.items() for sub, spec in keys.items()
              if isinstance(spec, TableSpec) and leaf in spec.keys]  # a [model.lora] key written in [model]
    if here != "training" and fields and leaf in fields:
        spots.append(f"training.{leaf}")
    return spots


def _unprefixed(table: str, leaf: str) -> str:
    strip = FOREIGN_PREFIXES.get(table, "")
    return leaf[len(strip):] if strip and leaf.startswith(strip) else leaf


def _foreign_fix(prefix: str, leaf: str, keys: Mapping[str, KeySpec | TableSpec | TableListSpec]) -> str | None:
    """The fix for a name from accelerate, torchrun or transformers that [prefix] spells
    otherwise (or has no setting for); None when `leaf` is no such name."""
    bare = _unprefixed(prefix, leaf)
    known = FOREIGN_KEYS.get(prefix, {})
    for name in (leaf, bare):
        if name in known:
            home, why = known[name]
            return f"did you mean {home}? ({why})" if home else f"tuitrain has no such setting ({why}); remove it"
    if bare != leaf and bare in keys:
        strip = FOREIGN_PREFIXES[prefix]
        return f"did you mean '{bare}'? ([{prefix}] takes accelerate's names without the {strip} prefix)"
    for sub in FOREIGN_PREFIXES:  # a key of [distributed.fsdp] written flat in [distributed]
        parent, _, name = sub.rpartition(".")
        inner = _unprefixed(sub, leaf)
        spec = keys.get(name)
        if parent == prefix and isinstance(spec, TableSpec) and inner in spec.keys:
            return f"did you mean {sub}.{inner}? (a key of the [{sub}] table)"
    return None


def _check_table(file: str, prefix: str, section: str, table: dict[str, Any],
                 keys: Mapping[str, KeySpec | TableSpec | TableListSpec],
                 fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    out: list[Problem] = []
    for leaf, value in table.items():
        key = f"{prefix}.{leaf}"
        spec = keys.get(leaf)
        if spec is None:
            hint = _foreign_fix(prefix, leaf, keys) or did_you_mean(leaf, keys)
            spots = _elsewhere(leaf, section, fields) if "." not in prefix else []
            if hint is None and spots:
                hint = f"did you mean {' or '.join(spots)}?"
            known = ", ".join(k for k in keys)
            out.append(Problem(file, key, f"unknown key in [{prefix}]", hint or f"known keys: {known}"))
        elif isinstance(spec, TableSpec):
            if not isinstance(value, dict):
                out.append(Problem(file, key, f"expected a table, got {describe_value(value)}",
                                   f"write it as a [{key}] table"))
            elif not spec.free:
                out.extend(_check_table(file, key, section, value, spec.keys, fields))
        elif isinstance(spec, TableListSpec):
            out.extend(_check_table_list(file, key, section, value, spec, fields))
        else:
            out.extend(_check_key(file, key, leaf, value, spec))
    return out


def _check_table_list(file: str, key: str, section: str, value: Any, spec: TableListSpec,
                      fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    """An array of tables ([[distributed.machines]]): each item a table of `spec.keys`, with `spec.required`."""
    first = next(iter(spec.keys), "key")
    if not isinstance(value, list):
        return [Problem(file, key, f"expected tables, got {describe_value(value)}",
                        f"write each as a [[{key}]] table with {first} = ...")]
    out: list[Problem] = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            out.append(Problem(file, where, f"expected a table, got {describe_value(item)}",
                               f"write each as a [[{key}]] table with {first} = ..."))
            continue
        out.extend(_check_table(file, where, section, item, spec.keys, fields))
        for leaf in spec.required:
            if leaf not in item:
                out.append(Problem(file, f"{where}.{leaf}", "missing", f"e.g. {_example_for(leaf, spec.keys[leaf])}"))
    return out


# --------------------------------------------------------------------------- [training]

def _task(data: Mapping[str, Any]) -> str:
    return _get(_table(data, "model"), "task", "str", "sequence-classification")


def _task_fields(fields: Mapping[str, FieldSpec] | None, task: str) -> Mapping[str, FieldSpec] | None:
    """The [training] keys of the task's arguments class (Seq2SeqTrainingArguments for seq2seq)."""
    if fields is None or task != "seq2seq":
        return fields
    # a view, not a copy: a copy would read every key, and with a cold cache wait for the installed table
    return ChainMap(fields, SEQ2SEQ_TRAINING_FIELDS)  # type: ignore[arg-type]  # read-only here


def _check_training(file: str, training: dict[str, Any],
                    fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    out: list[Problem] = []
    if fields is None and training:
        failure = training_args_failure()
        if failure:
            out.append(Problem(file, "training", f"{failure}; [training] keys were not checked",
                               "run that command to see the whole error", severity="warning"))
        else:
            out.append(Problem(file, "training",
                               "transformers is not installed here, so [training] keys were not checked",
                               "install transformers to check them", severity="warning"))
    for leaf, value in training.items():
        key = f"training.{leaf}"
        if leaf in TRAINING_OWNED:
            message, fix = TRAINING_OWNED[leaf]
            out.append(Problem(file, key, message, fix))
            continue
        migration = applicable_migration(leaf, fields)
        if migration is not None:
            where = f"use {migration.new}" if migration.new else "remove it"
            out.append(Problem(file, key, migration.note, where))
            continue
        if fields is None:
            range_rule = TRAINING_RANGES.get(leaf)
            if range_rule:
                p = _range_problem(file, key, leaf, value, *range_rule)
                if p:
                    out.append(p)
            continue
        spec = fields.get(leaf)
        if spec is None and leaf in SEQ2SEQ_TRAINING_FIELDS:
            out.append(Problem(file, key, 'a Seq2SeqTrainingArguments key, for model.task = "seq2seq" only',
                               "remove it, or set model.task = \"seq2seq\""))
            continue
        if spec is None:
            hint = did_you_mean(leaf, fields)
            spots = _elsewhere(leaf, "training", fields)
            if hint is None and spots:
                hint = f"did you mean {' or '.join(spots)}?"
            out.append(Problem(file, key, "unknown TrainingArguments key",
                               hint or "see the TrainingArguments docs of the installed transformers"))
            continue
        out.extend(_check_training_value(file, key, leaf, value, spec))
    return out


def _training_example(leaf: str, spec: FieldSpec) -> str:
    if leaf in TRAINING_EXAMPLES:
        return f"{leaf} = {TRAINING_EXAMPLES[leaf]}"
    if spec.choices:
        return f"{leaf} = {toml_literal(spec.choices[0])}"
    kinds = spec.accepts or (spec.base_type,)
    if spec.default is not None and any(is_kind(spec.default, k) for k in kinds):
        if isinstance(spec.default, bool):
            return f"{leaf} = {toml_literal(not spec.default)}"
        if spec.default not in ("", [], {}):
            return f"{leaf} = {toml_literal(spec.default)}"
    samples = {"int": "1", "float": "0.5", "bool": "true", "str": '"..."', "list": '["..."]', "dict": "{ }"}
    return f"{leaf} = {samples.get(kinds[0] if kinds else 'str', '...')}"


def _check_training_value(file: str, key: str, leaf: str, value: Any, spec: FieldSpec) -> list[Problem]:
    kinds = spec.accepts or (() if spec.base_type == "any" else (spec.base_type,))
    if kinds and not any(is_kind(value, k) for k in kinds):
        return [_type_problem(file, key, value, kinds, _training_example(leaf, spec))]
    out: list[Problem] = []
    if spec.choices:
        if isinstance(value, str):
            items = value.split() if (leaf == "debug" and "list" in kinds) else [value]
        elif isinstance(value, list):
            items = value
        else:
            items = []
        if value == "" and leaf == "debug":
            items = []
        for item in items:
            if isinstance(item, (str, int, float)) and not isinstance(item, bool) and item not in spec.choices:
                out.append(_choice_problem(file, key, item, spec.choices))
    if leaf == "max_steps" and is_kind(value, "int") and value != -1 and value < 1:
        out.append(Problem(file, key, f"must be at least 1 (or -1 to use num_train_epochs), got {value}"))
    range_rule = TRAINING_RANGES.get(leaf)
    if range_rule:
        p = _range_problem(file, key, leaf, value, *range_rule)
        if p:
            out.append(p)
    return out


# --------------------------------------------------------------------------- rules between keys

def _table(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _get(table: Mapping[str, Any], leaf: str, kind: str, default: Any = None) -> Any:
    """The value if present and of the right kind (type errors are reported elsewhere)."""
    value = table.get(leaf, default)
    return value if value is not None and is_kind(value, kind) else default


def _resolve(raw: str, base_dir: Path | None) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        base = base_dir or Path.cwd()
        path = base / path
        if not base.exists():  # a profile not saved yet into a folder to be made: "../data" means from there
            path = Path(os.path.normpath(path))
    return path


# Model types whose attention layers split the hidden size evenly over the heads, refusing it
# otherwise: type -> (names of the hidden size, names of the head count, their defaults). The
# names and defaults are checked against the installed transformers in tests/test_input_errors.py.
DIVISIBLE_HEADS: dict[str, tuple[tuple[str, ...], tuple[str, ...], int, int]] = {
    "bert": (("hidden_size",), ("num_attention_heads",), 768, 12),
    "roberta": (("hidden_size",), ("num_attention_heads",), 768, 12),
    "gpt2": (("n_embd", "hidden_size"), ("n_head", "num_attention_heads"), 768, 12),
    "distilbert": (("dim", "hidden_size"), ("n_heads", "num_attention_heads"), 768, 12),
    "llama": (("hidden_size",), ("num_attention_heads",), 4096, 32),
}


def _given(config: Mapping[str, Any], names: tuple[str, ...], default: int) -> tuple[str, Any]:
    for name in names:
        if name in config:
            return name, config[name]
    return names[0], default


def _heads_problem(file: str, config: Mapping[str, Any], model_type: str) -> Problem | None:
    shape = DIVISIBLE_HEADS.get(model_type)
    if shape is None or "head_dim" in config:
        return None
    hidden_names, head_names, hidden_default, heads_default = shape
    hidden_key, hidden = _given(config, hidden_names, hidden_default)
    heads_key, heads = _given(config, head_names, heads_default)
    if not (is_kind(hidden, "int") and is_kind(heads, "int")):
        return None
    if hidden < 1 or heads < 1:
        key, value = (hidden_key, hidden) if hidden < 1 else (heads_key, heads)
        return Problem(file, f"model.config.{key}", f"must be at least 1, got {value}",
                       f"e.g. {hidden_names[0]} = {hidden_default}, {head_names[0]} = {heads_default}")
    if hidden % heads == 0:
        return None
    fits = max(d for d in range(1, heads + 1) if hidden % d == 0)
    said = lambda key: "" if key in config else " (its default)"  # noqa: E731
    return Problem(file, f"model.config.{hidden_key}",
                   f"{hidden}{said(hidden_key)} is not divisible by {heads_key} = {heads}{said(heads_key)}: "
                   f"{model_type} splits the hidden size evenly over the attention heads",
                   f"set {heads_key} = {fits}, or {hidden_key} = {(hidden // heads + 1) * heads}")


def _config_type_problems(file: str, config: Mapping[str, Any], model_type: str) -> list[Problem]:
    """[model.config] values of a kind the model type's config refuses (transformers says it only in the rank:
    "expected int, got str"); the kinds come from the shipped table (profile/model_config.py)."""
    out: list[Problem] = []
    keys = config_keys(model_type)
    strict = exact(model_type)
    for leaf, value in config.items():
        spec = keys.get(leaf)
        if spec is None or leaf == "model_type" or accepts(spec, value, strict):
            continue
        problem = _type_problem(file, f"model.config.{leaf}", value, spec.kinds, _config_example(leaf, spec.kinds,
                                                                                                spec.default))
        number = _number_text(value) if isinstance(value, str) else None
        if number is not None and accepts(spec, number, strict):
            problem = Problem(file, problem.key, problem.message, f"write it without quotes: {leaf} = {value.strip()}")
        elif is_kind(value, "int") and accepts(spec, float(value), strict):
            problem = Problem(file, problem.key, f"expected a float, got the whole number {value} (transformers "
                              f"{model_type} configs take only a float here)", f"write it as {leaf} = {value}.0")
        out.append(problem)
    return out


def _number_text(text: str) -> int | float | bool | None:
    """The number or boolean a quoted TOML string spells ("32", "0.1", "true"), or None."""
    word = text.strip()
    if word in ("true", "false"):
        return word == "true"
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            continue
    return None


def _config_example(leaf: str, kinds: tuple[str, ...], default: Any) -> str:
    if default is not None and any(is_kind(default, k) for k in kinds):
        return f"{leaf} = {toml_literal(default)}"
    samples = {"int": "1", "float": "0.1", "bool": "true", "str": '"..."', "list": "[...]", "dict": "{ }"}
    return f"{leaf} = {samples.get(kinds[0], '...')}"


# Task names from elsewhere (the Hub's pipeline tags, common shorthands) -> tuitrain's task.
TASK_ALIASES = {
    "text-classification": "sequence-classification", "sentiment-analysis": "sequence-classification",
    "ner": "token-classification", "pos": "token-classification", "text-generation": "causal-lm",
    "clm": "causal-lm", "language-modeling": "causal-lm", "summarization": "seq2seq", "translation": "seq2seq",
    "text2text-generation": "seq2seq",
}


def data_tasks(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The tasks the profile's [data] and [model] keys point to, each with why: (task, reason)."""
    dat, model = _table(data, "data"), _table(data, "model")
    generated = _get(dat, "generate", "str")
    if generated in GENERATOR_TASKS:
        return [(task, f"data.generate = {toml_literal(generated)} makes data for it")
                for task in GENERATOR_TASKS[generated]]
    if "target_column" in dat:
        return [("seq2seq", "data.target_column names target texts")]
    if "text_pair_column" in dat:
        return [("sequence-classification", "the data is sentence pairs with labels (data.text_pair_column)")]
    if "labels" in model:
        return [("token-classification", "model.labels names word tags")]
    if "num_labels" in model:
        return [("sequence-classification", "model.num_labels counts a classifier's labels")]
    if "block_size" in dat:
        return [("causal-lm", "data.block_size cuts text into blocks")]
    return []


def _task_fix(value: str, data: Mapping[str, Any]) -> str | None:
    """The fix for a model.task that is no task: the task the data fits among the names close to it
    ("classification" with sentence pairs: sequence-classification, not token-classification)."""
    near = close_matches(value, TASKS, n=len(TASKS))
    if near and SequenceMatcher(None, value.lower(), near[0]).ratio() >= 0.9:
        return None  # a typo of one task name: did_you_mean says it
    alias = TASK_ALIASES.get(value.strip().lower().replace("_", "-"))
    fitting = data_tasks(data)
    for task, why in fitting:
        if task == alias or (alias is None and task in near):
            return f"did you mean '{task}'? ({why})"
    if alias is not None:
        return f"did you mean '{alias}'? (tuitrain's name for {toml_literal(value)})"
    if near:
        return None
    if fitting:
        return f"e.g. task = {toml_literal(fitting[0][0])} ({fitting[0][1]})"
    return None


def _with_task_fix(problem: Problem, value: Any, data: Mapping[str, Any]) -> Problem:
    fix = _task_fix(value, data) if isinstance(value, str) and value not in TASKS else None
    return replace(problem, fix=fix) if fix else problem


def _model_type_problem(file: str, model_type: str, known: frozenset[str] | None) -> Problem | None:
    if known is None or model_type in known:
        return None
    hint = did_you_mean(model_type, sorted(known))
    return Problem(file, "model.config.model_type", f"{toml_literal(model_type)} is not a model type of the "
                   "installed transformers", hint or 'e.g. model_type = "bert" (the name in a model\'s config.json)')


def _rules_model(file: str, data: Mapping[str, Any], base_dir: Path | None,
                 model_types: frozenset[str] | None = None) -> list[Problem]:
    out: list[Problem] = []
    model = _table(data, "model")
    dat = _table(data, "data")
    task = _get(model, "task", "str", "sequence-classification")
    name = _get(model, "name_or_path", "str", "")
    config = model.get("config") if isinstance(model.get("config"), dict) else None
    tokenizer = _get(model, "tokenizer", "str", "")
    train_tok = model.get("train_tokenizer") if isinstance(model.get("train_tokenizer"), dict) else None

    if name and config is not None:
        out.append(Problem(file, "model", "both model.name_or_path and [model.config] are given",
                           "keep model.name_or_path to fine-tune a pretrained model, "
                           "or [model.config] to train one from scratch"))
    elif not name and config is None:
        out.append(Problem(file, "model", "no model: neither model.name_or_path nor [model.config] is given",
                           'set model.name_or_path = "<Hub id or folder>", '
                           'or add a [model.config] table with model_type = "bert"'))
    if name and name.startswith((".", "/", "~")) and not _exists(_resolve(name, base_dir)):
        out.append(Problem(file, "model.name_or_path", f"no such folder: {_resolve(name, base_dir)}",
                           "relative paths start from the profile's folder"
                           + (f" ({base_dir})" if base_dir else "")))
    for leaf, raw, what, holds in (("name_or_path", name, "model", "config.json"),
                                   ("tokenizer", tokenizer, "tokenizer", "tokenizer_config.json")):
        if raw and _is_file(_resolve(raw, base_dir)):  # the launch reads an existing path as that path
            out.append(Problem(file, f"model.{leaf}", f"{_resolve(raw, base_dir)} is a file, not a {what} folder",
                               f"give the folder save_pretrained wrote (it holds {holds}), "
                               'or a Hub id such as "bert-base-uncased"'))
    if config is not None:
        model_type = config.get("model_type")
        if not isinstance(model_type, str) or not model_type:
            out.append(Problem(file, "model.config.model_type",
                               "missing" if model_type is None else f"expected a string, got {describe_value(model_type)}",
                               'e.g. model_type = "bert" (any transformers model type)'))
        else:
            for found in (_model_type_problem(file, model_type, model_types), _heads_problem(file, config, model_type)):
                if found is not None:
                    out.append(found)
            out.extend(_config_type_problems(file, config, model_type))
        if not tokenizer and train_tok is None:
            out.append(Problem(file, "model.tokenizer",
                               "[model.config] builds a model from scratch, but no tokenizer is given",
                               "add a [model.train_tokenizer] table (trained on the training text), "
                               'or set model.tokenizer = "<Hub id or folder>"'))
        positions = config.get("max_position_embeddings", config.get("n_positions"))
        if is_kind(positions, "int"):
            leaf = "block_size" if task == "causal-lm" else "max_length"
            length = _get(dat, leaf, "int", 128)
            if length > positions:
                out.append(Problem(file, f"data.{leaf}",
                                   f"{length} tokens is more than the model's {positions} positions "
                                   "(model.config.max_position_embeddings)",
                                   f"set data.{leaf} = {positions}, or raise max_position_embeddings"))
    if tokenizer and train_tok is not None:
        out.append(Problem(file, "model.train_tokenizer",
                           "both model.tokenizer and [model.train_tokenizer] are given", "keep one"))
    lora = model.get("lora")
    if isinstance(lora, dict):
        out.extend(_lora_problems(file, lora, _get(_table(data, "distributed"), "strategy", "str", "single")))
    names = _get(model, "labels", "list")
    if names is not None and task != "token-classification":
        out.append(Problem(file, "model.labels", f'used by task "token-classification" only; task is {toml_literal(task)}',
                           "remove it (model.num_labels counts a classifier's labels)", severity="warning"))
    elif names is not None and len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        out.append(Problem(file, "model.labels", f"names {', '.join(map(toml_literal, twice))} more than once",
                           "list each tag once, in class id order"))
    weights = _get(model, "class_weights", "list")
    if weights is not None:
        if task in ("causal-lm", "seq2seq"):
            out.append(Problem(file, "model.class_weights", f"ignored for task {toml_literal(task)}",
                               "remove it", severity="warning"))
        elif task == "token-classification" and names is None:
            pass  # the tags are counted in the data, in the rank
        else:
            labels = len(names) if task == "token-classification" and names is not None else _get(model, "num_labels", "int", 2)
            if len(weights) != labels:
                out.append(Problem(file, "model.class_weights",
                                   f"{len(weights)} weights for {labels} labels "
                                   f"({'model.labels' if task == 'token-classification' else 'model.num_labels'})",
                                   f"give exactly {labels} weights, one per label"))
    return out


def _lora_problems(file: str, lora: Mapping[str, Any], strategy: str) -> list[Problem]:
    """[model.lora] beyond its keys' types and ranges: peft (and for a quantized base bitsandbytes)
    installed, a strategy that keeps whole weights, some layer to adapt (whether the names are the
    model's own is checked when a rank has built the model)."""
    out: list[Problem] = []
    if distribution_version("peft") is None:
        out.append(Problem(file, "model.lora", "LoRA adapters need the peft package, which is not installed here",
                           "pip install 'tuitrain[peft]' (or remove [model.lora] to train the whole model)"))
    quantize = lora.get("quantize")
    if isinstance(quantize, str) and quantize in QUANTIZE:
        if distribution_version("bitsandbytes") is None:
            out.append(Problem(file, "model.lora.quantize", "a quantized base needs the bitsandbytes package, "
                               "which is not installed here",
                               "pip install 'tuitrain[qlora]' (or remove model.lora.quantize for a full-precision base)"))
        if strategy in ("fsdp", "deepspeed"):
            out.append(Problem(file, "model.lora.quantize", f"a quantized base is not offered with strategy "
                               f"{toml_literal(strategy)} (it shards the weights that bitsandbytes packs)",
                               'use distributed.strategy = "ddp" (each process holds the whole quantized base), '
                               "or remove model.lora.quantize"))
    if "double_quant" in lora and quantize not in ("nf4", "fp4"):
        out.append(Problem(file, "model.lora.double_quant",
                           "applies to a 4-bit base only (quantize = \"nf4\" or \"fp4\"); "
                           + (f"quantize is {toml_literal(quantize)}" if quantize else "quantize is not set"),
                           "remove it", severity="warning"))
    targets = lora.get("target_modules")
    if isinstance(targets, list) and not targets:
        out.append(Problem(file, "model.lora.target_modules", "is empty: no layer would be adapted",
                           'name the layers, e.g. target_modules = ["query", "value"], or remove the key '
                           "for peft's default for the model type"))
    return out


def _rules_data(file: str, data: Mapping[str, Any], base_dir: Path | None) -> list[Problem]:
    out: list[Problem] = []
    dat = _table(data, "data")
    task = _get(_table(data, "model"), "task", "str", "sequence-classification")
    sources = [k for k in ("generate", "dataset", "train_file") if k in dat]
    if not sources:
        out.append(Problem(file, "data", "no data source",
                           'set one of data.generate = "sentiment-words", data.dataset = "<Hub name>", '
                           'or data.train_file = "train.csv"'))
    generated = _get(dat, "generate", "str")
    serves = GENERATOR_TASKS.get(generated or "")
    if serves and task in TASKS and task not in serves:
        fits = [name for name, tasks in GENERATOR_TASKS.items() if task in tasks]
        out.append(Problem(file, "data.generate", f"{toml_literal(generated)} makes data for task "
                           f"{' or '.join(serves)}; model.task is {toml_literal(task)}",
                           f"use data.generate = {toml_literal(fits[0])}" if fits else "give data files"))
    elif len(sources) > 1:
        out.append(Problem(file, "data", "more than one data source: "
                           + ", ".join(f"data.{s}" for s in sources), "keep one"))
    if "dataset_config" in dat and "dataset" not in dat:
        out.append(Problem(file, "data.dataset_config", "given without data.dataset",
                           'set data.dataset = "<Hub name>" or remove dataset_config'))
    if "validation_file" in dat and "train_file" not in dat:
        out.append(Problem(file, "data.validation_file", "given without data.train_file",
                           'set data.train_file = "train.csv" too'))
    formats: dict[str, str] = {}
    for leaf in ("train_file", "validation_file"):
        raw = _get(dat, leaf, "str")
        if raw is None:
            continue
        path = _resolve(raw, base_dir)
        fmt = DATA_FILE_FORMATS.get(path.suffix.lower())
        if fmt is None:
            out.append(Problem(file, f"data.{leaf}", f"unknown file type {path.suffix or '(none)'!r}: {raw}",
                               "use one of " + ", ".join(DATA_FILE_FORMATS)))
        else:
            formats[leaf] = fmt
        if not _is_file(path):
            what = "is a folder, not a file" if _is_dir(path) else "no such file"
            out.append(Problem(file, f"data.{leaf}", f"{what}: {path}",
                               "relative paths start from the profile's folder"
                               + (f" ({base_dir})" if base_dir else "")))
    if len(set(formats.values())) > 1:
        out.append(Problem(file, "data.validation_file",
                           f"is {formats['validation_file']} but data.train_file is {formats['train_file']}",
                           "use the same file type for both"))
    if task == "causal-lm" and "text_pair_column" in dat:
        out.append(Problem(file, "data.text_pair_column", 'ignored for task "causal-lm"', "remove it",
                           severity="warning"))
    return out


def _file_problems(file: str, leaf: str, path: Path, scan: Scan) -> list[Problem]:
    key = f"data.{leaf}"
    if scan.unreadable:
        return [Problem(file, key, f"{path}: {scan.unreadable}", scan.fix or "give a CSV, JSON or JSON Lines file in UTF-8")]
    if scan.empty:
        return [Problem(file, key, f"{path} is empty", "give a file with a header line and at least one row")]
    if scan.rows == 0:
        shown = f"a header ({', '.join(scan.columns)}) but no rows" if scan.columns else "no records"
        return [Problem(file, key, f"{path} has {shown}", "add rows to it (one example per line)")]
    return []


def delimiter_problem(file: str, key: str, path: Path, delimiter: str, header: str) -> Problem:
    """A CSV separated by another character than the comma (the engine reads commas only)."""
    what, fix = not_commas(path, delimiter, header)
    return Problem(file, key, what, fix)


def _column_problems(file: str, path: Path, scan: Scan, wanted: Mapping[str, str]) -> list[Problem]:
    out = []
    for leaf, column in wanted.items():
        if column not in scan.columns:
            hint = did_you_mean(column, scan.columns)
            out.append(Problem(file, f"data.{leaf}", f"{toml_literal(column)} is not a column of {path} "
                               f"(it has: {', '.join(scan.columns) or 'none'})",
                               hint or f"set data.{leaf} to one of its columns"))
    return out


def _label_problems(file: str, path: Path, scan: Scan, column: str, num_labels: int) -> list[Problem]:
    out = []
    if scan.bad_labels:
        shown = ", ".join(f"{toml_literal(v) if isinstance(v, (str, int, float, bool)) else describe_value(v)}"
                          f" (row {row})" for row, v in scan.bad_labels)
        out.append(Problem(file, "data.label_column",
                           f"column {toml_literal(column)} of {path} holds {shown}: a classifier's labels are "
                           f"class ids, whole numbers 0 to model.num_labels - 1 ({num_labels - 1})",
                           "write each label as its class number (e.g. negative = 0, positive = 1) in the file"))
    if scan.label_min is not None and scan.label_min < 0:
        out.append(Problem(file, "data.label_column", f"column {toml_literal(column)} of {path} holds "
                           f"{scan.label_min}: class ids start at 0", "number the classes 0, 1, 2, … in the file"))
    if scan.label_max is not None and scan.label_max >= num_labels:
        out.append(Problem(file, "model.num_labels",
                           f"is {num_labels}, but {path} has label {scan.label_max} (row {scan.label_max_row}); "
                           f"class ids must be 0 to {num_labels - 1}",
                           f"set model.num_labels = {scan.label_max + 1}"))
    return out


def _rules_data_files(file: str, data: Mapping[str, Any], base_dir: Path | None) -> list[Problem]:
    """The contents of local CSV / JSON data files: rows, columns, class ids."""
    out: list[Problem] = []
    dat = _table(data, "data")
    model = _table(data, "model")
    task = _get(model, "task", "str", "sequence-classification")
    classify = task == "sequence-classification"
    label = _get(dat, "label_column", "str", data_default(task, "label_column"))
    wanted = {"text_column": _get(dat, "text_column", "str", data_default(task, "text_column"))}
    if classify or task == "token-classification":
        wanted["label_column"] = label
    if task == "seq2seq":
        wanted["target_column"] = _get(dat, "target_column", "str", data_default(task, "target_column"))
    if classify:
        pair = _get(dat, "text_pair_column", "str")
        if pair:
            wanted["text_pair_column"] = pair
    for leaf in ("train_file", "validation_file"):
        raw = _get(dat, leaf, "str")
        path = _resolve(raw, base_dir) if raw else None
        if path is None or not _is_file(path):
            continue
        scan = scan_data_file(path, label if classify else None)
        if scan is None:
            continue
        found = _file_problems(file, leaf, path, scan)
        if not found and scan.delimiter and any(c not in scan.columns for c in wanted.values()):
            found = [delimiter_problem(file, f"data.{leaf}", path, scan.delimiter, scan.columns[0])]
        found = found or _column_problems(file, path, scan, wanted)
        if not found and classify:
            found = _label_problems(file, path, scan, label, _get(model, "num_labels", "int", 2))
        out.extend(found)
    return out


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _rules_training(file: str, data: Mapping[str, Any],
                    fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    out: list[Problem] = []
    training = _table(data, "training")

    def setting(leaf: str, kind: str) -> Any:
        if leaf in training:
            return _get(training, leaf, kind)
        spec = fields.get(leaf) if fields else None
        return spec.default if spec is not None else None

    for leaf, other in TRAINING_MIRRORS.items():
        section, other_leaf = other.split(".")
        mine, theirs = training.get(leaf), _table(data, section).get(other_leaf)
        if leaf in training and other_leaf in _table(data, section) and mine != theirs:
            out.append(Problem(file, f"training.{leaf}",
                               f"{toml_literal(mine)} conflicts with {other} = {toml_literal(theirs)}",
                               f"keep only {other}"))
    eval_strategy = setting("eval_strategy", "str")
    save_strategy = setting("save_strategy", "str")
    # a bad choice is reported already; rules built on it would only add noise
    strategies_ok = all(
        not (spec := (fields or {}).get(leaf)) or not spec.choices or value in spec.choices
        for leaf, value in (("eval_strategy", eval_strategy), ("save_strategy", save_strategy)))
    if strategies_ok and _get(training, "load_best_model_at_end", "bool", False):
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
    dat = _table(data, "data")
    if strategies_ok and eval_strategy not in (None, "no") and "train_file" in dat and "validation_file" not in dat:
        out.append(Problem(file, "training.eval_strategy",
                           f"{toml_literal(eval_strategy)} evaluates during training, but there is no validation "
                           "data: data.train_file is given without data.validation_file",
                           'set data.validation_file = "validation.csv", or training.eval_strategy = "no"'))
    metrics = _table(data, "metrics")
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
    training = _table(data, "training")
    mixed = _get(_table(data, "hardware"), "mixed_precision", "str", "no")
    flags = {flag: _get(training, flag, "bool") for flag in PRECISION_FLAGS}
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


def _rules_metrics(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    task = _task(data)
    given = _get(_table(data, "metrics"), "names", "list")
    names = given if given is not None else DEFAULT_METRICS.get(task, [])
    for i, name in enumerate(names):
        key = f"metrics.names[{i}]" if given is not None else "metrics.names"
        if not isinstance(name, str) or name not in METRIC_TASKS:
            continue
        if task == "sequence-classification" and name == "perplexity":
            out.append(Problem(file, key, 'perplexity is a metric for task "causal-lm"',
                               "remove it", severity="warning"))
        elif task == "causal-lm" and name not in ("perplexity", "accuracy"):
            out.append(Problem(file, key, f'{name} is a classification metric; task is "causal-lm"',
                               'use names = ["perplexity"]', severity="warning"))
        elif task in TASKS and task not in METRIC_TASKS[name]:
            fits = [n for n, tasks in METRIC_TASKS.items() if task in tasks]
            out.append(Problem(file, key, f"{name} is a metric for task {' or '.join(METRIC_TASKS[name])}; "
                               f"task is {toml_literal(task)}", f"use names from {', '.join(fits)}", severity="warning"))
        elif task in METRIC_TASKS[name]:
            for module, pip_name in METRIC_PACKAGES.get(name, ()):
                if distribution_version(pip_name) is None:
                    default = "" if given is not None else f" (the default for task {toml_literal(task)})"
                    out.append(Problem(file, key, f"{name}{default} is computed by the {pip_name} package "
                                       f"({module}), which is not installed here",
                                       "pip install 'tuitrain[tasks]'"))
    return out


def _rules_hardware(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    hardware = _table(data, "hardware")
    dist = _table(data, "distributed")
    accelerator = _get(hardware, "accelerator", "str", "auto")
    processes = _get(dist, "num_processes", "int", 1)
    precision, said_by = mixed_precision(data)
    if accelerator == "cpu" and precision == "fp16":
        # one rule for hardware.mixed_precision and training.fp16: the key that makes the run fp16 is named
        fix = ('use mixed_precision = "bf16" or "no" on the CPU' if said_by == "hardware.mixed_precision" else
               'set training.fp16 = false (bf16 runs on the CPU: hardware.mixed_precision = "bf16")')
        out.append(Problem(file, said_by, 'fp16 mixed precision does not run on the CPU; accelerator is "cpu"', fix))
    if accelerator == "mps" and processes > 1:
        out.append(Problem(file, "distributed.num_processes",
                           f"{processes} processes, but an Apple GPU (mps) runs one",
                           "set distributed.num_processes = 1"))
    gpus = _get(hardware, "gpus", "list")
    if gpus is not None and accelerator in ("cpu", "mps"):
        out.append(Problem(file, "hardware.gpus", f'ignored with accelerator = "{accelerator}"',
                           "remove it", severity="warning"))
    elif gpus is not None and accelerator in ("auto", "cuda") and processes > len(gpus) and gpus:
        out.append(Problem(file, "distributed.num_processes",
                           f"{processes} processes, but hardware.gpus lists {len(gpus)} GPU(s)",
                           f"set num_processes = {len(gpus)} or list more GPUs"))
    return out


def listed_machines(dist: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The [[distributed.machines]] tables of a [distributed] section (only those that are tables)."""
    machines = dist.get("machines")
    if not isinstance(machines, list):
        return []
    return [m for m in machines if isinstance(m, dict)]


def machine_count(dist: Mapping[str, Any]) -> int:
    """How many machines take part: the machines listed, else num_machines."""
    listed = listed_machines(dist)
    if listed:
        return len(listed)
    return _get(dist, "num_machines", "int", 1)


def machine_gpus(machine: Mapping[str, Any], hardware: Mapping[str, Any]) -> list[Any] | None:
    """A machine's GPUs: its own `gpus`, else hardware.gpus (None: all of that machine's)."""
    gpus = machine["gpus"] if "gpus" in machine else hardware.get("gpus")
    return gpus if isinstance(gpus, list) else None


def machine_processes(machine: Mapping[str, Any], dist: Mapping[str, Any], hardware: Mapping[str, Any]) -> int | None:
    """The processes one listed machine runs: its num_processes, else distributed.num_processes, else one per listed
    GPU (ddp/fsdp/deepspeed on GPUs), else 1 on the CPU or with "single"; None when only the machine can tell (one
    per GPU, and its GPUs are not listed)."""
    own = machine.get("num_processes")
    if isinstance(own, int) and not isinstance(own, bool):
        return own
    given = dist.get("num_processes")
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    strategy = _get(dist, "strategy", "str", "single")
    accelerator = _get(hardware, "accelerator", "str", "auto")
    if strategy == "single" or accelerator in ("cpu", "mps"):
        return 1
    gpus = machine_gpus(machine, hardware)
    if gpus == []:
        return 1  # every GPU hidden: a CPU run
    return len(gpus) if gpus else None


_IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*\Z")


def interface_problem(file: str, key: str, name: Any) -> Problem | None:
    """Why a network_interface value is no single interface name, or None. tuitrain adds NCCL's '=' itself."""
    if not isinstance(name, str):
        return None  # the type problem is said already
    fix = 'give one interface name as `ip -br addr` lists it, e.g. network_interface = "eth1"'
    if not name:
        return Problem(file, key, "is empty", fix + ", or remove the key")
    if any(ch.isspace() for ch in name) or "," in name:
        return Problem(file, key, f"{toml_literal(name)} is not one interface name (spaces or commas)", fix)
    if name[0] in "=^":
        return Problem(file, key, f"{toml_literal(name)} starts with {name[0]!r}: NCCL's prefix/exclude syntax",
                       f'give the plain name (network_interface = {toml_literal(name.lstrip("=^").split(",")[0])}): '
                       "tuitrain writes NCCL_SOCKET_IFNAME with '=' itself, for an exact match")
    if len(name) > 15:
        return Problem(file, key, f"{toml_literal(name)} is longer than an interface name can be (15 characters)", fix)
    if not _IFNAME.match(name):
        return Problem(file, key, f"{toml_literal(name)} is not an interface name", fix)
    return None


def host_problem(file: str, key: str, host: Any) -> Problem | None:
    """Why a machine's host is no SSH destination, or None (anything ssh takes is fine: aliases, user@host)."""
    if not isinstance(host, str):
        return None
    fix = 'give an SSH destination, e.g. host = "node1" (a ~/.ssh/config alias) or host = "me@10.0.0.2"'
    if not host.strip():
        return Problem(file, key, "is empty", fix)
    if host.startswith("-"):
        return Problem(file, key, f"{toml_literal(host)} starts with '-': ssh would read it as an option", fix)
    if any(ch.isspace() or ord(ch) < 32 for ch in host):
        return Problem(file, key, f"{toml_literal(host)} contains spaces or control characters", fix)
    return None


def _rules_machines(file: str, dist: Mapping[str, Any], hardware: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    raw = dist.get("machines")
    if not isinstance(raw, list):
        return out
    seen: dict[str, int] = {}
    counts: list[tuple[int, int, str]] = []  # (index, processes, where the number comes from)
    accelerator = _get(hardware, "accelerator", "str", "auto")
    for i, machine in enumerate(raw):
        if not isinstance(machine, dict):
            continue
        where = f"distributed.machines[{i}]"
        host = machine.get("host")
        bad = host_problem(file, f"{where}.host", host)
        if bad is not None:
            out.append(bad)
        elif isinstance(host, str):
            if host in seen:
                out.append(Problem(file, f"{where}.host", f"{toml_literal(host)} is listed twice (machines {seen[host]} "
                                   f"and {i})", "list each machine once; for more processes on one machine raise its "
                                   "num_processes"))
            else:
                seen[host] = i
        for leaf in ("python", "workdir"):
            value = machine.get(leaf)
            if isinstance(value, str) and (not value.strip() or value.startswith("-")):
                out.append(Problem(file, f"{where}.{leaf}", f"{toml_literal(value)} is no path",
                                   f"e.g. {MACHINE_EXAMPLES[leaf]}, or remove it"))
        bad = interface_problem(file, f"{where}.network_interface", machine.get("network_interface"))
        if bad is not None:
            out.append(bad)
        gpus = machine_gpus(machine, hardware)
        if "gpus" in machine and accelerator in ("cpu", "mps"):
            out.append(Problem(file, f"{where}.gpus", f'ignored with hardware.accelerator = "{accelerator}"',
                               "remove it", severity="warning"))
            gpus = None
        processes = machine_processes(machine, dist, hardware)
        if processes is None:
            out.append(Problem(file, f"{where}.num_processes",
                               "how many processes this machine runs is not known here (one per GPU, and its GPUs "
                               "are not listed)", "set distributed.num_processes (per machine), or list the "
                               "machine's gpus"))
            continue
        if gpus and processes > len(gpus):
            source = "num_processes" if "num_processes" in machine else "distributed.num_processes"
            out.append(Problem(file, f"{where}.num_processes" if "num_processes" in machine else f"{where}.gpus",
                               f"{processes} processes ({source}) on {len(gpus)} GPU(s)",
                               f"set num_processes = {len(gpus)} for this machine, or list more GPUs"))
        counts.append((i, processes, "num_processes" if "num_processes" in machine else "gpus"))
    if counts:
        first = counts[0]
        for i, processes, leaf in counts[1:]:
            if processes != first[1]:
                out.append(Problem(file, f"distributed.machines[{i}].{leaf}",
                                   f"machine {i} runs {processes} process(es), machine {first[0]} runs {first[1]}: "
                                   "accelerate starts the same number on every machine",
                                   "give every machine the same num_processes (or the same number of gpus)"))
    listed = listed_machines(dist)
    if "num_machines" in dist and listed and _get(dist, "num_machines", "int", 1) != len(listed):
        out.append(Problem(file, "distributed.num_machines",
                           f"{dist['num_machines']} but {len(listed)} machine(s) are listed in [[distributed.machines]]",
                           f"set num_machines = {len(listed)}, or remove it (the listed machines count)"))
    if "machine_rank" in dist and listed:
        out.append(Problem(file, "distributed.machine_rank", "ignored: each listed machine's rank is its place in "
                           "[[distributed.machines]] (the first is 0)", "remove it", severity="warning"))
    if len(listed) > 1 and not _get(dist, "main_process_ip", "str"):
        host = listed[0].get("host")
        out.append(Problem(file, "distributed.main_process_ip",
                           f"needed with {len(listed)} machines listed: the address of the main machine"
                           + (f" ({host})" if isinstance(host, str) else "") + " as the others reach it",
                           'e.g. main_process_ip = "10.0.0.1"'))
    return out


MACHINE_EXAMPLES = {"python": 'python = "/opt/envs/train/bin/python"', "workdir": 'workdir = "/home/me/project"'}


def _rules_distributed(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    dist = _table(data, "distributed")
    strategy = _get(dist, "strategy", "str", "single")
    processes = _get(dist, "num_processes", "int", 1)
    listed = listed_machines(dist)
    machines = machine_count(dist)
    rank = _get(dist, "machine_rank", "int", 0)
    if strategy == "single" and processes > 1:
        out.append(Problem(file, "distributed.num_processes",
                           f'{processes} processes with strategy = "single"',
                           f'set distributed.strategy = "ddp" to run {processes} processes, or num_processes = 1'))
    if strategy == "single" and machines > 1:
        out.append(Problem(file, "distributed.machines" if listed else "distributed.num_machines",
                           f'{machines} machines with strategy = "single"',
                           'set distributed.strategy = "ddp" (or fsdp / deepspeed)'))
    if not listed and rank >= machines:
        out.append(Problem(file, "distributed.machine_rank",
                           f"must be less than num_machines ({machines}), got {rank}",
                           f"use 0 to {machines - 1}" if machines > 1 else "set machine_rank = 0"))
    if not listed and machines > 1 and not _get(dist, "main_process_ip", "str"):
        out.append(Problem(file, "distributed.main_process_ip",
                           f"needed when num_machines = {machines}",
                           'set main_process_ip = "<address of machine 0>"'))
    bad = interface_problem(file, "distributed.network_interface", dist.get("network_interface"))
    if bad is not None:
        out.append(bad)
    out.extend(_rules_machines(file, dist, _table(data, "hardware")))
    for sub in ("fsdp", "deepspeed"):
        if sub in dist and strategy != sub:
            out.append(Problem(file, f"distributed.{sub}", f'ignored: strategy is "{strategy}"',
                               f'set distributed.strategy = "{sub}" to use it', severity="warning"))
    return out


# --------------------------------------------------------------------------- strategies (issue 6)

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
    processes = _get(dist, "num_processes", "int")
    if _get(dist, "strategy", "str") != "fsdp" or processes is None or listed_machines(dist):
        return None
    said = fsdp_world_of_one(fsdp if isinstance(fsdp, dict) else {}, processes * _get(dist, "num_machines", "int", 1))
    if said is None:
        return None
    return Problem(file, "distributed.num_processes", said, FSDP_ALONE_FIX, severity="warning")


def machines_port_problem(file: str, machines: int, port: Any, severity: Severity) -> Problem | None:
    """A run over several machines without main_process_port, or None: the one rule (required; no machine can
    pick a free port for all of them). One message, two severities: the profile alone warns (the editor's
    field checks, `validate --offline`: the file may be finished on the machine that launches it); every plan
    refuses (launch.preflight, launch.machines.plan_machines), and so `validate`, `plan`, the launch dialog, the
    editor's plan and `run` do."""
    if machines <= 1 or port is not None:
        return None
    return Problem(file, "distributed.main_process_port",
                   f"needed with num_machines = {machines}: every machine must meet at the same port "
                   "(each would pick its own free one); the launch refuses to start without it",
                   "e.g. main_process_port = 29500", severity=severity)


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


def _rules_strategies(file: str, data: Mapping[str, Any], base_dir: Path | None,
                      fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    out: list[Problem] = []
    dist = _table(data, "distributed")
    hardware = _table(data, "hardware")
    training = _table(data, "training")
    strategy = _get(dist, "strategy", "str", "single")
    accelerator = _get(hardware, "accelerator", "str", "auto")
    machines = machine_count(dist)
    mixed = mixed_precision(data)[0]  # hardware.mixed_precision, or the training.bf16 / fp16 it leaves to

    # The strategy's own table is checked key by key (the other one is only "ignored", above).
    for sub, keys in (("fsdp", FSDP_KEYS), ("deepspeed", DEEPSPEED_KEYS)):
        table = dist.get(sub)
        if strategy == sub and isinstance(table, dict):
            out.extend(_check_table(file, f"distributed.{sub}", "distributed", table, keys, fields))

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
    if _get(dist, "downcast_bf16", "bool", False) and mixed != "bf16":
        out.append(Problem(file, "distributed.downcast_bf16", f"has no effect without bf16 (the run's mixed precision "
                           f"is {toml_literal(mixed)}; and it only acts on TPUs)", "remove it", severity="warning"))

    optim = _get(training, "optim", "str")
    if low_rank_optimizer(optim) is not None:
        if training.get("optim_target_modules") in (None, "", []):
            out.append(Problem(file, "training.optim_target_modules",
                               f"optim = {toml_literal(optim)} needs the modules to project",
                               'e.g. optim_target_modules = ["attn", "mlp"] (names or regexes), or "all-linear"'))
        # only the processes written here; the plan asks again with an unset num_processes filled in
        layerwise = layerwise_problem(file, optim, _get(dist, "num_processes", "int", 1), machines)
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

    def setting(leaf: str) -> Any:
        spec = FSDP_KEYS[leaf]
        return _get(fsdp, leaf, spec.kind, spec.default)

    version = setting("version")
    sharding = setting("sharding_strategy")
    if version == 2:
        if sharding not in ("full_shard", "shard_grad_op"):
            out.append(Problem(file, "distributed.fsdp.sharding_strategy",
                               f"{toml_literal(sharding)} is not available with FSDP2 (version = 2), which shards "
                               "fully or keeps parameters gathered after forward",
                               'use "full_shard" or "shard_grad_op", or set distributed.fsdp.version = 1'))
        if setting("forward_prefetch"):
            out.append(Problem(file, "distributed.fsdp.forward_prefetch", "is not implemented in FSDP2 (version = 2)",
                               "set forward_prefetch = false, or distributed.fsdp.version = 1"))
        if setting("state_dict_type") == "local":
            out.append(Problem(file, "distributed.fsdp.state_dict_type", '"local" is not available with FSDP2',
                               'use "sharded" or "full"'))
        for leaf in ("backward_prefetch", "sync_module_states", "use_orig_params"):
            if leaf in fsdp:
                out.append(Problem(file, f"distributed.fsdp.{leaf}", "ignored by FSDP2 (version = 2)",
                                   "remove it", severity="warning"))
    elif setting("cpu_ram_efficient_loading") and not setting("sync_module_states"):
        out.append(Problem(file, "distributed.fsdp.sync_module_states",
                           "must be true with cpu_ram_efficient_loading (the other ranks get rank 0's weights by it)",
                           "set sync_module_states = true, or cpu_ram_efficient_loading = false"))
    policy = setting("auto_wrap_policy")
    if policy != "transformer" and "transformer_layer_cls_to_wrap" in fsdp:
        out.append(Problem(file, "distributed.fsdp.transformer_layer_cls_to_wrap",
                           f"ignored with auto_wrap_policy = {toml_literal(policy)}",
                           'set auto_wrap_policy = "transformer" to use it', severity="warning"))
    if policy != "size" and "min_num_params" in fsdp:
        out.append(Problem(file, "distributed.fsdp.min_num_params", f"ignored with auto_wrap_policy = {toml_literal(policy)}",
                           'set auto_wrap_policy = "size" to use it', severity="warning"))
    if setting("activation_checkpointing"):
        for leaf in ("activation_checkpointing", "gradient_checkpointing"):
            if _get(training, leaf, "bool", False):
                out.append(Problem(file, f"training.{leaf}",
                                   "both this and distributed.fsdp.activation_checkpointing are on "
                                   "(transformers refuses both; FSDP's own is the one to use with FSDP)",
                                   f"remove training.{leaf}"))
    return out


def _rules_deepspeed(file: str, ds: Mapping[str, Any], training: Mapping[str, Any], mixed: str,
                     base_dir: Path | None) -> list[Problem]:
    out: list[Problem] = []
    config_file = _get(ds, "config_file", "str")
    if config_file is not None:
        for leaf in DEEPSPEED_PLUGIN_KEYS:
            if leaf in ds:
                out.append(Problem(file, f"distributed.deepspeed.{leaf}",
                                   "given together with config_file: accelerate refuses plugin fields next to a "
                                   "DeepSpeed JSON", f"set it in {config_file} instead (or use \"auto\" there), "
                                   "or remove config_file"))
    else:
        stage = _get(ds, "zero_stage", "int", DEEPSPEED_KEYS["zero_stage"].default)
        for device_key, path_key in (("offload_optimizer_device", "offload_optimizer_nvme_path"),
                                     ("offload_param_device", "offload_param_nvme_path")):
            if _get(ds, device_key, "str", "none") == "nvme" and not _get(ds, path_key, "str"):
                out.append(Problem(file, f"distributed.deepspeed.{path_key}", f'needed with {device_key} = "nvme"',
                                   f'e.g. {path_key} = "/local_nvme"'))
        if _get(ds, "offload_param_device", "str", "none") != "none" and stage != 3:
            out.append(Problem(file, "distributed.deepspeed.offload_param_device",
                               f"parameter offload needs zero_stage = 3 (it is {stage})",
                               "set zero_stage = 3, or offload_param_device = \"none\"", severity="warning"))
        for leaf in ("zero3_init", "zero3_save_16bit_model"):
            if _get(ds, leaf, "bool", False) and stage != 3:
                out.append(Problem(file, f"distributed.deepspeed.{leaf}", f"only acts with zero_stage = 3 (it is {stage})",
                                   "remove it, or set zero_stage = 3", severity="note"))

    # What DeepSpeed will be told, from the plugin fields or the JSON; transformers checks each
    # against TrainingArguments at start and fails the run on a mismatch.
    source, where = dict(ds), "distributed.deepspeed"
    if config_file is not None:
        loaded, why = read_deepspeed_json(_resolve(config_file, base_dir))
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
        train_value = _get(training, train_key, "float", default)
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


_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _rules_script(file: str, data: Mapping[str, Any], base_dir: Path | None) -> list[Problem]:
    """[script]: one script (a file or a module) in place of [model], [data], [training] and [metrics]."""
    out: list[Problem] = []
    script = _table(data, "script")
    for section in ENGINE_SECTIONS:
        if section in data:
            out.append(Problem(file, section, f"[{section}] is tuitrain's engine's, but [script] runs your own script "
                               "(it builds its own model, data and TrainingArguments)",
                               f"remove the [{section}] section, or remove [script] to train with tuitrain's engine"))
    path = _get(script, "path", "str")
    module = _get(script, "module", "str")
    where = "relative paths start from the profile's folder" + (f" ({base_dir})" if base_dir else "")
    if "path" in script and "module" in script:
        out.append(Problem(file, "script", "both script.path and script.module are given",
                           'keep one: path = "train.py" (a file) or module = "pkg.train" (run as python -m)'))
    elif "path" not in script and "module" not in script:
        out.append(Problem(file, "script", "no script: neither script.path nor script.module is given",
                           'set script.path = "train.py", or script.module = "pkg.train"'))
    if path is not None:
        resolved = _resolve(path, base_dir)
        if not path.strip():
            out.append(Problem(file, "script.path", "is empty", 'e.g. path = "train.py"'))
        elif not _is_file(resolved):
            what = "is a folder, not a file" if _is_dir(resolved) else "no such file"
            out.append(Problem(file, "script.path", f"{what}: {resolved}", where))
    if module is not None and not _MODULE_NAME.match(module):
        out.append(Problem(file, "script.module", f"{toml_literal(module)} is not a module name",
                           'give a dotted name as python -m takes it, e.g. module = "pkg.train"'))
    workdir = _get(script, "workdir", "str")
    if workdir is not None and not _is_dir(_resolve(workdir, base_dir)):
        out.append(Problem(file, "script.workdir", f"no such folder: {_resolve(workdir, base_dir)}", where))
    resume_arg = _get(script, "resume_arg", "str")
    if resume_arg is not None and (not resume_arg.startswith("-") or any(c.isspace() for c in resume_arg)):
        out.append(Problem(file, "script.resume_arg", f"{toml_literal(resume_arg)} is not an option name",
                           'e.g. resume_arg = "--resume_from_checkpoint" (or "--resume=" for one argument)'))
    if _get(_table(data, "run"), "output_dir", "str"):
        out.append(Problem(file, "run.output_dir", "has no effect with [script]: checkpoints go where the script's "
                           "TrainingArguments(output_dir=...) says, and tuitrain reads it from the Trainer",
                           "remove it (pass the folder to your script in script.args)", severity="warning"))
    return out


def _rules_run(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    name = _get(_table(data, "run"), "name", "str")
    if name is not None and (not name.strip() or name in (".", "..") or any(c in name for c in "/\\\0")):
        out.append(Problem(file, "run.name", f"{toml_literal(name)} cannot name a run (it names folders)",
                           'use letters, digits, "-" and "_", e.g. name = "my-run"'))
    output_dir = _get(_table(data, "run"), "output_dir", "str", "")
    if output_dir:
        problem = output_dir_problem(file, output_dir)
        if problem is not None:
            out.append(problem)
    return out


def output_dir_problem(file: str, raw: str, cwd: Path | None = None) -> Problem | None:
    """Why run.output_dir cannot hold checkpoints (under a file, read-only, a file itself), or None.
    A relative one starts from the folder `tuitrain run` is started in, as the launch reads it."""
    fix = 'set run.output_dir to a folder you can write, or remove it (the run directory\'s output/)'
    if "\0" in raw:
        return Problem(file, "run.output_dir", "contains a NUL character, which no path can", fix)
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else (cwd or Path.cwd()) / path
    refusal = unusable_folder(path)
    return Problem(file, "run.output_dir", refusal, fix) if refusal else None


def check_value(file: str, key: str, value: Any) -> list[Problem]:
    """The problems of one value at a dotted key of a schema section ("distributed.fsdp.version"):
    its type, choices and range, worded as validation words them. An unknown key: one problem."""
    section, *tables, leaf = key.split(".")
    keys: Mapping[str, KeySpec | TableSpec | TableListSpec] = SCHEMA.get(section, {})
    for name in tables:
        table = keys.get(name)
        keys = table.keys if isinstance(table, TableSpec) else {}
    spec = keys.get(leaf)
    if not isinstance(spec, KeySpec):
        return [Problem(file, key, "not a key tuitrain knows")]
    return _check_key(file, key, leaf, value, spec)


# --------------------------------------------------------------------------- entry point

def validate_profile(data: dict[str, Any], file: str, base_dir: Path | None,
                     *, training_fields: Mapping[str, FieldSpec] | None = _AUTO,
                     model_types: frozenset[str] | None = _AUTO) -> list[Problem]:
    """Every problem of a profile (errors, warnings, notes), in file order where possible.

    `base_dir` is where relative data paths start (the profile's folder; None = the cwd).
    `training_fields` defaults to the installed TrainingArguments (`training_args_fields()`);
    pass None to check as if transformers were not installed. `model_types`: the model_type names
    [model.config] may use (default: the installed transformers'; None: not checked).
    """
    fields = training_args_fields() if training_fields is _AUTO else training_fields
    out: list[Problem] = []
    if not isinstance(data, dict):
        return [Problem(file, "", "a profile must be a TOML document of tables")]
    for section, value in data.items():
        if section not in SCHEMA:
            if isinstance(value, dict):
                hint = did_you_mean(section, SCHEMA, fmt="[{}]")
                out.append(Problem(file, section, f"unknown section [{section}]",
                                   hint or "sections: " + ", ".join(f"[{s}]" for s in SCHEMA)))
            else:
                spots = _elsewhere(section, "", fields)
                out.append(Problem(file, section, "a key outside any section",
                                   f"did you mean {' or '.join(spots)}? (put it under [{spots[0].split('.')[0]}])"
                                   if spots else "put keys under a section such as [run] or [training]"))
            continue
        if not isinstance(value, dict):
            out.append(Problem(file, section, f"expected a [{section}] table, got {describe_value(value)}",
                               f"write it as a [{section}] section"))
            continue
        if section == "training":
            out.extend(_check_training(file, value, _task_fields(fields, _task(data))))
        else:
            found = _check_table(file, section, section, value, SCHEMA[section], fields)
            out.extend(_with_task_fix(p, value.get("task"), data) if p.key == "model.task" else p for p in found)
    out.extend(_rules_run(file, data))
    if "script" in data:  # the script builds its own model, data and TrainingArguments
        out.extend(_rules_script(file, data, base_dir))
    else:
        known_types = (installed_model_types() if model_types is _AUTO else model_types) if fields is not None else None
        out.extend(_rules_model(file, data, base_dir, known_types))
        out.extend(_rules_data(file, data, base_dir))
        out.extend(_rules_data_files(file, data, base_dir))
        out.extend(_rules_training(file, data, fields))
        out.extend(_rules_metrics(file, data))
    out.extend(_rules_hardware(file, data))
    out.extend(_rules_distributed(file, data))
    out.extend(_rules_strategies(file, data, base_dir, fields))
    return out

