"""QLoRA ([model.lora].quantize): the frozen base loaded 4- or 8-bit through bitsandbytes, which
runs on this CPU too, so these are real quantized runs: adapters train on the quantized base,
checkpoints hold the adapters, resume continues the step, and export merges the adapters into the
full-precision base."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import TWO_RANKS, check_clean, cli, demo_profile_data, events, losses, minilm_dir, only_run, record
from test_engine_lora import CLM_LORA, MINI_LORA
from tuitrain.profile import validate_profile
from tuitrain.rundir.checkpoints import inspect_checkpoint

pytest.importorskip("peft")
pytest.importorskip("bitsandbytes")

# evaluating mid-run: bitsandbytes' CPU inference repacking at the first eval forward broke the next
# training step (and cannot pack this model's 32-wide layers at all)
CLM_QLORA = CLM_LORA.replace('target_modules = ["c_attn"]', 'target_modules = ["c_attn"]\nquantize = "nf4"').replace(
    'eval_strategy = "no"', 'eval_strategy = "steps"\neval_steps = 1')
QUANTIZED_LINE = re.compile(r"\[tuitrain\] base quantized \((\w+), bitsandbytes\): (\d+) layers")


def errors(data: dict) -> list[str]:
    """The errors about [model.lora] (fsdp on the demo's one process has its own words)."""
    return [str(p) for p in validate_profile(data, "p.toml", None, training_fields=None, model_types=None)
            if p.severity == "error" and p.key.startswith("model.lora")]


def with_lora(lora: dict, strategy: str = "single") -> dict:
    data = demo_profile_data()
    data["model"]["lora"] = lora
    data.setdefault("distributed", {})["strategy"] = strategy
    return data


def quantized_line(run_dir: Path, rank: int) -> tuple[str, int]:
    found = QUANTIZED_LINE.search((run_dir / "logs" / f"rank-{rank}.log").read_text(errors="replace"))
    assert found, f"rank {rank} did not report a quantized base"
    return found.group(1), int(found.group(2))


def test_quantize_is_validated_one_line_per_mistake(monkeypatch) -> None:
    assert errors(with_lora({"r": 4, "quantize": "nf4"})) == []
    assert errors(with_lora({"r": 4, "quantize": "int8"}, "ddp")) == []
    (wrong,) = errors(with_lora({"r": 4, "quantize": "4bit"}))
    assert wrong == 'p.toml: model.lora.quantize: "4bit" is not one of "nf4", "fp4", "int8"; e.g. quantize = "nf4"', wrong
    (close,) = errors(with_lora({"r": 4, "quantize": "int4"}))
    assert close.endswith("did you mean 'int8'?")
    (sharded,) = errors(with_lora({"r": 4, "quantize": "nf4"}, "fsdp"))
    assert "not offered with strategy \"fsdp\"" in sharded and 'strategy = "ddp"' in sharded
    for lora in ({"r": 4, "quantize": "int8", "double_quant": True}, {"r": 4, "double_quant": False}):
        (ignored,) = [str(p) for p in validate_profile(with_lora(lora), "p.toml", None, training_fields=None,
                                                       model_types=None) if p.key == "model.lora.double_quant"]
        assert "warning" in ignored and "applies to a 4-bit base only" in ignored and "remove it" in ignored
    import tuitrain.profile.rules.model as model_rules

    real = model_rules.distribution_version
    monkeypatch.setattr(model_rules, "distribution_version", lambda name: None if name == "bitsandbytes" else real(name))
    (missing,) = errors(with_lora({"r": 4, "quantize": "fp4"}))
    assert "bitsandbytes" in missing and "pip install 'tuitrain[qlora]'" in missing and "\n" not in missing


def test_the_quantization_follows_the_profile_and_keeps_a_classifiers_new_head_whole() -> None:
    import torch

    from tuitrain.engine.lora import quantization_config

    assert quantization_config({"r": 4}, "causal-lm", False, False) is None
    nf4 = quantization_config({"quantize": "nf4", "double_quant": True}, "causal-lm", True, False)
    assert nf4.load_in_4bit and nf4.bnb_4bit_quant_type == "nf4" and nf4.bnb_4bit_use_double_quant
    assert nf4.bnb_4bit_compute_dtype == torch.bfloat16 and nf4.llm_int8_skip_modules is None
    fp4 = quantization_config({"quantize": "fp4", "double_quant": False}, "sequence-classification", False, False)
    assert fp4.bnb_4bit_quant_type == "fp4" and not fp4.bnb_4bit_use_double_quant
    assert fp4.bnb_4bit_compute_dtype == torch.float32 and "classifier" in fp4.llm_int8_skip_modules
    int8 = quantization_config({"quantize": "int8"}, "token-classification", False, True)
    assert int8.load_in_8bit and not int8.load_in_4bit and "classifier" in int8.llm_int8_skip_modules


def test_a_missing_optional_package_is_one_engine_line_naming_its_key_and_extra(monkeypatch) -> None:
    import sys

    from tuitrain.engine.errors import EngineError
    from tuitrain.engine.lora import import_bitsandbytes, import_peft

    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # None in sys.modules: its import raises ImportError
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(EngineError, match=r"^model\.lora\.quantize: the bitsandbytes package does not import here "
                                          r"\(.*\); pip install 'tuitrain\[qlora\]' in this environment$"):
        import_bitsandbytes()
    with pytest.raises(EngineError, match=r"^\[model\.lora\]: the peft package does not import here "
                                          r"\(.*\); pip install 'tuitrain\[peft\]' in this environment$"):
        import_peft()


@pytest.mark.slow
def test_a_4bit_causal_lm_trains_its_adapters_resumes_and_exports_in_full_precision(tmp_path, runs_dir):
    profile = tmp_path / "clm_qlora.toml"
    profile.write_text(CLM_QLORA)
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    parent = only_run(runs_dir)
    assert quantized_line(parent, 0) == ("nf4", 8)  # 2 blocks x (c_attn, attn c_proj, c_fc, mlp c_proj); lm_head whole
    assert sorted(e["step"] for e in events(parent) if e["event"] == "evaluate") == [1, 2, 3, 4]
    output = Path(record(parent)["output_dir"])
    for step in (2, 4):
        folder = output / f"checkpoint-{step}"
        names = {p.name for p in folder.iterdir()}
        assert {"adapter_model.safetensors", "adapter_config.json"} <= names and "model.safetensors" not in names
        assert inspect_checkpoint(folder).complete
    kept = output / "lora-base"
    assert (kept / "model.safetensors").is_file()  # the from-scratch base, kept in full precision
    assert "quantization_config" not in json.loads((kept / "config.json").read_text())

    result = cli("resume", parent.name, "--checkpoint", "checkpoint-2", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    (child,) = [p for p in runs_dir.iterdir() if (p / "run.json").is_file() and p != parent]
    assert quantized_line(child, 0) == ("nf4", 8)
    assert next(e for e in events(child) if e["event"] == "train_begin")["step"] == 2
    # the same kept base quantized again, the same adapters and optimizer: steps 3 and 4 again
    assert losses(child) == pytest.approx({3: losses(parent)[3], 4: losses(parent)[4]}, abs=1e-6)
    # adapters continue only on the base they were trained on
    for change, needle in ((["--set", "model.lora.quantize=int8"], ("checkpoint-2's adapters were trained on an nf4 base, "
                             "and this resume would load an int8 base; resume with the same base (--set model.lora.quantize=nf4)")),
                           (["--set", "model.lora.quantize="], "would load a full-precision base"),
                           (["--set", "model.lora="], "checkpoint-2 holds LoRA adapters, and this resume would train a whole model")):
        check_clean(cli("resume", parent.name, "--checkpoint", "checkpoint-2", *change, runs_dir=runs_dir), needle)
    assert len([p for p in runs_dir.iterdir() if (p / "run.json").is_file()]) == 2  # nothing started

    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    out = tmp_path / "merged"
    result = cli("export", parent.name, str(out), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config
    assert all(0 <= config[k] < config["vocab_size"] for k in ("bos_token_id", "eos_token_id"))  # the tokenizer's
    merged = AutoModelForCausalLM.from_pretrained(str(out))
    assert all(p.dtype == torch.float32 for p in merged.parameters())  # no packed 4-bit weights
    base = load_file(str(kept / "model.safetensors"))
    weights = dict(merged.named_parameters())
    changed = {n for n, t in base.items() if n in weights and not torch.equal(weights[n].detach(), t)}
    assert changed and all(n.endswith("attn.c_attn.weight") for n in changed), changed


@pytest.mark.slow
def test_an_8bit_pretrained_classifier_trains_on_two_ranks_with_its_head_whole(tmp_path, runs_dir):
    profile = tmp_path / "mini_qlora.toml"
    profile.write_text(MINI_LORA.format(model=minilm_dir()).replace(
        'target_modules = ["query", "value"]', 'target_modules = ["query", "value"]\nquantize = "int8"'))
    result = cli("run", str(profile), *TWO_RANKS, runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    kind, count = quantized_line(run_dir, 0)
    assert kind == "int8" and quantized_line(run_dir, 1) == (kind, count)
    assert count == 6 * 6 + 1  # 6 layers x (query, key, value, attention out, intermediate, out) + the pooler
    output = Path(record(run_dir)["output_dir"])
    from safetensors.torch import load_file

    adapter = load_file(str(output / "checkpoint-4" / "adapter_model.safetensors"))
    head = {k: t for k, t in adapter.items() if "classifier" in k}
    assert head and all(t.dtype.is_floating_point for t in head.values())  # the new head trained whole
    assert "quantization_config" not in json.loads((output / "lora-base" / "config.json").read_text())

    out = tmp_path / "merged"
    result = cli("export", run_dir.name, str(out), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    from transformers import AutoModelForSequenceClassification

    merged = AutoModelForSequenceClassification.from_pretrained(str(out))
    trained = {k.split("modules_to_save.")[-1].replace("default.", ""): t for k, t in head.items()}
    for name, param in merged.named_parameters():
        if name.startswith("classifier"):
            assert any(param.detach().equal(t) for t in trained.values()), name
