"""Print the installed transformers' TrainingArguments fields (and model types) as one JSON table.

Run as `python -m tuitrain.engine.training_args_probe` by `tuitrain/profile/training_args.py`, which
caches the table per transformers install (filled in the background by
`python -m tuitrain.profile.training_args_fill`; until then the snapshot of this table shipped with
tuitrain stands in): the CLI and the app never import transformers themselves (it takes seconds).
The table: {"version", "location", "fields": {name: {kinds, optional, default, choices, help}},
"model_types"}. A failure exits non-zero with the reason as the last line on stderr.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Mapping

SIMPLE: dict[type, str] = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict",
                           tuple: "list"}


def extra_choices(name: str) -> list[str] | None:
    """Choices the type does not say: report_to's integrations."""
    if name == "report_to":
        try:
            from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK
        except Exception:  # noqa: BLE001 - transformers' internals move between versions: no list then
            return None
        return ["all", "none"] + sorted(INTEGRATION_TO_CALLBACK)
    return None


def describe(tp: Any) -> tuple[list[str], bool, list[Any] | None]:
    """A field's type -> (kinds, optional, choices)."""
    if isinstance(tp, str):
        return ["any"], False, None
    if tp is type(None):
        return [], True, None
    if tp is typing.Any:
        return ["any"], False, None
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        kinds: list[str] = []
        optional, choices = False, None
        for arg in typing.get_args(tp):
            k, o, c = describe(arg)
            optional = optional or o
            kinds += [x for x in k if x not in kinds]
            if c:
                choices = (choices or []) + [v for v in c if v not in (choices or [])]
        return kinds, optional, choices
    if origin is typing.Literal:
        values = list(typing.get_args(tp))
        kinds = []
        for v in values:
            kind = "bool" if isinstance(v, bool) else SIMPLE.get(type(v), "any")
            if kind not in kinds:
                kinds.append(kind)
        return kinds, False, [v for v in values if not isinstance(v, bool)] or None
    if origin in (list, tuple, set):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return ["list"], False, describe(args[0])[2] if len(args) == 1 else None
    if origin is dict:
        return ["dict"], False, None
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            values = [m.value for m in tp]
            return [SIMPLE.get(type(values[0]), "str") if values else "str"], False, values
        if tp in SIMPLE:
            return [SIMPLE[tp]], False, None
    return ["any"], False, None


def jsonable(value: Any) -> Any:
    """A default or choice as JSON holds it (an enum as its value; None for what JSON cannot hold)."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None
    return value


def field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return jsonable(f.default)
    if f.default_factory is not dataclasses.MISSING:
        try:
            return jsonable(f.default_factory())
        except Exception:  # noqa: BLE001 - a default factory of any transformers version: no default then
            return None
    return None


def training_args_table() -> dict[str, Any]:
    """The table (imports transformers: seconds)."""
    import transformers
    from transformers import TrainingArguments

    try:
        hints = typing.get_type_hints(TrainingArguments)
    except Exception:  # noqa: BLE001 - hints of any transformers version: the field types then
        hints = {}
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(TrainingArguments):
        if not f.init or f.name.startswith("_"):
            continue
        kinds, optional, choices = describe(hints.get(f.name, f.type))
        meta: Mapping[str, Any] = f.metadata or {}
        if meta.get("choices") is not None:
            choices = list(meta["choices"])
        if choices is None:
            choices = extra_choices(f.name)
        fields[f.name] = {
            "kinds": kinds or ["any"],
            "optional": optional,
            "default": field_default(f),
            "choices": [jsonable(c) for c in choices] if choices else None,
            "help": meta.get("help", "") if isinstance(meta.get("help", ""), str) else "",
        }
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        model_types: list[str] | None = sorted(CONFIG_MAPPING_NAMES)
    except Exception:  # noqa: BLE001 - transformers' internals move between versions: no model types then
        model_types = None
    return {"version": transformers.__version__, "location": str(Path(transformers.__file__).resolve().parent),
            "fields": fields, "model_types": model_types}


def main() -> int:
    json.dump(training_args_table(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
