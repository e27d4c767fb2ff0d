"""The model: pretrained from a folder or Hub id, or from an inline config for training from scratch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuitrain.engine.errors import EngineError, first_line, not_loadable
from tuitrain.profile.settings import ModelSettings

_AUTO_CLASSES = {
    "sequence-classification": "AutoModelForSequenceClassification",
    "causal-lm": "AutoModelForCausalLM",
    "token-classification": "AutoModelForTokenClassification",
    "seq2seq": "AutoModelForSeq2SeqLM",
}


def auto_class(task: str) -> Any:
    import transformers

    return getattr(transformers, _AUTO_CLASSES[task])


def label_arguments(model: ModelSettings, labels: list[str] | None) -> dict[str, Any]:
    """What a classifier's config needs: its number of labels (token classification: the tag names too)."""
    if model["task"] == "sequence-classification":
        return {"num_labels": model["num_labels"]}
    if model["task"] == "token-classification" and labels:
        return {"num_labels": len(labels), "id2label": dict(enumerate(labels)), "label2id": {n: i for i, n in enumerate(labels)}}
    return {}


def build_model(model: ModelSettings, tokenizer: Any, base: Path | None = None, labels: list[str] | None = None,
                quantized: dict[str, Any] | None = None) -> Any:
    """`base`: a folder holding the from-scratch base model a LoRA run kept (a resume loads it
    rather than drawing new weights). `labels`: the tag names of token classification.
    `quantized`: from_pretrained's quantization_config and device_map, for a QLoRA base (a
    pretrained one, or `base`)."""
    auto = auto_class(model["task"])
    extra = label_arguments(model, labels)
    if base is not None:
        if not (base / "config.json").is_file():
            raise EngineError(f"[model.lora]: the checkpoint to resume from has no base model beside it ({base} is missing); "
                              "resume from a checkpoint of a run with the same [model.lora]")
        loaded = _quantizing(auto.from_pretrained, str(base), **(quantized or {}))
    elif model.get("name_or_path"):
        source = model["name_or_path"]
        try:
            loaded = _quantizing(auto.from_pretrained, source, trust_remote_code=model.get("trust_remote_code", False),
                                 **extra, **(quantized or {}))
        except OSError as exc:
            raise EngineError(not_loadable("model.name_or_path", source, "model", exc)) from exc
    else:
        config = model["config"]
        if config is None:  # validation refuses it first (rules.model); a profile run unchecked is told here
            raise EngineError("[model]: no model: neither model.name_or_path nor [model.config] is given")
        inline = dict(config)
        # the tokenizer's special ids, not the model type's defaults (gpt2's 50256 in a 128-token vocabulary):
        # the Trainer aligns them at train start, but a LoRA base is saved before that
        for key in ("bos_token_id", "eos_token_id"):
            token_id = getattr(tokenizer, key, None)
            if token_id is not None:
                inline.setdefault(key, token_id)
        if model["task"] == "seq2seq":  # generation starts from and stops at the tokenizer's own ids
            for key, token_id in (("pad_token_id", tokenizer.pad_token_id), ("eos_token_id", tokenizer.eos_token_id),
                                  ("decoder_start_token_id", tokenizer.pad_token_id)):
                if token_id is not None:
                    inline.setdefault(key, token_id)
        loaded = _from_config(auto, inline, len(tokenizer), extra)
    if loaded.config.pad_token_id is None and tokenizer.pad_token_id is not None:
        loaded.config.pad_token_id = tokenizer.pad_token_id
    return loaded


def _quantizing(load: Any, source: str, **kwargs: Any) -> Any:
    """from_pretrained; with a quantization_config, bitsandbytes' refusal (no kernel for this device,
    a layer it cannot pack) is one line naming model.lora.quantize."""
    if kwargs.get("quantization_config") is None:
        return load(source, **kwargs)
    try:
        return load(source, **kwargs)
    except (ValueError, RuntimeError, NotImplementedError, ImportError) as exc:
        raise EngineError(f"model.lora.quantize: bitsandbytes cannot quantize this model here: {first_line(exc)}; "
                          "remove model.lora.quantize to train on a full-precision base") from exc


def _from_config(auto: Any, inline: dict[str, Any], vocab: int, extra: dict[str, Any]) -> Any:
    """A from-scratch model; a config transformers refuses is one line naming [model.config]."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    model_type = inline.pop("model_type")
    if model_type not in CONFIG_MAPPING_NAMES:
        raise EngineError(f"model.config.model_type = {model_type!r}: not a model type of the installed transformers; "
                          "use the model_type of a model's config.json, e.g. \"bert\"")
    inline["vocab_size"] = max(int(inline.get("vocab_size", 0)), vocab)
    try:
        return auto.from_config(AutoConfig.for_model(model_type, **inline, **extra))
    except _config_refusals() as exc:
        raise EngineError(f"[model.config] ({model_type}): transformers refuses it: {_cause(exc)}; "
                          "fix the [model.config] keys it names") from exc


def _config_refusals() -> tuple[type[BaseException], ...]:
    """What transformers raises for a config it refuses (huggingface_hub's strict dataclasses
    raise their own error, which is no ValueError)."""
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:
        return (ValueError, TypeError)
    return (ValueError, TypeError, StrictDataclassError)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return first_line(cause)
