"""Renamed and retired [training] keys: one table (`MIGRATIONS`), read by load.py (moving the
keys), shape.py (saying so) and overrides.py (a --set of an old key).

Each `Migration`'s `new` is its dotted destination ("training.eval_strategy", "model.tokenizer"), or
None to drop it; `only_if_absent`: migrate only when the installed TrainingArguments lacks the old key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .training_args import FieldSpec


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


def applicable_migration(key: str, fields: Mapping[str, FieldSpec] | None) -> Migration | None:
    """The migration for a [training] key, if it applies with the installed transformers."""
    m = MIGRATIONS.get(key)
    if m is None:
        return None
    if m.only_if_absent and (fields is None or key in fields):
        return None
    return m
