"""LoRA adapters through peft ([model.lora]): the base model frozen, small low-rank layers trained.

Checkpoints then hold the adapter (adapter_model.safetensors, adapter_config.json), not the
base. A base trained from scratch ([model.config]) exists nowhere else, so the run keeps it once,
in <output_dir>/lora-base/ (for a pretrained base, its config only: the labels a task added); a
resume and `tuitrain export` rebuild the model from there and the checkpoint's adapter.

QLoRA ([model.lora].quantize): the frozen base is loaded quantized by bitsandbytes (4-bit NF4 or
FP4, or 8-bit) from a folder: the pretrained model, or the from-scratch base kept in lora-base/
(saved in full precision first). The adapters train in full precision on top; `export` merges
them into the full-precision base, as QLoRA's authors do.
"""

from __future__ import annotations

import copy
import importlib
import sys
from pathlib import Path
from typing import Any

from tuitrain.atomic import follow_umask
from tuitrain.engine.errors import EngineError, first_line
from tuitrain.engine.low_rank import LOW_RANK_PREFIXES
from tuitrain.profile.settings import LoraSettings, Settings
from tuitrain.rundir.checkpoints import LORA_BASE

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


def _optional_package(name: str, key: str, extra: str) -> Any:
    """An optional extra's package, or one engine line naming the profile key that needs it and the install."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise EngineError(f"{key}: the {name} package does not import here ({first_line(exc)}); "
                          f"pip install 'tuitrain[{extra}]' in this environment") from exc


def import_peft() -> Any:
    return _optional_package("peft", "[model.lora]", "peft")


def apply_lora(model: Any, lora: LoraSettings, task: str) -> Any:
    """The model wrapped by peft with LoRA layers: only they (and a classifier head) train."""
    peft = import_peft()
    targets = list(given) if (given := lora.get("target_modules")) else default_targets(model)
    check_target_modules(model, targets)
    config = peft.LoraConfig(
        task_type=_TASK_TYPES[task], r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
        target_modules=targets,
    )
    try:
        return peft.get_peft_model(model, config)
    except ValueError as exc:
        raise EngineError(f"[model.lora]: peft refuses it: {first_line(exc)}; fix the [model.lora] keys it names") from exc


# the heads a classification task adds: new, so trained in full (peft's modules_to_save), never quantized
_HEADS = {"sequence-classification": ["classifier", "score"], "token-classification": ["classifier", "score"]}


def import_bitsandbytes() -> Any:
    return _optional_package("bitsandbytes", "model.lora.quantize", "qlora")


# parts of training.optim names whose optimizers come from bitsandbytes (transformers' 8-bit, paged, Lion,
# AdEMAMix and RMSprop ones); GaLore's package imports it whatever the optimizer (and APOLLO's is its kin)
_BITSANDBYTES_OPTIMIZERS = ("bnb", "8bit", "paged", "lion", "ademamix", *LOW_RANK_PREFIXES)


def needs_bitsandbytes(profile: Settings) -> bool:
    """Whether a rank of this profile loads bitsandbytes: a quantized base ([model.lora].quantize) or an
    optimizer that comes with it (training.optim)."""
    lora = profile.get("model", {}).get("lora") or {}
    optim = str(profile.get("training", {}).get("optim") or "").lower()
    return bool(lora.get("quantize")) or any(part in optim for part in _BITSANDBYTES_OPTIMIZERS)


def keep_out_bitsandbytes(profile: Settings) -> None:
    """Before transformers loads: a rank that needs no bitsandbytes never imports it. transformers imports
    peft whenever it is installed, and peft imports bitsandbytes, which loads its CPU kernels and logs
    "Failed to load CPU gemm_4bit_forward …" in every rank. None in sys.modules makes an import of it fail
    as a missing package does, which both read as "not installed"."""
    if not needs_bitsandbytes(profile):
        sys.modules.setdefault("bitsandbytes", None)  # type: ignore[arg-type]


def quantization_config(lora: LoraSettings, task: str, bf16: bool, fp16: bool) -> Any | None:
    """transformers' BitsAndBytesConfig for [model.lora].quantize, or None for a full-precision base.
    The 4-bit layers compute in the training's precision (bf16/fp16, else float32)."""
    kind = lora.get("quantize")
    if not kind:
        return None
    import torch
    from transformers import BitsAndBytesConfig

    import_bitsandbytes()
    skip = _HEADS.get(task)  # None keeps transformers' own choice (a language model's output layer stays whole)
    if kind == "int8":
        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_skip_modules=skip)
    compute = torch.bfloat16 if bf16 else torch.float16 if fp16 else torch.float32
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=kind, bnb_4bit_compute_dtype=compute,
                              bnb_4bit_use_double_quant=bool(lora.get("double_quant", True)),
                              llm_int8_skip_modules=skip)


def prepare_quantized(model: Any, gradient_checkpointing: bool) -> Any:
    """peft's preparation of a quantized base for training: norms in float32, inputs that carry
    gradients into the adapters, checkpointing only when the profile asks for it."""
    peft = import_peft()
    return peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=gradient_checkpointing)


def keep_packing_for_training(model: Any) -> None:
    """bitsandbytes repacks a 4-bit layer's weights in place for fast CPU inference at its first
    forward in eval mode (on CPUs with AVX512-BF16), after which a training step fails ("a view of
    a leaf Variable ... in-place operation"), and the repacking needs layers at least 64 wide. An
    evaluation during training must leave the base as it trains: no repacking."""
    import bitsandbytes

    for module in model.modules():
        if isinstance(module, bitsandbytes.nn.Linear4bit):
            module.support_avx512bf16_for_cpu = False


def quantized_layers(model: Any) -> int:
    """How many layers bitsandbytes holds quantized (what the rank's log reports)."""
    import bitsandbytes

    kinds = (bitsandbytes.nn.Linear4bit, bitsandbytes.nn.Linear8bitLt)
    return sum(1 for _name, module in model.named_modules() if isinstance(module, kinds))


def save_base(model: Any, folder: Path, from_scratch: bool, resuming: bool) -> None:
    """Keep what the adapter is relative to: the weights of a base trained from scratch, else its
    config (a pretrained base is read again from model.name_or_path). A resume sharing its
    parent's folder keeps the base there."""
    if resuming and (folder / "config.json").is_file():
        return
    folder.mkdir(parents=True, exist_ok=True)
    if from_scratch:
        model.save_pretrained(str(folder))
        follow_umask(folder)
    else:
        config = copy.deepcopy(model.config)
        for key in ("quantization_config", "_pre_quantization_dtype"):  # export loads the base whole
            if hasattr(config, key):
                delattr(config, key)
        config.save_pretrained(str(folder))


def base_folder(output_dir: str, resume_from: str | None) -> Path | None:
    """Where a from-scratch base was kept by the run a resume continues, or None (a fresh run)."""
    if not resume_from:
        return None
    return Path(resume_from).parent / LORA_BASE
