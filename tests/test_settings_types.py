"""The typed settings (tuitrain.profile.settings) declare exactly SCHEMA's keys, section by section and table by
table, each with a type its kind allows (optional when its default is None), so the keys mypy checks a reader
against cannot drift from the keys a profile may hold; and a profile with defaults has only declared keys."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import pytest

from tuitrain.profile import Profile, load_profile, settings_with_defaults
from tuitrain.profile.lookup import BUILTIN_DIR
from tuitrain.profile.rules.common import key_spec, section_of
from tuitrain.profile.schema import SCHEMA, KeySpec, TableListSpec, TableSpec
from tuitrain.profile.settings import SectionName, SettingKey, Settings

# The Python types each SCHEMA kind allows (shape.py's checks), besides None for an optional key.
KIND_TYPES: dict[str, set[Any]] = {
    "str": {str}, "int": {int}, "float": {float}, "bool": {bool},
    "list[str]": {list[str]}, "list[float]": {list[float]},
    "gpus": {list[int | str]}, "gpus|count": {list[int | str], int}, "dict": {dict[str, Any]},
}
# Keys with no default that are never None with defaults: settings_with_defaults sets the run's name and the task's
# metrics; a listed machine's required keys.
ALWAYS_SET = {"run.name", "metrics.names"}


def _members(hint: Any) -> set[Any]:
    return set(typing.get_args(hint)) if typing.get_origin(hint) in (typing.Union, types.UnionType) else {hint}


def _typed_table(hint: Any) -> Any:
    """The TypedDict a sub-table's hint holds (`X | None`), or None."""
    found = [m for m in _members(hint) if typing.is_typeddict(m)]
    return found[0] if found else None


def differences(keys: dict[str, Any], declared: Any, where: str, required: tuple[str, ...] = ()) -> list[str]:
    """How a SCHEMA table and its TypedDict differ: keys on one side only, and types the kind does not allow."""
    hints = typing.get_type_hints(declared)
    out = [f"{where}{k}: in SCHEMA, not in {declared.__name__}" for k in keys if k not in hints]
    out += [f"{where}{k}: in {declared.__name__}, not in SCHEMA" for k in hints if k not in keys]
    for key, spec in keys.items():
        if key not in hints:
            continue
        hint = hints[key]
        if isinstance(spec, KeySpec):
            optional = spec.default is None and f"{where}{key}" not in ALWAYS_SET and key not in required
            allowed = KIND_TYPES[spec.kind] | ({type(None)} if optional else set())
            if _members(hint) != allowed:
                out.append(f"{where}{key}: {spec.kind!r} (default {spec.default!r}) typed {hint}")
        elif isinstance(spec, TableListSpec):
            item = typing.get_args(next(m for m in _members(hint) if m is not type(None)))[0]
            out += differences(spec.keys, item, f"{where}{key}[].", spec.required)
        elif isinstance(spec, TableSpec) and spec.keys:
            table = _typed_table(hint)
            out += [f"{where}{key}: a table typed {hint}"] if table is None else differences(spec.keys, table, f"{where}{key}.")
        elif _members(hint) != {dict[str, Any], type(None)}:  # a free table with no keys of its own
            out.append(f"{where}{key}: a free table typed {hint}")
    return out


def test_settings_declare_every_schema_key_and_only_those() -> None:
    hints = typing.get_type_hints(Settings)
    assert set(hints) == set(SCHEMA)
    out: list[str] = []
    for section, keys in SCHEMA.items():
        if section == "training":  # TrainingArguments' open set
            assert hints[section] == dict[str, Any]
            continue
        table = _typed_table(hints[section])
        assert table is not None, section
        out += differences(keys, table, f"{section}.")
    assert out == []


def test_the_check_sees_a_key_missing_on_either_side_and_a_wrong_type() -> None:
    class Short(typing.TypedDict, total=False):
        seed: int
        extra: str
        name: int

    keys = {"seed": KeySpec("int", 42), "name": KeySpec("str"), "queue": KeySpec("bool", False)}
    assert differences(keys, Short, "run.") == [
        "run.queue: in SCHEMA, not in Short", "run.extra: in Short, not in SCHEMA",
        "run.name: 'str' (default None) typed <class 'int'>"]


def _undeclared(value: dict[str, Any], declared: Any, where: str = "") -> list[str]:
    hints = typing.get_type_hints(declared)
    out = []
    for key, item in value.items():
        if key not in hints:
            out.append(f"{where}{key}")
        elif isinstance(item, dict) and (table := _typed_table(hints[key])) is not None:
            out += _undeclared(item, table, f"{where}{key}.")
        elif isinstance(item, list) and item and isinstance(item[0], dict):
            inner = typing.get_args(next(m for m in _members(hints[key]) if m is not type(None)))[0]
            out += [m for each in item for m in _undeclared(each, inner, f"{where}{key}[].")]
    return out


@pytest.mark.parametrize("path", sorted(BUILTIN_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_each_builtin_profile_with_defaults_has_only_declared_keys(path: Path) -> None:
    settings = settings_with_defaults(load_profile(path))
    assert _undeclared(dict(settings), Settings) == []


def test_listed_machines_and_strategy_tables_are_declared() -> None:
    data = {"distributed": {"strategy": "fsdp", "fsdp": {"version": 2},
                            "deepspeed": {"zero_stage": 3},
                            "machines": [{"host": "a", "gpus": [0]}, {"host": "b", "python": "/p"}]},
            "model": {"lora": {"r": 4}, "train_tokenizer": {"kind": "wordpiece"}},
            "script": {"path": "train.py"}}
    settings = settings_with_defaults(Profile(path=None, data=data))
    assert _undeclared(dict(settings), Settings) == []


def test_the_rules_key_names_are_schema_s_plain_keys_and_sections() -> None:
    """rules.common.value_or_default / table_of take `SettingKey` / `SectionName`: exactly SCHEMA's."""
    plain = {f"{section}.{key}" for section, keys in SCHEMA.items() for key, spec in keys.items()
             if isinstance(spec, KeySpec)}
    plain |= {f"{section}.{key}.{leaf}" for section, keys in SCHEMA.items() for key, spec in keys.items()
              if isinstance(spec, TableSpec) for leaf in spec.keys}
    assert set(typing.get_args(SettingKey)) == plain
    assert set(typing.get_args(SectionName)) == set(SCHEMA)
    for dotted in typing.get_args(SettingKey):
        assert section_of(dotted) in SCHEMA and isinstance(key_spec(dotted), KeySpec)


def test_a_rank_told_to_train_a_tokenizer_it_has_no_table_for_says_so_in_one_line(tmp_path: Path) -> None:
    """settings["model"]["train_tokenizer"] is None unless the table is given (validation refuses the profile
    first): the engine's typed reader says so instead of failing on None."""
    from tuitrain.engine.errors import EngineError
    from tuitrain.engine.tokenizer import build_tokenizer

    settings = settings_with_defaults(Profile(path=None, data={"model": {"config": {"model_type": "bert"}}}))
    with pytest.raises(EngineError, match=r"no tokenizer: set model.tokenizer, or add a \[model.train_tokenizer\]"):
        build_tokenizer(settings["model"], ["a b"], tmp_path, is_main=True)
