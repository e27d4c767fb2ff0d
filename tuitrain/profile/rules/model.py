"""[model]: a model to start from (name_or_path or [model.config], not both), its config against the model
type, the tokenizer, labels and class weights, [model.lora]; and the fix for a model.task that is no task."""

from __future__ import annotations

from dataclasses import replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Mapping

from tuitrain.installed import distribution_version

from ..model_config import accepts, config_keys, exact
from ..problems import Problem, close_matches, did_you_mean
from ..schema import GENERATOR_TASKS, QUANTIZE, TASKS
from ..settings import SettingKey
from ..values import describe_value, is_kind, toml_literal, type_problem
from .common import is_dir, is_file, path_exists, relative_fix, resolve_path, table_of, value_of, value_or_default

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
        problem = type_problem(file, f"model.config.{leaf}", value, spec.kinds, _config_example(leaf, spec.kinds,
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
    dat, model = table_of(data, "data"), table_of(data, "model")
    generated = value_or_default(dat, "data.generate")
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


def with_task_fix(problem: Problem, data: Mapping[str, Any]) -> Problem:
    """A shape problem of model.task with the fix the data points to, when there is one."""
    value = table_of(data, "model").get("task")
    fix = _task_fix(value, data) if isinstance(value, str) and value not in TASKS else None
    return replace(problem, fix=fix) if fix else problem


def _model_type_problem(file: str, model_type: str, known: frozenset[str] | None) -> Problem | None:
    if known is None or model_type in known:
        return None
    hint = did_you_mean(model_type, sorted(known))
    return Problem(file, "model.config.model_type", f"{toml_literal(model_type)} is not a model type of the "
                   "installed transformers", hint or 'e.g. model_type = "bert" (the name in a model\'s config.json)')


# what a folder holds when from_pretrained can load it (a PEFT adapter's folder holds adapter_config.json)
_LOADABLE = {"name_or_path": ("config.json", "adapter_config.json"),
             "tokenizer": ("tokenizer_config.json", "tokenizer.json", "config.json")}


def rules_model(file: str, data: Mapping[str, Any], base_dir: Path | None,
                model_types: frozenset[str] | None = None) -> list[Problem]:
    out: list[Problem] = []
    model = table_of(data, "model")
    dat = table_of(data, "data")
    task = value_or_default(model, "model.task")
    name = value_or_default(model, "model.name_or_path")
    config = model.get("config") if isinstance(model.get("config"), dict) else None
    tokenizer = value_or_default(model, "model.tokenizer")
    train_tok = model.get("train_tokenizer") if isinstance(model.get("train_tokenizer"), dict) else None

    if name and config is not None:
        out.append(Problem(file, "model", "both model.name_or_path and [model.config] are given",
                           "keep model.name_or_path to fine-tune a pretrained model, "
                           "or [model.config] to train one from scratch"))
    elif not name and config is None:
        out.append(Problem(file, "model", "no model: neither model.name_or_path nor [model.config] is given",
                           'set model.name_or_path = "<Hub id or folder>", '
                           'or add a [model.config] table with model_type = "bert"'))
    for leaf, raw, what, holds in (("name_or_path", name, "model", "config.json"),
                                   ("tokenizer", tokenizer, "tokenizer", "tokenizer_config.json")):
        path = resolve_path(raw, base_dir) if raw else None
        fix = f'give the folder save_pretrained wrote (it holds {holds}), or a Hub id such as "bert-base-uncased"'
        if path is None:
            continue
        if raw.startswith((".", "/", "~")) and not path_exists(path):  # a path, not a Hub id
            out.append(Problem(file, f"model.{leaf}", f"no such folder: {path}", relative_fix(base_dir)))
        elif is_file(path):  # the launch reads an existing path as that path
            out.append(Problem(file, f"model.{leaf}", f"{path} is a file, not a {what} folder", fix))
        elif is_dir(path) and not any((path / known).is_file() for known in _LOADABLE[leaf]):
            out.append(Problem(file, f"model.{leaf}", f"{path} holds no {' or '.join(_LOADABLE[leaf])}: not a {what} "
                               "folder transformers can load", fix))
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
            dotted: SettingKey = "data.block_size" if task == "causal-lm" else "data.max_length"
            length = value_or_default(dat, dotted)
            if length > positions:
                out.append(Problem(file, dotted,
                                   f"{length} tokens is more than the model's {positions} positions "
                                   "(model.config.max_position_embeddings)",
                                   f"set {dotted} = {positions}, or raise max_position_embeddings"))
    if tokenizer and train_tok is not None:
        out.append(Problem(file, "model.train_tokenizer",
                           "both model.tokenizer and [model.train_tokenizer] are given", "keep one"))
    lora = model.get("lora")
    if isinstance(lora, dict):
        out.extend(_lora_problems(file, lora, value_or_default(table_of(data, "distributed"), "distributed.strategy")))
    names = value_of(model, "labels", "list")
    if names is not None and task != "token-classification":
        out.append(Problem(file, "model.labels", f'used by task "token-classification" only; task is {toml_literal(task)}',
                           "remove it (model.num_labels counts a classifier's labels)", severity="warning"))
    elif names is not None and len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        out.append(Problem(file, "model.labels", f"names {', '.join(map(toml_literal, twice))} more than once",
                           "list each tag once, in class id order"))
    weights = value_of(model, "class_weights", "list")
    if weights is not None:
        if task in ("causal-lm", "seq2seq"):
            out.append(Problem(file, "model.class_weights", f"ignored for task {toml_literal(task)}",
                               "remove it", severity="warning"))
        elif task == "token-classification" and names is None:
            pass  # the tags are counted in the data, in the rank
        else:
            labels = len(names) if task == "token-classification" and names is not None else value_or_default(model, "model.num_labels")
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


