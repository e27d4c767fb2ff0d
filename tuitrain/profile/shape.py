"""The shape check: every section, table and key of a profile against the schema (schema.py), and
[training] against the installed TrainingArguments (training_args.py): unknown keys with the fix, kinds,
choices and ranges. The rules between keys come after it (rules/)."""

from __future__ import annotations

from collections import ChainMap
from typing import Any, Mapping

from .problems import Problem, did_you_mean
from .rules.common import task_of
from .schema import FOREIGN_KEYS, FOREIGN_PREFIXES, SCHEMA, KeySpec, TableListSpec, TableSpec
from .training_args import FieldSpec, training_args_failure
from .training_migrations import applicable_migration
from .values import choice_problem, describe_value, is_kind, range_problem, toml_literal, type_problem

# [training] keys owned by another section, or by tuitrain itself.
TRAINING_OWNED: dict[str, tuple[str, str]] = {
    "output_dir": ("the output folder is set in [run], not [training]",
                   'move it: [run] output_dir = "..." (default: the run directory\'s output/)'),
    "local_rank": ("set by the launcher for each rank", "remove it from [training]"),
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


def _example_for(leaf: str, spec: KeySpec) -> str:
    if spec.example:
        return spec.example
    if spec.choices:
        return f"{leaf} = {toml_literal(spec.choices[0])}"
    if spec.default is not None and spec.default != "":
        return f"{leaf} = {toml_literal(spec.default)}"
    samples = {"int": "1", "float": "0.5", "bool": "true", "str": '"..."', "dict": "{ }"}
    return f"{leaf} = {samples.get(spec.kind, '[...]')}"


def _check_key(file: str, key: str, leaf: str, value: Any, spec: KeySpec) -> list[Problem]:
    if not is_kind(value, spec.kind):
        return [type_problem(file, key, value, [spec.kind], _example_for(leaf, spec))]
    out: list[Problem] = []
    if spec.kind in ("str", "int", "float"):
        if spec.choices and value not in spec.choices:
            out.append(choice_problem(file, key, value, spec.choices))
        range_p = range_problem(file, key, leaf, value, spec.min, spec.min_exclusive, spec.max)
        if range_p:
            out.append(range_p)
    elif spec.kind == "list[float]":
        for i, item in enumerate(value):
            if not is_kind(item, "float"):
                out.append(type_problem(file, f"{key}[{i}]", item, ["float"], _example_for(leaf, spec)))
            else:
                range_p = range_problem(file, f"{key}[{i}]", leaf, item, spec.min, spec.min_exclusive, spec.max)
                if range_p:
                    out.append(range_p)
    elif spec.kind == "list[str]":
        for i, item in enumerate(value):
            if not isinstance(item, str):
                out.append(type_problem(file, f"{key}[{i}]", item, ["str"], _example_for(leaf, spec)))
            elif spec.choices and item not in spec.choices:
                out.append(choice_problem(file, f"{key}[{i}]", item, spec.choices))
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


def check_table(file: str, prefix: str, section: str, table: dict[str, Any],
                keys: Mapping[str, KeySpec | TableSpec | TableListSpec],
                fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    """The problems of one table's keys (`prefix` names it, in `section`) against `keys`, sub-tables included."""
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
                out.extend(check_table(file, key, section, value, spec.keys, fields))
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
        out.extend(check_table(file, where, section, item, spec.keys, fields))
        for leaf in spec.required:
            if leaf not in item:
                out.append(Problem(file, f"{where}.{leaf}", "missing", f"e.g. {_example_for(leaf, spec.keys[leaf])}"))
    return out


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
                p = range_problem(file, key, leaf, value, *range_rule)
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
        return [type_problem(file, key, value, kinds, _training_example(leaf, spec))]
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
                out.append(choice_problem(file, key, item, spec.choices))
    if leaf == "max_steps" and is_kind(value, "int") and value != -1 and value < 1:
        out.append(Problem(file, key, f"must be at least 1 (or -1 to use num_train_epochs), got {value}"))
    range_rule = TRAINING_RANGES.get(leaf)
    if range_rule:
        p = range_problem(file, key, leaf, value, *range_rule)
        if p:
            out.append(p)
    return out


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


def shape_problems(data: dict[str, Any], file: str, fields: Mapping[str, FieldSpec] | None) -> list[Problem]:
    """The shape problems of a profile's sections, in file order: unknown sections and keys outside any,
    each section's keys against the schema, [training]'s against `fields` (None: transformers is not here)."""
    out: list[Problem] = []
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
            out.extend(_check_training(file, value, _task_fields(fields, task_of(data))))
        else:
            out.extend(check_table(file, section, section, value, SCHEMA[section], fields))
    return out
