"""LoRA adapters through peft ([model.lora]): the base model frozen, small low-rank layers trained.

Checkpoints then hold the adapter (adapter_model.safetensors, adapter_config.json), not the
base. A base trained from scratch ([model.config]) exists nowhere else, so the run keeps it once,
in <output_dir>/lora-base/ (for a pretrained base, its config only: the labels a task added); a
resume and `tuitrain export` rebuild the model from there and the checkpoint's adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuitrain.engine.errors import EngineError, first_line

LORA_BASE = "lora-base"  # in a run's output folder
_TASK_TYPES = {
    "causal-lm": "CAUSAL_LM",
    "sequence-classification": "SEQ_CLS",
    "token-classification": "TOKEN_CLS",
    "seq2seq": "SEQ_2_SEQ_LM",
}


def layer_names(model: Any) -> set[str]:
    """The last part of each module's name (what peft's target_modules match) and the full names."""
    names: set[str] = set()
    for full, _module in model.named_modules():
        if full:
            names.add(full)
            names.add(full.rsplit(".", 1)[-1])
    return names


def adaptable_layers(model: Any) -> list[str]:
    """The short names of the layers LoRA can adapt (linear, conv1d, embedding), for messages."""
    import torch

    kinds = (torch.nn.Linear, torch.nn.Embedding, torch.nn.Conv1d, torch.nn.Conv2d)
    found = {full.rsplit(".", 1)[-1] for full, module in model.named_modules()
             if full and (isinstance(module, kinds) or type(module).__name__ == "Conv1D")}
    return sorted(found)


def check_target_modules(model: Any, targets: list[str]) -> None:
    """Each name in model.lora.target_modules names a layer of this model (peft says only that
    one of them matched nothing, after building the whole model)."""
    have = layer_names(model)
    model_type = getattr(model.config, "model_type", "this")
    for name in targets:
        if name not in have and not any(full.endswith(f".{name}") for full in have):
            raise EngineError(f"model.lora.target_modules: {name!r} is not a layer of this {model_type} model "
                              f"(its layers: {', '.join(adaptable_layers(model))}); name some of those")


def default_targets(model: Any) -> list[str]:
    from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING

    model_type = getattr(model.config, "model_type", "")
    targets = TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.get(model_type)
    if not targets:
        raise EngineError(f"model.lora.target_modules: peft has no default layers for model type {model_type!r}; "
                          f"name the layers to adapt (its layers: {', '.join(adaptable_layers(model))})")
    return list(targets)


def import_peft() -> Any:
    try:
        import peft
    except ImportError as exc:
        raise EngineError(f"[model.lora]: the peft package does not import here ({first_line(exc)}); "
                          "pip install 'tuitrain[peft]' in this environment") from exc
    return peft


def apply_lora(model: Any, lora: dict[str, Any], task: str) -> Any:
    """The model wrapped by peft with LoRA layers: only they (and a classifier head) train."""
    peft = import_peft()
    targets = list(lora["target_modules"]) if lora.get("target_modules") else default_targets(model)
    check_target_modules(model, targets)
    config = peft.LoraConfig(
        task_type=_TASK_TYPES[task], r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
        target_modules=targets,
    )
    try:
        return peft.get_peft_model(model, config)
    except ValueError as exc:
        raise EngineError(f"[model.lora]: peft refuses it: {first_line(exc)}; fix the [model.lora] keys it names") from exc


def save_base(model: Any, folder: Path, from_scratch: bool, resuming: bool) -> None:
    """Keep what the adapter is relative to: the weights of a base trained from scratch, else its
    config (a pretrained base is read again from model.name_or_path). A resume sharing its
    parent's folder keeps the base there."""
    if resuming and (folder / "config.json").is_file():
        return
    folder.mkdir(parents=True, exist_ok=True)
    if from_scratch:
        model.save_pretrained(str(folder))
    else:
        model.config.save_pretrained(str(folder))


def base_folder(output_dir: str, resume_from: str | None) -> Path | None:
    """Where a from-scratch base was kept by the run a resume continues, or None (a fresh run)."""
    if not resume_from:
        return None
    return Path(resume_from).parent / LORA_BASE
