"""TrainingArguments that other keys of a profile imply, when [training] leaves them unset: one place for the
rule, read by the engine (which sets them) and by `plan` (which says so)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def implied_training(profile: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """key → (value, why) for each TrainingArguments key the profile implies and [training] does not set."""
    training = profile.get("training") or {}
    metrics = profile.get("metrics") or {}
    out: dict[str, tuple[Any, str]] = {}
    patience = metrics.get("early_stopping_patience")
    if patience:
        why = f"metrics.early_stopping_patience = {patience} stops on the best checkpoint"
        out["load_best_model_at_end"] = (True, why)
        out["metric_for_best_model"] = ("eval_loss", why)
    model = profile.get("model") or {}
    if model.get("task") == "seq2seq":  # Seq2SeqTrainingArguments: evaluation generates, and is scored on it
        why = 'model.task = "seq2seq": evaluation generates text for ROUGE and BLEU to score'
        out["predict_with_generate"] = (True, why)
        length = (profile.get("data") or {}).get("max_target_length") or 64
        out["generation_max_length"] = (length, "data.max_target_length: generated as long as the targets")
    return {key: found for key, found in out.items() if key not in training}


def implied_notes(profile: Mapping[str, Any]) -> list[str]:
    """One line per implied key, for `plan`."""
    return [f"training.{key} = {value!r} (not set in the profile): {why}; set it in [training] to choose"
            for key, (value, why) in implied_training(profile).items()]
