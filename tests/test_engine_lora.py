"""LoRA adapters through peft ([model.lora]): validation, checkpoints holding the adapter, resume,
and `tuitrain export` merging the adapter into a full model folder."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from conftest import check_clean, cli, demo_profile_data, events, losses, minilm_dir, only_run, record
from tuitrain.atomic import current_umask
from tuitrain.profile import validate_profile
from tuitrain.rundir.checkpoints import inspect_checkpoint

pytest.importorskip("peft")

CLM_LORA = """
[run]
name = "clm-lora"
[model]
task = "causal-lm"
[model.config]
model_type = "gpt2"
n_embd = 32
n_layer = 2
n_head = 2
n_positions = 64
vocab_size = 128
[model.train_tokenizer]
vocab_size = 128
[model.lora]
r = 4
alpha = 8
target_modules = ["c_attn"]
[data]
generate = "sentiment-words"
num_train = 200
num_validation = 20
block_size = 32
[training]
max_steps = 4
per_device_train_batch_size = 8
logging_steps = 1
eval_strategy = "no"
save_steps = 2
learning_rate = 1e-3
[hardware]
accelerator = "cpu"
"""
MINILM = minilm_dir()
MINI_LORA = """
[run]
name = "mini-lora"
[model]
task = "sequence-classification"
name_or_path = "{model}"
num_labels = 2
[model.lora]
r = 4
target_modules = ["query", "value"]
[data]
generate = "sentiment-words"
num_train = 64
num_validation = 16
max_length = 24
[training]
max_steps = 4
per_device_train_batch_size = 8
eval_strategy = "no"
save_steps = 4
logging_steps = 1
learning_rate = 1e-3
[hardware]
accelerator = "cpu"
"""


def problems(lora: dict) -> list[str]:
    data = demo_profile_data()
    data["model"]["lora"] = lora
    return [str(p) for p in validate_profile(data, "p.toml", None, training_fields=None, model_types=None)
            if p.severity == "error"]


def test_lora_table_is_validated_one_line_per_mistake() -> None:
    assert problems({"r": 4, "alpha": 8, "dropout": 0.1, "target_modules": ["query"]}) == []
    found = problems({"r": 0, "alpha": 0, "dropout": 1.5, "target_modules": [], "rank": 4})
    assert len(found) == 5, found
    by_key = {line.split(":")[1].strip(): line for line in found}
    assert set(by_key) == {"model.lora.r", "model.lora.alpha", "model.lora.dropout", "model.lora.target_modules",
                           "model.lora.rank"}, found
    assert "at least 1" in by_key["model.lora.r"]
    assert "no layer would be adapted" in by_key["model.lora.target_modules"]
    assert "did you mean 'r'" in by_key["model.lora.rank"] or "known keys" in by_key["model.lora.rank"]
    assert all("\n" not in line for line in found)


def test_a_target_module_the_model_lacks_is_one_engine_line() -> None:
    from transformers import AutoModelForCausalLM, GPT2Config

    from tuitrain.engine.errors import EngineError
    from tuitrain.engine.lora import apply_lora

    model = AutoModelForCausalLM.from_config(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=64, n_positions=32))
    with pytest.raises(EngineError) as caught:
        apply_lora(model, {"r": 4, "alpha": 8.0, "dropout": 0.0, "target_modules": ["c_attn", "q_proj"]}, "causal-lm")
    message = str(caught.value)
    assert message.startswith("model.lora.target_modules: 'q_proj' is not a layer of this gpt2 model")
    assert "c_attn" in message and "c_fc" in message and "\n" not in message
    wrapped = apply_lora(model, {"r": 4, "alpha": 8.0, "dropout": 0.0, "target_modules": None}, "causal-lm")
    trainable = {n for n, p in wrapped.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)  # peft's default for gpt2: c_attn


def test_a_resume_without_the_kept_base_is_one_engine_line(tmp_path) -> None:
    from tuitrain.engine.errors import EngineError
    from tuitrain.engine.lora import LORA_BASE, base_folder
    from tuitrain.engine.model import build_model

    kept = base_folder(str(tmp_path / "out"), str(tmp_path / "elsewhere" / "checkpoint-4"))
    assert kept == tmp_path / "elsewhere" / LORA_BASE
    with pytest.raises(EngineError, match=r"^\[model.lora\]: the checkpoint to resume from has no base model beside it"):
        build_model({"task": "causal-lm", "config": {"model_type": "gpt2"}}, None, base=kept)


@pytest.mark.slow
def test_causal_lm_adapter_checkpoints_are_complete_and_resume_continues_the_step(tmp_path, runs_dir):
    profile = tmp_path / "clm_lora.toml"
    profile.write_text(CLM_LORA)
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    parent = only_run(runs_dir)
    output = Path(record(parent)["output_dir"])
    for step in (2, 4):
        folder = output / f"checkpoint-{step}"
        names = {p.name for p in folder.iterdir()}
        assert {"adapter_model.safetensors", "adapter_config.json"} <= names and "model.safetensors" not in names
        checkpoint = inspect_checkpoint(folder)
        assert checkpoint.complete and checkpoint.verified, checkpoint.missing
    listed = json.loads(cli("checkpoints", parent.name, "--json", runs_dir=runs_dir).stdout)
    assert [c["complete"] for c in listed] == [True, True]
    assert (output / "lora-base" / "model.safetensors").is_file()  # the from-scratch base the adapter needs

    result = cli("resume", parent.name, "--checkpoint", "checkpoint-2", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    (child,) = [p for p in runs_dir.iterdir() if (p / "run.json").is_file() and p != parent]
    begin = next(e for e in events(child) if e["event"] == "train_begin")
    assert begin["step"] == 2
    # the same base, adapter, optimizer and data order: steps 3 and 4 again, loss for loss
    assert losses(child) == pytest.approx({3: losses(parent)[3], 4: losses(parent)[4]}, abs=1e-6)
    assert inspect_checkpoint(Path(record(child)["output_dir"]) / "checkpoint-4").complete

    # export merges the adapter into the from-scratch base the run kept
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    out = tmp_path / "merged"
    result = cli("export", parent.name, str(out), "--checkpoint", "checkpoint-4", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    merged = AutoModelForCausalLM.from_pretrained(str(out))
    base = load_file(str(output / "lora-base" / "model.safetensors"))
    weights = dict(merged.named_parameters())
    changed = {n for n, t in base.items() if n in weights and not torch.equal(weights[n].detach(), t)}
    assert changed and all(n.endswith("attn.c_attn.weight") for n in changed), changed  # c_attn only, merged
    assert (out / "tokenizer.json").is_file()
    # safetensors writes 0600 whatever the umask: the kept base and the export are readable as checkpoints are
    mode = 0o666 & ~current_umask()
    for written in (output / "lora-base" / "model.safetensors", out / "model.safetensors"):
        assert stat.S_IMODE(written.stat().st_mode) == mode, (written, oct(written.stat().st_mode))


@pytest.mark.slow
def test_pretrained_classifier_adapter_exports_as_a_merged_model(tmp_path, runs_dir):
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    profile = tmp_path / "mini_lora.toml"
    profile.write_text(MINI_LORA.format(model=MINILM))
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run(runs_dir)
    output = Path(record(run_dir)["output_dir"])
    adapter = load_file(str(output / "checkpoint-4" / "adapter_model.safetensors"))
    assert any("lora_A" in k for k in adapter) and any("classifier" in k for k in adapter)  # the new head trains too
    assert {p.name for p in (output / "lora-base").iterdir()} == {"config.json"}  # a pretrained base is read again

    out = tmp_path / "merged"
    result = cli("export", run_dir.name, str(out), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "merged" in result.stdout
    merged = AutoModelForSequenceClassification.from_pretrained(str(out)).eval()
    assert not any("lora" in n for n, _ in merged.named_parameters())
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    batch = tokenizer(["the film was wonderful", "a dull trip"], return_tensors="pt", padding=True)
    config = AutoConfig.from_pretrained(str(output / "lora-base"))
    base = AutoModelForSequenceClassification.from_pretrained(str(MINILM), config=config)
    adapted = PeftModel.from_pretrained(base, str(output / "checkpoint-4")).eval()
    with torch.no_grad():
        assert torch.allclose(merged(**batch).logits, adapted(**batch).logits, atol=1e-5)
        unadapted = adapted.get_base_model()
        with adapted.disable_adapter():  # the same model without the LoRA update: it changed something
            assert not torch.allclose(merged(**batch).logits, unadapted(**batch).logits, atol=1e-6)

    again = cli("export", run_dir.name, str(out), runs_dir=runs_dir)
    check_clean(again, "already exists and is not an empty folder")
    missing = cli("export", run_dir.name, str(tmp_path / "x"), "--checkpoint", "checkpoint-99", runs_dir=runs_dir)
    check_clean(missing, "no checkpoint 'checkpoint-99'")


def test_export_refuses_a_run_of_the_users_own_script(tmp_path, runs_dir):
    (tmp_path / "hello.py").write_text('print("hello")\n')
    profile = tmp_path / "script.toml"
    profile.write_text('[script]\npath = "hello.py"\n[hardware]\naccelerator = "cpu"\n')
    result = cli("run", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    refused = cli("export", only_run(runs_dir).name, str(tmp_path / "out"), runs_dir=runs_dir)
    check_clean(refused, "ran your own script ([script]): its checkpoints are the script's own")
    assert not (tmp_path / "out").exists()
