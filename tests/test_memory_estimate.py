"""Fits before it starts (issue 37): the memory arithmetic against cases computed by hand, the parameter count from a
config against the real count of models built from it, the activations against what a real forward keeps for
backward, and the plan's words (a warning, a refusal, what would fit) against recorded GPUs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cli, demo_profile_data
from tuitrain.hardware.devices import discover
from tuitrain.hardware.host import ProcessMeter
from tuitrain.hardware.probe import Hardware, hardware_from
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.launch import plan_launch
from tuitrain.launch.memory import OPTIMIZERS, MemorySetup, activations, estimate_memory
from tuitrain.launch.memory_fit import GpuRoom, memory_check
from tuitrain.launch.model_size import KNOWN_TYPES, LORA_DEFAULT_TARGETS, ModelShape, Unknown, model_shape
from tuitrain.launch.model_source import ModelConfig, cached_config, read_model_config
from tuitrain.launch.preflight import MachineFacts
from tuitrain.profile import Profile, settings_with_defaults
from tuitrain.profile.model_config import config_keys

NVML = Path(__file__).resolve().parent / "fixtures" / "nvml"
GIB = 2**30


def defaults(model_type: str) -> dict[str, Any]:
    return {k: v.default for k, v in config_keys(model_type).items() if v.default is not None}


def shape_of(config: dict[str, Any], task: str = "causal-lm", labels: int = 2) -> ModelShape:
    shape = model_shape(config, task, labels, defaults=defaults(config["model_type"]))
    assert isinstance(shape, ModelShape), shape
    return shape


# --------------------------------------------------------------------------- a 7B Llama-like model by hand

# Llama-2-7B's config: hidden 4096, intermediate 11008, 32 blocks, 32 heads, vocabulary 32000, untied output.
LLAMA_7B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000, "tie_word_embeddings": False}
BLOCK = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096  # q, k, v, o; gate, up, down; two RMSNorms = 202,383,360
P = 32 * BLOCK + 2 * 32000 * 4096 + 4096  # the blocks, embeddings and output layer, the last norm = 6,738,415,616
# bf16 weights and bf16 mixed precision, AdamW (fused), 8 processes, batch 1 of 2048 tokens, no accumulation
SETUP = MemorySetup(task="causal-lm", weight_dtype="bfloat16", mixed="bf16", batch=1, tokens=2048, world=8,
                    per_machine=8)
# activations in 16-bit: a token keeps 24 bytes × hidden + 8 × intermediate in each block (ACTIVATION_BYTES)
PER_TOKEN = 24 * 4096 + 8 * 11008  # 186,368 bytes
ACTIVATIONS = (32 * 2048 * PER_TOKEN  # every block's, kept for backward: 12,213,813,248
               + 2048 * PER_TOKEN  # one block more while backward works on it: 381,681,664
               + 2048 * 9 * 4096)  # outside the blocks, 9 bytes × hidden a token: 75,497,472 → 12,670,992,384
LOGITS = 12 * 2048 * 32000  # float32 logits, log-softmax and its gradient: 786,432,000


def test_a_7b_llama_has_its_published_parameter_count() -> None:
    assert P == 6_738_415_616 == shape_of(dict(LLAMA_7B)).parameters


def test_7b_bf16_adamw_under_ddp_by_hand() -> None:
    e = estimate_memory(shape_of(dict(LLAMA_7B)), dataclasses.replace(SETUP, strategy="ddp"))
    assert e.weights == 2 * P == 13_476_831_232  # bf16
    assert e.gradients == 2 * P  # bf16, every parameter trained
    assert e.optimizer == 2 * 2 * P == 26_953_662_464  # AdamW: two states a parameter in the parameters' dtype
    assert e.buffers == 2 * P  # DDP's gradient buckets: a second copy of the gradients
    assert (e.activations, e.logits) == (ACTIVATIONS, LOGITS)
    # the peak: weights + optimizer + buckets + the larger of gradients (13.48 GB) and activations with logits
    # (13.46 GB): gradients are freed after each step, activations during backward
    assert e.peak == 2 * P + 4 * P + 2 * P + max(2 * P, ACTIVATIONS + LOGITS) == 67_384_156_160  # 62.8 GiB
    assert not e.accumulating


def test_7b_bf16_adamw_under_fsdp_full_shard_by_hand() -> None:
    e = estimate_memory(shape_of(dict(LLAMA_7B)), dataclasses.replace(SETUP, strategy="fsdp"))
    assert (e.weights, e.gradients, e.optimizer) == (2 * P // 8, 2 * P // 8, 4 * P // 8)  # each an eighth
    # gathered in bf16: what stays outside the blocks (embeddings, output layer, last norm: 262,148,096), two
    # blocks' weights and one block's gradients
    assert e.buffers == (P - 32 * BLOCK + 3 * BLOCK) * 2 == 1_738_596_352
    assert e.peak == 2 * P // 8 + 4 * P // 8 + e.buffers + (ACTIVATIONS + LOGITS) == 20_249_832_448  # 18.9 GiB


def test_7b_bf16_adamw_under_zero3_by_hand() -> None:
    e = estimate_memory(shape_of(dict(LLAMA_7B)), dataclasses.replace(SETUP, strategy="deepspeed", zero_stage=3))
    assert (e.weights, e.gradients) == (2 * P // 8, 2 * P // 8)  # 16-bit weights and gradients, sharded
    # DeepSpeed's mixed precision: float32 master weights (4 bytes) and float32 AdamW states (2 × 4), sharded
    assert e.optimizer == (4 + 2 * 4) * P // 8 == 10_107_623_424
    # its reduce buckets (2 × hidden² in 16-bit) and what ZeRO-3 gathers (as FSDP)
    assert e.buffers == 2 * 4096 * 4096 * 2 + (P - 32 * BLOCK + 3 * BLOCK) * 2 == 1_805_705_216
    # DeepSpeed keeps its gradient partitions: gradients and activations together
    assert e.accumulating
    assert e.peak == (2 * P // 8 + e.optimizer + e.buffers + 2 * P // 8 + ACTIVATIONS + LOGITS) == 28_739_960_832


def test_the_margin_and_the_words_say_how_it_was_counted() -> None:
    e = estimate_memory(shape_of(dict(LLAMA_7B)), dataclasses.replace(SETUP, strategy="ddp"))
    assert e.margin < 0.25 * e.needed
    text = "; ".join(e.words)
    assert "6,738,415,616 parameters, weights in bfloat16" in text and "ddp over 8 processes" in text
    assert "batch 1 × 2048 tokens, 32 blocks of hidden size 4096" in text


@pytest.mark.parametrize(("change", "lower"), [
    ({"checkpointing": True}, "activations"), ({"optimizer": "adamw_bnb_8bit"}, "optimizer"),
    ({"optimizer": "sgd"}, "optimizer"), ({"lora_r": 8}, "optimizer"), ({"batch": 1, "tokens": 512}, "activations"),
    ({"strategy": "deepspeed", "zero_stage": 2, "offload_optimizer": True, "world": 1}, "optimizer"),
    ({"optimizer": "galore_adamw", "optimizer_targets": ("attn", "mlp")}, "optimizer"),
])
def test_each_lever_lowers_its_part(change: dict[str, Any], lower: str) -> None:
    shape = shape_of(dict(LLAMA_7B))
    before = estimate_memory(shape, dataclasses.replace(SETUP, strategy="ddp"))
    after = estimate_memory(shape, dataclasses.replace(SETUP, **{"strategy": "ddp", **change}))
    assert getattr(after, lower) < getattr(before, lower) and after.peak <= before.peak


def test_qlora_packs_the_base_and_trains_only_the_adapters() -> None:
    shape = shape_of(dict(LLAMA_7B))
    e = estimate_memory(shape, dataclasses.replace(SETUP, strategy="single", world=1, lora_r=8, quantize="nf4"))
    adapters = 32 * 8 * (4096 + 4096) * 2  # q_proj and v_proj (peft's default for llama), r × (in + out) each
    assert e.trained == adapters == 4_194_304
    blocks_linear = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)  # what bitsandbytes packs
    packed = int(blocks_linear * (0.5 + 1 / 64))  # nf4 with double quantization: 4.13 bits a weight
    # the rest of the base in float32 (peft's preparation), the adapters in float32
    assert e.weights == packed + (P - blocks_linear) * 4 + adapters * 4
    assert e.gradients == adapters * 4 and e.optimizer == adapters * 2 * 4  # AdamW over the adapters only


# --------------------------------------------------------------------------- the count against transformers

AUTO = {"sequence-classification": "AutoModelForSequenceClassification", "causal-lm": "AutoModelForCausalLM",
        "token-classification": "AutoModelForTokenClassification", "seq2seq": "AutoModelForSeq2SeqLM"}
TINY = {
    "bert": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48},
    "roberta": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48},
    "distilbert": {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 48},
    "gpt2": {"n_embd": 32, "n_layer": 2, "n_head": 2},
    "llama": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 48, "attention_bias": True},
    "mistral": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "intermediate_size": 48, "head_dim": 8},
    "qwen2": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 48},
    "qwen3": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 48, "head_dim": 8},
    "gemma": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
              "intermediate_size": 48, "head_dim": 8},
    "t5": {"d_model": 32, "d_ff": 48, "num_layers": 2, "num_decoder_layers": 3, "num_heads": 2, "d_kv": 16,
           "feed_forward_proj": "gated-gelu"},
    "mt5": {"d_model": 32, "d_ff": 48, "num_layers": 2, "num_heads": 2, "d_kv": 16},
}
TASKS_OF = {"distilbert": ("sequence-classification", "token-classification"),
            "t5": ("seq2seq", "sequence-classification", "token-classification"), "mt5": ("seq2seq",)}


def _real_count(model_type: str, config: dict[str, Any], task: str, labels: int = 3) -> int:
    import transformers

    auto = getattr(transformers, AUTO[task])
    model = auto.from_config(transformers.AutoConfig.for_model(model_type, **config, num_labels=labels))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("model_type", "task"), [
    (t, task) for t in TINY for task in TASKS_OF.get(t, ("causal-lm", "sequence-classification", "token-classification"))])
def test_the_count_from_the_config_is_the_models(model_type: str, task: str) -> None:
    config = {**TINY[model_type], "vocab_size": 300}
    assert shape_of({"model_type": model_type, **config}, task, 3).parameters == _real_count(model_type, config, task)


@pytest.mark.parametrize(("config", "task", "why"), [
    ({"model_type": "phi", "hidden_size": 32}, "causal-lm", "model type 'phi' is not one the estimate knows"),
    ({"model_type": "gpt2"}, "seq2seq", "a gpt2 model for seq2seq is not one the estimate knows"),
    ({"hidden_size": 32}, "causal-lm", "the config names no model_type"),
    ({"model_type": "llama", "hidden_size": "big"}, "causal-lm", "the llama config's hidden_size = 'big' is no size"),
    ({"model_type": "llama", "num_attention_heads": 0}, "causal-lm", "num_attention_heads = 0 is no size"),
])
def test_anything_else_is_unknown_never_a_guess(config: dict[str, Any], task: str, why: str) -> None:
    shape = model_shape(config, task, defaults=defaults(str(config.get("model_type", ""))))
    assert isinstance(shape, Unknown) and why in shape.why


def test_lora_defaults_are_pefts() -> None:
    from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as PEFT

    for model_type, targets in LORA_DEFAULT_TARGETS.items():
        assert list(targets) == list(PEFT[model_type]), model_type


@pytest.mark.parametrize(("model_type", "task", "targets"), [
    ("llama", "causal-lm", None), ("gpt2", "sequence-classification", None), ("bert", "token-classification", None),
    ("llama", "causal-lm", ["q_proj", "k_proj", "down_proj"]), ("t5", "seq2seq", None),
])
def test_loras_trained_count_is_pefts(model_type: str, task: str, targets: list[str] | None) -> None:
    import peft
    import transformers

    config = {**TINY[model_type], "vocab_size": 300}
    model = getattr(transformers, AUTO[task]).from_config(transformers.AutoConfig.for_model(model_type, **config,
                                                                                            num_labels=3))
    task_type = {"causal-lm": "CAUSAL_LM", "sequence-classification": "SEQ_CLS", "token-classification": "TOKEN_CLS",
                 "seq2seq": "SEQ_2_SEQ_LM"}[task]
    wrapped = peft.get_peft_model(model, peft.LoraConfig(task_type=task_type, r=4, target_modules=targets or
                                                         list(LORA_DEFAULT_TARGETS[model_type])))
    trained = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    shape = shape_of({"model_type": model_type, **config}, task, 3)
    setup = MemorySetup(task=task, lora_r=4, lora_targets=tuple(targets or ()))
    assert estimate_memory(shape, setup).trained == trained


# --------------------------------------------------------------------------- activations against a real forward

def _kept_for_backward(model_type: str, config: dict[str, Any], task: str, mode: str, batch: int,
                       tokens: int) -> tuple[int, int]:
    """(bytes a forward keeps for backward, of them autocast's copies of weights), by saved_tensors_hooks; the
    parameters themselves and the logits' log-softmax (counted as logits) left out."""
    import torch
    import transformers

    torch.manual_seed(0)
    model = getattr(transformers, AUTO[task]).from_config(transformers.AutoConfig.for_model(model_type, **config))
    if mode == "half":
        model = model.to(torch.bfloat16)
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    shapes = {tuple(p.shape) for p in model.parameters() if p.dim() == 2}
    kept: dict[int, int] = {}
    copies: dict[int, int] = {}

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        if storage.data_ptr() in params:
            return tensor
        if mode == "mixed" and tensor.dtype == torch.bfloat16 and (
                tuple(tensor.shape) in shapes or tuple(tensor.shape)[::-1] in shapes):
            copies[storage.data_ptr()] = storage.nbytes()
        elif tensor.shape[-1:] != (config["vocab_size"],):  # a logit's log-softmax: counted in the logits
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    ids = torch.randint(3, config["vocab_size"], (batch, tokens))
    labels = ids if task != "sequence-classification" else torch.zeros(batch, dtype=torch.long)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "mixed"):
            model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels)
    return sum(kept.values()) + sum(copies.values()), sum(copies.values())


# attention without dropout, as CUDA's SDPA kernels keep it with or without (the CPU keeps dropped probabilities)
MEASURED = {
    "llama": ({"hidden_size": 128, "intermediate_size": 344, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 4}, "causal-lm"),
    "gpt2": ({"n_embd": 128, "n_layer": 2, "n_head": 4, "attn_pdrop": 0.0}, "causal-lm"),
    "bert": ({"hidden_size": 128, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
              "attention_probs_dropout_prob": 0.0}, "sequence-classification"),
}


@pytest.mark.parametrize("mode", ["fp32", "mixed", "half"])
@pytest.mark.parametrize("model_type", list(MEASURED))
def test_the_activations_are_what_a_forward_keeps(model_type: str, mode: str) -> None:
    config, task = MEASURED[model_type]
    config = {**config, "vocab_size": 500}
    batch, tokens = 2, 48
    measured, copies = _kept_for_backward(model_type, config, task, mode, batch, tokens)
    shape = shape_of({"model_type": model_type, **config}, task)
    setup = MemorySetup(task=task, weight_dtype="bfloat16" if mode == "half" else "float32",
                        mixed="no" if mode == "fp32" else "bf16", batch=batch, tokens=tokens)
    found = activations(shape, setup)
    assert found.weight_copies == pytest.approx(copies, rel=0.02)
    # the logits' log-softmax (4 bytes a logit) is in the logits' 12, not here
    assert found.blocks + found.outside + found.weight_copies == pytest.approx(measured, rel=0.05)


# --------------------------------------------------------------------------- the plan's words on recorded GPUs

def box(name: str) -> Hardware:
    return hardware_from(discover(RecordedNvml(load_table(NVML / f"{name}.json")), ProcessMeter().identify), user="me")


GPT2_SMALL = {"model_type": "gpt2"}  # 124M parameters, vocabulary 50257


def gpt2_settings(gpus: list[int], batch: int = 8, **training: Any) -> dict[str, Any]:
    data = demo_profile_data(
        model={"task": "causal-lm", "num_labels": None}, data={"block_size": 1024, "max_length": None},
        training={"per_device_train_batch_size": batch, **training},
        hardware={"accelerator": "cuda", "gpus": gpus, "mixed_precision": "bf16"},
        distributed={"num_processes": len(gpus), "strategy": "single" if len(gpus) == 1 else "ddp"})
    data["model"]["config"] = dict(GPT2_SMALL)
    data["model"].pop("train_tokenizer", None)
    return settings_with_defaults(Profile(path=None, data=data))


def planned(settings: dict[str, Any], hardware: Hardware, run: Path) -> Any:
    facts = MachineFacts(model=read_model_config(settings, None))
    return plan_launch(settings, hardware, run, "p.toml", machine=facts)


def memory_problems(plan: Any) -> list[Any]:
    return [p for p in plan.problems if "fit" in p.message]


def test_a_run_that_fits_says_its_estimate_and_raises_nothing(tmp_path: Path) -> None:
    plan = planned(gpt2_settings([3]), box("four_gpu_mixed"), tmp_path / "run")  # an idle RTX A6000, 48 GiB
    assert memory_problems(plan) == []
    (line,) = [n for n in plan.notes if n.startswith("GPU memory: ")]
    assert "GiB a GPU ±" in line and "weights 0.5" in line and "logits 4.6" in line
    assert "GPU 3 (NVIDIA RTX A6000) has 48.0 GiB free of 48.0" in line
    assert any(n.startswith("GPU memory model (from [model.config]): gpt2, 124,439,808 parameters") for n in plan.notes)
    assert plan.to_dict()["memory"]["verdict"] == "fits"


def test_a_run_far_too_big_is_refused_with_what_would_fit(tmp_path: Path) -> None:
    plan = planned(gpt2_settings([0], batch=32), box("four_gpu_mixed"), tmp_path / "run")  # 10.6 GiB free of 11
    (problem,) = memory_problems(plan)
    assert problem.is_error and problem.file == "p.toml" and problem.key == "training.per_device_train_batch_size"
    assert problem.message.startswith("does not fit: ≈ ")
    assert "GPU 0 (NVIDIA GeForce GTX 1080 Ti) has 10.6 GiB free of 11.0 (even the low end" in problem.message
    # the largest batch that fits, with the accumulation that keeps the effective batch, and its estimate
    assert "would fit: training.per_device_train_batch_size = 4 with gradient_accumulation_steps = 8 (the same " \
           "effective batch) (≈ " in problem.fix
    assert "training.gradient_checkpointing = true" not in problem.fix  # it alone does not fit: not offered
    assert plan.to_dict()["memory"]["verdict"] == "error" and plan.errors


def test_a_gpu_full_of_others_work_is_refused_and_the_queue_offered(tmp_path: Path) -> None:
    plan = planned(gpt2_settings([1]), box("four_gpu_mixed"), tmp_path / "run")  # 1.8 GiB free of 48
    (problem,) = memory_problems(plan)
    assert problem.is_error and "GPU 1 (NVIDIA RTX A6000) has 1.8 GiB free of 48.0" in problem.message
    # nothing fits in 1.8 GiB, but the card has room once its users are done: the queue waits for that
    assert problem.fix.startswith("no change of these fits, not even two together")
    assert 'hardware.min_free_memory = "' in problem.fix and "tuitrain run --queue" in problem.fix


def test_a_run_near_the_edge_is_a_warning_not_a_refusal(tmp_path: Path) -> None:
    hardware = box("four_gpu_mixed")
    settings = gpt2_settings([0])  # a GTX 1080 Ti: 10.6 GiB free of 11
    plan = planned(settings, hardware, tmp_path / "run")
    estimate = plan.memory.estimate
    free = hardware.gpus[0].memory_total - hardware.gpus[0].memory_used
    # a batch where the high end of the estimate is above the free memory and the low end is below it
    batch = next(b for b in range(1, 33) if (e := estimate_memory(*_shape_setup(settings, b))).needed - e.margin
                 < free < e.needed + e.margin)
    plan = planned(gpt2_settings([0], batch=batch), hardware, tmp_path / "run")
    (problem,) = memory_problems(plan)
    assert problem.severity == "warning" and problem.message.startswith("may not fit: ")
    assert "GPU 0 (NVIDIA GeForce GTX 1080 Ti) has 10.6 GiB free of 11.0" in problem.message
    assert estimate is not None and problem.fix.startswith("would fit: ")


def _shape_setup(settings: dict[str, Any], batch: int) -> tuple[ModelShape, MemorySetup]:
    from tuitrain.launch.model_source import profile_model

    changed = {**settings, "training": {**settings["training"], "per_device_train_batch_size": batch}}
    shape, setup = profile_model(changed, read_model_config(changed, None), 1, 1)
    assert isinstance(shape, ModelShape)
    return shape, setup


def test_seven_b_under_ddp_on_busy_h100s_is_refused_and_sharding_with_checkpointing_would_fit(tmp_path: Path) -> None:
    data = demo_profile_data(model={"task": "causal-lm", "num_labels": None}, data={"block_size": 2048},
                             training={"per_device_train_batch_size": 4},
                             hardware={"accelerator": "cuda", "mixed_precision": "bf16"},
                             distributed={"strategy": "ddp", "num_processes": 8})
    data["model"]["config"] = {**LLAMA_7B, "dtype": "bfloat16"}
    data["model"].pop("train_tokenizer", None)
    settings = settings_with_defaults(Profile(path=None, data=data))
    plan = planned(settings, box("eight_h100"), tmp_path / "run")  # 8 × H100, 48 GiB free on each
    (problem,) = memory_problems(plan)
    assert problem.is_error and "the tightest" not in problem.message
    assert "(weights 12.6, gradients 12.6, optimizer 25.1, activations 47.2" in problem.message
    assert 'training.gradient_checkpointing = true and distributed.strategy = "fsdp"' in problem.fix
    assert any("the tightest of 8 GPUs, GPU" in n for n in plan.notes)
    sharded = {**settings, "distributed": {**settings["distributed"], "strategy": "fsdp"},
               "training": {**settings["training"], "gradient_checkpointing": True}}
    assert memory_problems(planned(sharded, box("eight_h100"), tmp_path / "run")) == []


def test_an_unknown_model_says_so_and_raises_nothing(tmp_path: Path) -> None:
    settings = gpt2_settings([3])
    settings["model"]["config"] = {"model_type": "phi", "hidden_size": 64}
    plan = planned(settings, box("four_gpu_mixed"), tmp_path / "run")
    assert memory_problems(plan) == []
    assert "GPU memory: not estimated: model type 'phi' is not one the estimate knows" in "\n".join(plan.notes)
    assert plan.to_dict()["memory"]["estimate"] is None


def test_a_cpu_plan_says_nothing_of_gpu_memory(tmp_path: Path) -> None:
    settings = settings_with_defaults(Profile(path=None, data=demo_profile_data()))
    plan = planned(settings, box("no_driver"), tmp_path / "run")
    assert plan.memory is None and not any("GPU memory" in n for n in plan.notes)


def test_the_check_compares_with_the_tightest_gpu() -> None:
    shape = shape_of({"model_type": "gpt2"})
    setup = MemorySetup(task="causal-lm", mixed="bf16", batch=8, tokens=1024)
    roomy, tight = GpuRoom("GPU 0", 70 * GIB, 80 * GIB), GpuRoom("GPU 1", 3 * GIB, 80 * GIB)
    check = memory_check(shape, setup, [roomy, tight], "p.toml")
    (problem,) = check.problems
    assert "GPU 1 has 3.0 GiB free of 80" in problem.message
    assert memory_check(shape, setup, [roomy], "p.toml").problems == []
    unknown = memory_check(shape, setup, [GpuRoom("GPU 0", None, None)], "p.toml")
    assert unknown.problems == [] and unknown.estimate is not None


# --------------------------------------------------------------------------- where the config comes from

def test_a_model_folder_and_the_hub_cache_are_read_without_loading_anything(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**LLAMA_7B, "torch_dtype": "bfloat16"}))
    settings = {"script": None, "model": {"name_or_path": "my-model", "config": None}}
    found = read_model_config(settings, tmp_path)
    assert found.config is not None and found.where == str(folder / "config.json")
    cache = tmp_path / "hub"
    snapshot = cache / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert cached_config("org/tiny") == snapshot / "config.json"
    hub = read_model_config({"script": None, "model": {"name_or_path": "org/tiny"}}, tmp_path)
    assert hub.config == {"model_type": "gpt2"} and "Hugging Face cache" in hub.where
    missing = read_model_config({"script": None, "model": {"name_or_path": "org/absent"}}, tmp_path)
    assert missing.config is None and "not in this machine's Hugging Face cache" in (missing.why or "")
    script = read_model_config({"script": {"path": "train.py"}, "model": {}}, tmp_path)
    assert script.why == "a [script] builds its own model"
    assert isinstance(ModelConfig(None, why="x"), ModelConfig)


def test_plan_json_and_validate_say_it_from_the_command_line(tmp_path: Path, monkeypatch) -> None:
    import tomli_w

    data = demo_profile_data(model={"task": "causal-lm", "num_labels": None}, data={"block_size": 1024},
                             training={"per_device_train_batch_size": 32},
                             hardware={"accelerator": "cuda", "gpus": [0], "mixed_precision": "bf16"})
    data["model"]["config"] = {"model_type": "gpt2", "vocab_size": 50257}
    profile = tmp_path / "gpt2.toml"
    profile.write_text(tomli_w.dumps(data))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML / "four_gpu_mixed.json"))
    runs = tmp_path / "runs"
    planned_json = cli("plan", str(profile), "--json", runs_dir=runs)
    memory = json.loads(planned_json.stdout)["memory"]
    assert memory["verdict"] == "error" and memory["estimate"]["parameters"] == 124_439_808
    assert memory["gpus"][0]["gpu"] == "GPU 0 (NVIDIA GeForce GTX 1080 Ti)" and memory["would_fit"]
    validated = cli("validate", str(profile), runs_dir=runs)
    assert validated.returncode == 1 and "Traceback" not in validated.stderr
    assert "training.per_device_train_batch_size: does not fit: ≈" in validated.stderr


# --------------------------------------------------------------------------- any config, any setup

SIZE_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
             "intermediate_size", "head_dim", "max_position_embeddings", "type_vocab_size", "n_embd", "n_layer",
             "n_head", "n_inner", "n_positions", "dim", "n_layers", "n_heads", "hidden_dim", "d_model", "d_ff",
             "num_layers", "num_decoder_layers", "num_heads", "d_kv", "relative_attention_num_buckets")
values = st.one_of(st.integers(-3, 4096), st.none(), st.booleans(), st.text(max_size=3), st.floats(allow_nan=True))
configs = st.builds(lambda model_type, sizes: {"model_type": model_type, **sizes},
                    st.sampled_from([*KNOWN_TYPES, "phi", ""]), st.dictionaries(st.sampled_from(SIZE_KEYS), values))
tasks = st.sampled_from(["causal-lm", "sequence-classification", "token-classification", "seq2seq"])
setups = st.builds(
    MemorySetup, task=tasks, weight_dtype=st.sampled_from(["float32", "bfloat16", "float16"]),
    mixed=st.sampled_from(["no", "bf16", "fp16"]),
    optimizer=st.sampled_from([*OPTIMIZERS, "galore_adamw_8bit_layerwise", "apollo_adamw", "new_optimizer"]),
    optimizer_args=st.sampled_from(["", "rank=16", "rank = x"]), batch=st.integers(1, 64),
    accumulation=st.integers(1, 8), tokens=st.integers(1, 8192), target_tokens=st.integers(0, 512),
    checkpointing=st.booleans(), strategy=st.sampled_from(["single", "ddp", "fsdp", "deepspeed"]),
    world=st.integers(1, 16), per_machine=st.integers(1, 8),
    fsdp_sharding=st.sampled_from(["full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "hybrid_shard_zero2"]),
    fsdp_offload=st.booleans(), zero_stage=st.integers(0, 3), offload_optimizer=st.booleans(),
    offload_param=st.booleans(), lora_r=st.one_of(st.none(), st.integers(1, 64)),
    lora_targets=st.sampled_from([(), ("all-linear",), ("q_proj", "nope")]),
    quantize=st.sampled_from([None, "nf4", "fp4", "int8"]))
rooms = st.lists(st.builds(GpuRoom, st.just("GPU 0"), st.one_of(st.none(), st.integers(0, 100 * GIB)),
                           st.one_of(st.none(), st.integers(1, 100 * GIB))), max_size=3)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, setup=setups, gpus=rooms)
def test_any_config_and_setup_give_an_estimate_or_say_why(config: dict[str, Any], setup: MemorySetup,
                                                          gpus: list[GpuRoom]) -> None:
    shape = model_shape(config, setup.task, 3, defaults=defaults(str(config.get("model_type"))))
    check = memory_check(shape, setup, gpus, "p.toml")
    if isinstance(shape, Unknown):
        assert check.estimate is None and check.problems == [] and shape.why
        return
    e = check.estimate
    assert e is not None and shape.parameters > 0
    parts = (e.weights, e.gradients, e.optimizer, e.activations, e.logits, e.buffers)
    assert min(parts) >= 0 and e.peak >= e.weights + e.optimizer and e.margin >= 0
    for problem in check.problems:  # a refusal only where even the low end is well above the tightest GPU
        room = min(g.free if g.free is not None else g.total or 0 for g in gpus if g.free is not None or g.total)
        assert problem.severity in ("error", "warning") and e.needed + e.margin > room
        assert problem.is_error == (e.needed - e.margin > 1.25 * room)


def test_the_editors_preview_says_the_estimate_and_the_refusal(tmp_path: Path) -> None:
    from tuitrain.tui.editor_model import EditorModel
    from tuitrain.tui.plan_preview import plan_text

    data = demo_profile_data(model={"task": "causal-lm", "num_labels": None}, data={"block_size": 1024},
                             training={"per_device_train_batch_size": 32},
                             hardware={"accelerator": "cuda", "gpus": [0], "mixed_precision": "bf16"})
    data["model"]["config"] = {"model_type": "gpt2", "vocab_size": 50257}
    editor = EditorModel(None, tmp_path)
    check = editor.check(data, editor.begin_check()[1], tmp_path / "runs", hardware=box("four_gpu_mixed"))
    assert [p for p in check.problems if "does not fit" in p.message]
    text = str(plan_text(check))
    assert "GPU memory (an estimate, before anything is loaded)\n≈ " in text
    assert "does not fit: ≈ " in text and "would fit: training.per_device_train_batch_size = 4" in text
    notes = text.split("\nnotes\n", 1)[1]
    assert "GPU memory" not in notes  # said once, in its own part


@pytest.mark.slow
def test_a_run_others_memory_keeps_out_is_refused_now_but_may_wait_in_the_queue(tmp_path: Path, monkeypatch) -> None:
    import tomli_w

    from conftest import record, wait_until_ended

    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML / "four_gpu_mixed.json"))
    data = demo_profile_data(model={"task": "causal-lm", "num_labels": None}, data={"block_size": 1024},
                             hardware={"accelerator": "cuda", "gpus": [1], "mixed_precision": "bf16"})
    data["model"]["config"] = {"model_type": "gpt2", "vocab_size": 50257}
    profile = tmp_path / "gpt2.toml"
    profile.write_text(tomli_w.dumps(data))
    runs = tmp_path / "runs"
    now = cli("run", str(profile), runs_dir=runs)  # GPU 1 has 1.8 GiB free of 48: others hold the rest
    assert now.returncode != 0 and "does not fit: ≈ " in now.stderr and "--queue" in now.stderr
    assert not runs.exists() or not any(runs.iterdir())
    waiting = cli("run", str(profile), "--queue", runs_dir=runs)
    assert waiting.returncode == 0, waiting.stderr
    run_dir = runs / waiting.stdout.strip()
    assert record(run_dir)["status"] == "queued"
    assert cli("cancel", run_dir.name, runs_dir=runs).returncode == 0
    assert wait_until_ended(run_dir)["status"] == "cancelled"
