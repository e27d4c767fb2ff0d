"""The installed transformers' TrainingArguments fields (and model types), known without importing
transformers here.

A subprocess imports transformers once, introspects ``dataclasses.fields(TrainingArguments)`` and
prints a JSON table; the table is cached per transformers version under
``$XDG_CACHE_HOME/tuitrain/`` (default ``~/.cache/tuitrain/``) and in-process.

Also here: the data-driven table of renamed / retired [training] keys (`MIGRATIONS`).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuitrain.atomic import write_text_atomic
from tuitrain.installed import distribution_version

# Printed as JSON by a child interpreter: {"version": str, "fields": {name: {...}}}.
_INTROSPECT = r'''
import dataclasses, enum, json, sys, types, typing
import transformers
from transformers import TrainingArguments

try:
    hints = typing.get_type_hints(TrainingArguments)
except Exception:
    hints = {}

SIMPLE = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict",
          tuple: "list"}

def extra_choices(name):
    if name == "report_to":
        try:
            from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK
            return ["all", "none"] + sorted(INTEGRATION_TO_CALLBACK)
        except Exception:
            return None
    return None

def describe(tp):
    """-> (kinds: list[str], optional: bool, choices: list | None)"""
    if isinstance(tp, str):
        return ["any"], False, None
    if tp is type(None):
        return [], True, None
    if tp is typing.Any:
        return ["any"], False, None
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        kinds, optional, choices = [], False, None
        for arg in typing.get_args(tp):
            k, o, c = describe(arg)
            optional = optional or o
            for x in k:
                if x not in kinds:
                    kinds.append(x)
            if c:
                choices = (choices or []) + [v for v in c if v not in (choices or [])]
        return kinds, optional, choices
    if origin is typing.Literal:
        values = [v for v in typing.get_args(tp)]
        kinds = []
        for v in values:
            k = "bool" if isinstance(v, bool) else SIMPLE.get(type(v), "any")
            if k not in kinds:
                kinds.append(k)
        return kinds, False, [v for v in values if not isinstance(v, bool)] or None
    if origin in (list, tuple, set):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        choices = None
        if len(args) == 1:
            choices = describe(args[0])[2]
        return ["list"], False, choices
    if origin is dict:
        return ["dict"], False, None
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            values = [m.value for m in tp]
            return [SIMPLE.get(type(values[0]), "str") if values else "str"], False, values
        if tp in SIMPLE:
            return [SIMPLE[tp]], False, None
    return ["any"], False, None

def jsonable(value):
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return None

fields = {}
for f in dataclasses.fields(TrainingArguments):
    if not f.init or f.name.startswith("_"):
        continue
    kinds, optional, choices = describe(hints.get(f.name, f.type))
    meta_choices = f.metadata.get("choices") if f.metadata else None
    if meta_choices is not None:
        choices = [c for c in meta_choices]
    if choices is None:
        choices = extra_choices(f.name)
    if f.default is not dataclasses.MISSING:
        default = jsonable(f.default)
    elif f.default_factory is not dataclasses.MISSING:
        try:
            default = jsonable(f.default_factory())
        except Exception:
            default = None
    else:
        default = None
    fields[f.name] = {
        "kinds": kinds or ["any"],
        "optional": optional,
        "default": default,
        "choices": [jsonable(c) for c in choices] if choices else None,
        "help": (f.metadata or {}).get("help", "") if isinstance((f.metadata or {}).get("help", ""), str) else "",
    }
try:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    model_types = sorted(CONFIG_MAPPING_NAMES)
except Exception:
    model_types = None
json.dump({"version": transformers.__version__, "fields": fields, "model_types": model_types}, sys.stdout)
'''


@dataclass(frozen=True)
class FieldSpec:
    """One TrainingArguments field in simple form.

    `type` is "bool" | "int" | "float" | "str" | "list" | "dict" | "any", prefixed "optional-" when
    None is allowed; a union of several kinds (e.g. ``str | list[str]``) has type "any" and lists
    them in `accepts`. `choices` holds enum / literal values (for lists: allowed elements).
    """

    name: str
    type: str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    accepts: tuple[str, ...] = ()
    help: str = ""

    @property
    def base_type(self) -> str:
        return self.type.removeprefix("optional-")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tuitrain"


def transformers_version() -> str | None:
    return distribution_version("transformers")


def cache_path(version: str) -> Path:
    return cache_dir() / f"training-args-{version}.json"


def introspect_training_args(python: str | None = None, timeout: float = 120.0) -> dict[str, Any] | None:
    """Run the introspection in a child interpreter; the raw JSON table, or None on any failure."""
    try:
        done = subprocess.run(
            [python or sys.executable, "-c", _INTROSPECT],
            capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        table = json.loads(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "")
    except (ValueError, IndexError):
        return None
    if not isinstance(table, dict) or not isinstance(table.get("fields"), dict):
        return None
    return table



def _specs_from_table(table: dict[str, Any]) -> dict[str, FieldSpec]:
    specs: dict[str, FieldSpec] = {}
    for name, raw in table["fields"].items():
        kinds = [k for k in raw.get("kinds") or ["any"] if k]
        if "any" in kinds or not kinds:
            simple, accepts = "any", ()
        elif len(kinds) == 1:
            simple, accepts = kinds[0], (kinds[0],)
        else:
            simple, accepts = "any", tuple(kinds)
        if raw.get("optional") and simple != "any":
            simple = "optional-" + simple
        choices = raw.get("choices")
        specs[name] = FieldSpec(
            name=name,
            type=simple,
            default=raw.get("default"),
            choices=tuple(choices) if choices else None,
            accepts=accepts,
            help=raw.get("help") or "",
        )
    return specs


@functools.cache
def _cached_table(version: str | None) -> dict[str, Any] | None:
    if version is None:
        return None
    path = cache_path(version)
    table: dict[str, Any] | None = None
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
        # a table cached before model types were recorded is introspected again, once
        if not isinstance(table, dict) or not isinstance(table.get("fields"), dict) or "model_types" not in table:
            table = None
    except (OSError, ValueError):
        table = None
    if table is None:
        table = introspect_training_args()
        if table is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, json.dumps(table, indent=1, sort_keys=True), mode=0o644)
        except OSError:
            pass  # a read-only cache folder only costs the next process a few seconds
    return table


@functools.cache
def _cached_fields(version: str | None) -> dict[str, FieldSpec] | None:
    table = _cached_table(version)
    if table is None:
        return None
    try:
        return _specs_from_table(table)
    except (KeyError, TypeError, AttributeError):
        return None


def installed_model_types() -> frozenset[str] | None:
    """The model_type names the installed transformers knows (its CONFIG_MAPPING); None when unknown."""
    table = _cached_table(transformers_version())
    names = table.get("model_types") if table else None
    if not isinstance(names, list):
        return None
    return frozenset(n for n in names if isinstance(n, str))


def training_args_fields() -> dict[str, FieldSpec] | None:
    """Name -> FieldSpec for the installed TrainingArguments; None when transformers is missing."""
    fields = _cached_fields(transformers_version())
    return dict(fields) if fields is not None else None


# ---------------------------------------------------------------------------------------------
# Renamed and retired [training] keys. One table; load.py and validate.py both read it.
#   new: dotted destination ("training.eval_strategy", "model.tokenizer"), or None to drop.
#   only_if_absent: migrate only when the installed TrainingArguments lacks the old key.


@dataclass(frozen=True)
class Migration:
    old: str
    new: str | None
    note: str
    only_if_absent: bool = False


MIGRATIONS: dict[str, Migration] = {
    m.old: m
    for m in (
        Migration("evaluation_strategy", "training.eval_strategy",
                  "renamed to eval_strategy in transformers"),
        Migration("tokenizer", "model.tokenizer",
                  "the tokenizer is not a TrainingArguments key (Trainer takes it as processing_class); "
                  "tuitrain reads it from model.tokenizer"),
        Migration("no_cuda", "training.use_cpu", "renamed to use_cpu in transformers"),
        Migration("push_to_hub_token", "training.hub_token", "renamed to hub_token in transformers"),
        Migration("overwrite_output_dir", None,
                  "not needed: tuitrain never overwrites checkpoints (resume a run instead); dropped"),
        Migration("warmup_ratio", "training.warmup_steps",
                  "this transformers has no warmup_ratio; a float in [0, 1) in warmup_steps is a ratio",
                  only_if_absent=True),
    )
}


def applicable_migration(key: str, fields: dict[str, FieldSpec] | None) -> Migration | None:
    """The migration for a [training] key, if it applies with the installed transformers."""
    m = MIGRATIONS.get(key)
    if m is None:
        return None
    if m.only_if_absent and (fields is None or key in fields):
        return None
    return m
