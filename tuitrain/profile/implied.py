"""What some keys of a profile imply beyond themselves: TrainingArguments other keys set when [training] leaves
them unset (one place for the rule, read by the engine, which sets them, and by `plan`, which says so), the mixed
precision a run trains in (`mixed_precision`: read by the engine, the accelerate config, `plan` and validation), and
what [model.lora] trains and keeps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuitrain.profile.schema import LORA_KEYS

PRECISION_FLAGS = ("bf16", "fp16")


def mixed_precision(profile: Mapping[str, Any]) -> tuple[str, str]:
    """(precision, the key that says it): the one mixed precision a run trains in, for the engine (TrainingArguments'
    bf16 / fp16), the accelerate config (mixed_precision), `plan` and validation (fp16 on the CPU). It is
    hardware.mixed_precision when that is "bf16" or "fp16"; else training.bf16 or training.fp16 when one is true
    (the Trainer trains in it whatever accelerate is told, so accelerate is told the same); else "no". A profile
    that says two different precisions (validation refuses it) is read by hardware.mixed_precision."""
    hardware, training = profile.get("hardware"), profile.get("training")
    mixed = hardware.get("mixed_precision") if isinstance(hardware, Mapping) else None  # validation says what else is wrong
    if mixed in PRECISION_FLAGS:
        return mixed, "hardware.mixed_precision"
    training = training if isinstance(training, Mapping) else {}
    for flag in PRECISION_FLAGS:
        if training.get(flag) is True:
            return flag, f"training.{flag}"
    return "no", "hardware.mixed_precision"


def precision_note(profile: Mapping[str, Any]) -> str | None:
    """The one line `plan` says when [training] sets the precision that hardware.mixed_precision leaves at "no"."""
    precision, key = mixed_precision(profile)
    if not key.startswith("training."):
        return None
    return (f"mixed precision {precision} from {key} = true (hardware.mixed_precision is \"no\"): the accelerate config "
            f'and the Trainer both use {precision}; hardware.mixed_precision = "{precision}" says it in one place')


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
    """One line per implied key, one for a precision [training] sets, and one for [model.lora], for `plan`."""
    notes = [f"training.{key} = {value!r} (not set in the profile): {why}; set it in [training] to choose"
             for key, (value, why) in implied_training(profile).items()]
    return notes + [line for line in (precision_note(profile), lora_note(profile)) if line]


def lora_note(profile: Mapping[str, Any]) -> str | None:
    """What [model.lora] trains and how its base is held, so `plan` says it before a launch."""
    lora = (profile.get("model") or {}).get("lora")
    if not isinstance(lora, dict):
        return None
    targets = lora.get("target_modules")
    where = f"on {', '.join(map(str, targets))}" if targets else "on peft's default layers for the model type"
    quantize = lora.get("quantize")
    default = {key: spec.default for key, spec in LORA_KEYS.items()}
    if quantize:
        doubled = quantize in ("nf4", "fp4") and lora.get("double_quant", default["double_quant"])
        double = " with double quantization" if doubled else ""
        base = f"the base frozen and loaded quantized to {quantize}{double} (bitsandbytes)"
    else:
        base = "the base frozen in full precision"
    return (f"model.lora: LoRA adapters r={lora.get('r', default['r'])}, alpha={lora.get('alpha', default['alpha'])} "
            f"{where}, {base}; "
            "checkpoints hold the adapter, `tuitrain export` merges it into a full-precision model")
