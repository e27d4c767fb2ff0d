"""Keys a profile implies for the Trainer are said by `plan` (issue 13: early stopping quietly turned on
load_best_model_at_end with eval_loss), and the engine sets exactly those."""

from __future__ import annotations

from conftest import cli, demo_profile_data
from tuitrain.profile.implied import implied_notes, implied_training


def test_early_stopping_implies_the_best_checkpoint_and_plan_says_so(tmp_path, runs_dir) -> None:
    import tomli_w

    data = demo_profile_data(metrics={"early_stopping_patience": 3})
    assert implied_training(data) == {
        "load_best_model_at_end": (True, "metrics.early_stopping_patience = 3 stops on the best checkpoint"),
        "metric_for_best_model": ("eval_loss", "metrics.early_stopping_patience = 3 stops on the best checkpoint")}
    path = tmp_path / "early.toml"
    path.write_text(tomli_w.dumps(data))
    result = cli("plan", str(path), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    assert "training.load_best_model_at_end = True (not set in the profile): metrics.early_stopping_patience = 3" \
        in result.stdout
    assert "training.metric_for_best_model = 'eval_loss'" in result.stdout


def test_what_the_profile_sets_itself_is_not_implied() -> None:
    data = demo_profile_data(metrics={"early_stopping_patience": 2},
                             training={"metric_for_best_model": "eval_accuracy", "load_best_model_at_end": True})
    assert implied_training(data) == {} and implied_notes(data) == []
    assert implied_training(demo_profile_data()) == {}


def test_plan_says_what_a_lora_profile_trains_and_how_its_base_is_held(tmp_path, runs_dir) -> None:
    import tomli_w

    data = demo_profile_data()
    data["model"]["lora"] = {"r": 4, "target_modules": ["q_proj", "v_proj"], "quantize": "nf4"}
    path = tmp_path / "qlora.toml"
    path.write_text(tomli_w.dumps(data))
    result = cli("plan", str(path), runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("model.lora: LoRA adapters r=4, alpha=16.0 on q_proj, v_proj, the base frozen and loaded quantized to "
            "nf4 with double quantization (bitsandbytes)") in " ".join(result.stdout.split())
    data["model"]["lora"] = {"double_quant": False, "quantize": "fp4"}
    assert "quantized to fp4 (bitsandbytes)" in implied_notes(data)[-1]
    del data["model"]["lora"]["quantize"], data["model"]["lora"]["double_quant"]
    assert "on peft's default layers for the model type, the base frozen in full precision" in implied_notes(data)[-1]
