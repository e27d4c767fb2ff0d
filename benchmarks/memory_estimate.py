"""The memory estimate against the real peak (issue 37, "fits before it starts"): for models built from a config on
the GPU, each a profile as `tuitrain plan` reads it, the estimate's peak (tuitrain.launch.memory: the tensors, what
`torch.cuda.max_memory_allocated` measures) beside the peak of a few steps of the Trainer the engine runs. The goal:
within 25 %.

    python benchmarks/memory_estimate.py            # on a CUDA GPU (scripts/gpu_check.sh runs it; ~1 minute on an H100)
    python benchmarks/memory_estimate.py --rehearse # on the CPU: the same cases shrunk, trained 2 steps, no peak

Each case trains `--steps` steps of a fixed-length random batch (no padding: the estimate's sequence length is
the batch's) with the Trainer's defaults (fused AdamW), bf16 where the profile says so, LoRA through peft as the
engine applies it. The table goes into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tuitrain.launch.memory import estimate_memory
from tuitrain.launch.memory_fit import gib, summary
from tuitrain.launch.model_size import ModelShape
from tuitrain.launch.model_source import profile_model, read_model_config
from tuitrain.profile import Profile, settings_with_defaults

GOAL = 0.25
BERT_BASE = {"model_type": "bert"}  # the bert defaults: BERT-base, 110M parameters
GPT2_SMALL = {"model_type": "gpt2"}  # the gpt2 defaults: GPT-2 small, 124M parameters
LLAMA_1B = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5504, "num_hidden_layers": 16,
            "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 32000, "dtype": "bfloat16"}
# (name, [model], [model.config], [data], [training], [hardware], [model.lora])
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], Any]] = [
    ("BERT-base encoder, classification, AdamW fp32, batch 32 × 512", {"task": "sequence-classification"},
     BERT_BASE, {"max_length": 512}, {"per_device_train_batch_size": 32}, {"mixed_precision": "no"}, None),
    ("GPT-2 small decoder, bf16 autocast, batch 8 × 1024", {"task": "causal-lm"}, GPT2_SMALL,
     {"block_size": 1024}, {"per_device_train_batch_size": 8}, {"mixed_precision": "bf16"}, None),
    ("GPT-2 small, bf16, gradient checkpointing, batch 8 × 1024", {"task": "causal-lm"}, GPT2_SMALL,
     {"block_size": 1024}, {"per_device_train_batch_size": 8, "gradient_checkpointing": True},
     {"mixed_precision": "bf16"}, None),
    ("GPT-2 small, bf16, LoRA r = 8 (c_attn), batch 8 × 1024", {"task": "causal-lm"}, GPT2_SMALL,
     {"block_size": 1024}, {"per_device_train_batch_size": 8}, {"mixed_precision": "bf16"}, {"r": 8}),
    ("Llama-like 0.9B in bf16 weights, AdamW, batch 4 × 1024", {"task": "causal-lm"}, LLAMA_1B,
     {"block_size": 1024}, {"per_device_train_batch_size": 4}, {"mixed_precision": "bf16"}, None),
]
# --rehearse: the same cases, small enough for a CPU
SHRUNK = {"bert": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "vocab_size": 500},
          "gpt2": {"n_embd": 64, "n_layer": 2, "n_head": 2, "vocab_size": 500},
          "llama": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                    "num_key_value_heads": 2, "vocab_size": 500}}


def settings_of(case: tuple[Any, ...], rehearse: bool) -> dict[str, Any]:
    _, model, config, data, training, hardware, lora = case
    config = dict(config)
    data, training = dict(data), dict(training)
    if rehearse:
        config.update(SHRUNK[config["model_type"]])
        data = {k: min(v, 64) for k, v in data.items()}
        training["per_device_train_batch_size"] = 2
    profile = {"model": {**model, "config": config, **({"lora": lora} if lora else {})}, "data": data,
               "training": training, "hardware": {"accelerator": "cpu" if rehearse else "cuda", **hardware}}
    return settings_with_defaults(Profile(path=None, data=profile))


def estimate_of(settings: dict[str, Any]) -> Any:
    shape, setup = profile_model(settings, read_model_config(settings, None), 1, 1)
    assert isinstance(shape, ModelShape), shape
    return shape, setup, estimate_memory(shape, setup)


def train(settings: dict[str, Any], steps: int, device: str) -> float:
    """Peak bytes the GPU allocated over `steps` Trainer steps (0.0 on the CPU)."""
    import torch
    import transformers

    model_settings, data, training = settings["model"], settings["data"], settings["training"]
    config = dict(model_settings["config"])
    model_type = config.pop("model_type")
    auto = {"causal-lm": transformers.AutoModelForCausalLM,
            "sequence-classification": transformers.AutoModelForSequenceClassification}[model_settings["task"]]
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        assert before < 2**26, f"{before} bytes still allocated from the case before"
    with torch.device(device):
        model = auto.from_config(transformers.AutoConfig.for_model(model_type, **config))
    if model_settings.get("lora"):
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(task_type="CAUSAL_LM", r=model_settings["lora"]["r"],
                                                           lora_alpha=16))
    tokens = data["block_size"] if model_settings["task"] == "causal-lm" else data["max_length"]
    batch = training["per_device_train_batch_size"]
    vocab = config["vocab_size"] if "vocab_size" in config else model.config.vocab_size

    class Random(torch.utils.data.Dataset):  # type: ignore[misc]
        def __len__(self) -> int:
            return batch * steps

        def __getitem__(self, index: int) -> dict[str, Any]:
            ids = torch.randint(3, vocab, (tokens,))
            label = ids if model_settings["task"] == "causal-lm" else torch.tensor(index % 2)
            return {"input_ids": ids, "attention_mask": torch.ones(tokens, dtype=torch.long), "labels": label}

    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(
            output_dir=out, max_steps=steps, report_to="none", save_strategy="no", logging_strategy="no",
            disable_tqdm=True, dataloader_num_workers=0, use_cpu=device == "cpu",
            bf16=settings["hardware"]["mixed_precision"] == "bf16",
            **{k: v for k, v in training.items() if k in ("per_device_train_batch_size", "gradient_checkpointing")})
        trainer = transformers.Trainer(model=model, args=args, train_dataset=Random())
        trainer.train()
        del trainer
    del model
    gc.collect()
    return float(torch.cuda.max_memory_allocated()) if device == "cuda" else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rehearse", action="store_true", help="on the CPU: small cases, no peak measured")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    device = "cpu" if args.rehearse else "cuda"
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("memory_estimate: no CUDA GPU here (--rehearse runs the CPU's part)", file=sys.stderr)
            return 2
        print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    rows = ["| case | estimate (GiB) | measured peak (GiB) | error | within 25 % |", "|---|---|---|---|---|"]
    worst = 0.0
    for case in CASES:
        _, _, estimate = estimate_of(settings_of(case, rehearse=False))  # the full-size case, on any machine
        print(f"{case[0]}: {summary(estimate)}\n  {'; '.join(estimate.words)}", flush=True)
        started = time.monotonic()
        measured = train(settings_of(case, args.rehearse), args.steps, device)
        print(f"  trained {args.steps} steps{' (shrunk, on the CPU)' if args.rehearse else ''} in "
              f"{time.monotonic() - started:.1f} s", flush=True)
        if measured:
            error = (estimate.peak - measured) / measured
            worst = max(worst, abs(error))
            rows.append(f"| {case[0]} | {gib(estimate.peak)} | {gib(measured)} | {error:+.0%} | "
                        f"{'yes' if abs(error) <= GOAL else 'no'} |")
        else:
            rows.append(f"| {case[0]} | {gib(estimate.peak)} | (not measured on the CPU) | | |")
    print("\n".join(rows))
    if device == "cuda":
        print(f"worst error {worst:.0%} (goal: within {GOAL:.0%})")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
