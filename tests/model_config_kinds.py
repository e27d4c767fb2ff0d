"""The [model.config] types of the installed transformers, as tuitrain/profile/model_config_snapshot.json
holds them: `tests/test_model_config_kinds.py` compares the two, and

    .venv/bin/python tests/model_config_kinds.py --write

regenerates the snapshot after moving the pinned transformers (imports it: seconds)."""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tuitrain.profile.model_config import SNAPSHOT

# The model types a profile builds from scratch most often; any other type's keys are checked against
# the keys every config has (PretrainedConfig's).
MODEL_TYPES = ("albert", "bart", "bert", "deberta-v2", "distilbert", "electra", "gemma", "gpt2", "gpt_neo",
               "gpt_neox", "llama", "mistral", "modernbert", "mt5", "opt", "phi", "qwen2", "qwen3", "roberta", "t5")


def _hints(cls: type) -> dict[str, Any]:
    """Each field's annotation, evaluated in the module of the class that declares it (typing.get_type_hints
    fails on the whole class when one annotation names something only a type checker imports)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        names = {**vars(typing), **(vars(module) if module else {})}
        for name, annotation in klass.__dict__.get("__annotations__", {}).items():
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, names)  # transformers' own annotations
                except Exception:  # noqa: BLE001 - an annotation that cannot be read here: not checked
                    continue
            out[name] = annotation
    return out


def config_kinds(cls: type) -> dict[str, dict[str, Any]]:
    """{key: {"kinds": [...], "default": ...}} of a config class's simple fields (int, float, bool, str, list,
    dict); a field of another type, or whose annotation cannot be read, is left out."""
    from tuitrain.engine.training_args_probe import describe, field_default

    hints = _hints(cls)
    out: dict[str, dict[str, Any]] = {}
    for field in dataclasses.fields(cls):
        if field.name.startswith("_") or not field.init or field.name not in hints:
            continue
        kinds, _, _ = describe(hints[field.name])
        if not kinds or "any" in kinds:
            continue
        out[field.name] = {"kinds": kinds, "default": field_default(field)}
    return out


def installed_table() -> dict[str, Any]:
    import transformers
    from transformers import PretrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    common = config_kinds(PretrainedConfig)
    types = {}
    for name in MODEL_TYPES:
        own = config_kinds(CONFIG_MAPPING[name])
        types[name] = {key: spec for key, spec in own.items() if common.get(key) != spec}
    return {"version": transformers.__version__, "common": common, "model_types": types}


if __name__ == "__main__":
    if "--write" in sys.argv:
        SNAPSHOT.write_text(json.dumps(installed_table(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {SNAPSHOT}")
    else:
        print(json.dumps(installed_table(), indent=1, sort_keys=True))
