"""The types of [model.config] keys, known without importing transformers.

transformers (5 and later) refuses a config value of the wrong type when a rank builds the model
("expected int, got str"); this table lets validation say it first. It is shipped data:
`model_config_snapshot.json` holds, for one transformers version, the kinds every config accepts
(PretrainedConfig's fields) and those of common model types (regenerate it with
`.venv/bin/python tests/model_config_kinds.py --write` after moving the pinned transformers).

With another installed version the table is read loosely (a whole number where a float is asked is
accepted, as transformers 4 accepted it): it only refuses what no version takes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .training_args import transformers_version

SNAPSHOT = Path(__file__).with_name("model_config_snapshot.json")


@dataclass(frozen=True)
class ConfigKey:
    """One [model.config] key: the kinds of value it takes ("int", "float", "bool", "str", "list",
    "dict"), and its default for the model type (for an example)."""

    kinds: tuple[str, ...]
    default: Any = None


@lru_cache(maxsize=1)
def _snapshot() -> dict[str, Any]:
    try:
        table = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _keys(raw: Any) -> dict[str, ConfigKey]:
    if not isinstance(raw, dict):
        return {}
    return {name: ConfigKey(tuple(spec["kinds"]), spec.get("default")) for name, spec in raw.items()
            if isinstance(spec, dict) and isinstance(spec.get("kinds"), list)}


def config_keys(model_type: str) -> dict[str, ConfigKey]:
    """The keys whose kinds are known for `model_type`: every config's, and its own where the
    snapshot has that model type (another type: the keys that take the same kinds in every listed
    type that has them, e.g. hidden_size, is_decoder)."""
    table = _snapshot()
    types = table.get("model_types")
    types = types if isinstance(types, dict) else {}
    own = _keys(types[model_type]) if model_type in types else _shared(tuple(sorted(types)))
    return {**_keys(table.get("common")), **own}


@lru_cache(maxsize=1)
def _shared(names: tuple[str, ...]) -> dict[str, ConfigKey]:
    """Keys that at least three listed model types have, all with the same kinds (no default: it differs)."""
    types = _snapshot().get("model_types") or {}
    seen: dict[str, set[tuple[str, ...]]] = {}
    counts: dict[str, int] = {}
    for name in names:
        for key, spec in _keys(types.get(name)).items():
            seen.setdefault(key, set()).add(spec.kinds)
            counts[key] = counts.get(key, 0) + 1
    return {key: ConfigKey(next(iter(kinds))) for key, kinds in seen.items() if len(kinds) == 1 and counts[key] >= 3}


def exact(model_type: str) -> bool:
    """Whether the snapshot speaks for this model type exactly: the installed transformers is its version and the
    type is listed (then a float key refuses a whole number, as transformers does)."""
    table = _snapshot()
    types = table.get("model_types")
    listed = isinstance(types, dict) and model_type in types
    return listed and table.get("version") is not None and table.get("version") == transformers_version()


def kind_of(value: Any) -> str:
    """A TOML value's kind, as config keys name them."""
    for kind, python in (("bool", bool), ("int", int), ("float", float), ("str", str), ("list", list), ("dict", dict)):
        if isinstance(value, python):
            return kind
    return type(value).__name__


def accepts(spec: ConfigKey, value: Any, strict: bool) -> bool:
    """Whether transformers takes `value` for this key (`strict`: as the snapshot's version does)."""
    kind = kind_of(value)
    return kind in spec.kinds or (not strict and kind == "int" and "float" in spec.kinds)
