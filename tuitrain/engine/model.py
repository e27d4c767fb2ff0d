"""The model: pretrained from a folder or Hub id, or from an inline config for training from scratch."""

from __future__ import annotations

from typing import Any


def build_model(model: dict[str, Any], tokenizer: Any) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    classify = model["task"] == "sequence-classification"
    auto = AutoModelForSequenceClassification if classify else AutoModelForCausalLM
    extra = {"num_labels": model["num_labels"]} if classify else {}
    if model.get("name_or_path"):
        loaded = auto.from_pretrained(model["name_or_path"], trust_remote_code=model.get("trust_remote_code", False), **extra)
    else:
        inline = dict(model["config"])
        model_type = inline.pop("model_type")
        inline["vocab_size"] = max(int(inline.get("vocab_size", 0)), len(tokenizer))
        config = AutoConfig.for_model(model_type, **inline, **extra)
        loaded = auto.from_config(config)
    if loaded.config.pad_token_id is None and tokenizer.pad_token_id is not None:
        loaded.config.pad_token_id = tokenizer.pad_token_id
    return loaded
