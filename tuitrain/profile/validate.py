"""Validation: every problem of a profile at once, each naming its key and a fix.

`validate_profile(data, file, base_dir)` checks the shape (shape.py: the schema's sections and keys, and
[training] against the installed TrainingArguments), then the rules between keys, section by section
(rules/), in the order below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .problems import Problem
from .rules.data import rules_data
from .rules.data_files import rules_data_files
from .rules.distributed import rules_distributed
from .rules.hardware import rules_hardware
from .rules.metrics import rules_metrics
from .rules.model import rules_model, with_task_fix
from .rules.run import rules_run
from .rules.script import rules_script
from .rules.strategies import rules_strategies
from .rules.training import rules_training
from .shape import shape_problems
from .training_args import FieldSpec, installed_model_types, training_args_fields

__all__ = ["validate_profile"]

_AUTO: Any = object()


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
    if not isinstance(data, dict):
        return [Problem(file, "", "a profile must be a TOML document of tables")]
    out = [with_task_fix(p, data) if p.key == "model.task" else p for p in shape_problems(data, file, fields)]
    out.extend(rules_run(file, data))
    if "script" in data:  # the script builds its own model, data and TrainingArguments
        out.extend(rules_script(file, data, base_dir))
    else:
        known_types = (installed_model_types() if model_types is _AUTO else model_types) if fields is not None else None
        out.extend(rules_model(file, data, base_dir, known_types))
        out.extend(rules_data(file, data, base_dir))
        out.extend(rules_data_files(file, data, base_dir))
        out.extend(rules_training(file, data, fields))
        out.extend(rules_metrics(file, data))
    out.extend(rules_hardware(file, data))
    out.extend(rules_distributed(file, data))
    out.extend(rules_strategies(file, data, base_dir, fields))
    return out
