"""One mixed precision per run (issue 28, item 3): `--set training.bf16=true` trained in bf16 while `plan` and the
accelerate config said mixed_precision "no". The rule is profile.implied.mixed_precision: hardware.mixed_precision
when it says bf16 or fp16, else a training.bf16 / fp16 that is true; the accelerate config, `plan`'s notes, the
engine's TrainingArguments and validation (fp16 on the CPU, two precisions at once) all ask it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import cli, demo_profile_data, events, wait_until_ended
from tuitrain.hardware import Hardware
from tuitrain.launch import plan_launch
from tuitrain.launch.plan import export_accelerate_config
from tuitrain.profile import Problem, Profile, settings_with_defaults, validate_profile
from tuitrain.profile.implied import implied_notes, mixed_precision

CPU_BOX = Hardware(cpu_count=2)
SHORT = ["--set", "training.max_steps=4", "--set", "training.eval_steps=4", "--set", "training.save_steps=4",
         "--set", "training.logging_steps=2", "--set", "training.warmup_steps=0"]


def settings(**sections: dict[str, Any]) -> dict[str, Any]:
    return settings_with_defaults(Profile(path=None, data=demo_profile_data(**sections)))


def errors(data: dict[str, Any]) -> list[Problem]:
    return [p for p in validate_profile(data, "p.toml", None) if p.is_error]


@pytest.mark.parametrize("hardware, training, expected", [
    ({}, {}, ("no", "hardware.mixed_precision")),
    ({"mixed_precision": "bf16"}, {}, ("bf16", "hardware.mixed_precision")),
    ({"mixed_precision": "fp16"}, {"fp16": True}, ("fp16", "hardware.mixed_precision")),
    ({}, {"bf16": True}, ("bf16", "training.bf16")),
    ({"mixed_precision": "no"}, {"fp16": True}, ("fp16", "training.fp16")),
    ({}, {"bf16": False}, ("no", "hardware.mixed_precision")),
])
def test_the_one_rule(hardware: dict[str, Any], training: dict[str, Any], expected: tuple[str, str]) -> None:
    data = demo_profile_data(hardware=hardware, training=training)
    assert mixed_precision(data) == expected
    assert mixed_precision(settings_with_defaults(Profile(path=None, data=data))) == expected


@pytest.mark.parametrize("flag", ["bf16", "fp16"])
def test_plan_and_the_accelerate_config_say_the_precision_training_sets(flag: str, tmp_path: Path) -> None:
    profile = settings(hardware={"accelerator": "cuda"}, training={flag: True})
    plan = plan_launch(profile, Hardware(cpu_count=2), tmp_path)
    assert plan.accelerate_config["mixed_precision"] == flag
    (note,) = [n for n in plan.notes if n.startswith("mixed precision")]
    assert note == (f'mixed precision {flag} from training.{flag} = true (hardware.mixed_precision is "no"): '
                    f'the accelerate config and the Trainer both use {flag}; hardware.mixed_precision = "{flag}" '
                    "says it in one place")
    config, _ = export_accelerate_config(profile)
    assert config["mixed_precision"] == flag


def test_said_once_in_hardware_there_is_no_note(tmp_path: Path) -> None:
    profile = settings(hardware={"mixed_precision": "bf16"}, training={"bf16": True})
    plan = plan_launch(profile, CPU_BOX, tmp_path)
    assert plan.accelerate_config["mixed_precision"] == "bf16"
    assert not [n for n in plan.notes if n.startswith("mixed precision")]
    assert not [n for n in implied_notes(settings()) if n.startswith("mixed precision")]


def test_the_engine_trains_in_what_the_plan_says() -> None:
    pytest.importorskip("transformers")
    from tuitrain.engine.main import training_arguments

    for sections, expected in (({"training": {"bf16": True}}, "bf16"), ({"hardware": {"mixed_precision": "bf16"}}, "bf16"),
                               ({}, "no")):
        profile = settings(**sections)
        args = training_arguments(profile, "/tmp/tuitrain-precision-test", 1)
        assert args.mixed_precision == expected == mixed_precision(profile)[0]
        assert bool(args.bf16) == (expected == "bf16")


def test_fp16_on_the_cpu_is_one_refusal_naming_the_key_that_asks() -> None:
    (p,) = errors(demo_profile_data(training={"fp16": True}))
    assert p.key == "training.fp16" and p.message == 'fp16 mixed precision does not run on the CPU; accelerator is "cpu"'
    assert "set training.fp16 = false" in p.fix
    (q,) = errors(demo_profile_data(hardware={"mixed_precision": "fp16"}, training={"fp16": True}))
    assert q.key == "hardware.mixed_precision" and q.message == p.message  # the same rule, one refusal
    assert errors(demo_profile_data(hardware={"mixed_precision": "no"}, training={"bf16": True})) == []


@pytest.mark.parametrize("hardware, training, key, words", [
    ({"accelerator": "cuda", "mixed_precision": "fp16"}, {"bf16": True}, "training.bf16",
     'conflicts with hardware.mixed_precision = "fp16"'),
    ({"mixed_precision": "bf16"}, {"bf16": False}, "training.bf16", "trains the run in bf16 all the same"),
    ({"accelerator": "cuda"}, {"bf16": True, "fp16": True}, "training.fp16", "a run trains in one precision"),
])
def test_two_precisions_are_refused_in_one_line(hardware: dict[str, Any], training: dict[str, Any], key: str,
                                                words: str) -> None:
    (p,) = errors(demo_profile_data(hardware=hardware, training=training))
    assert p.key == key and words in p.message and p.fix and "\n" not in str(p)


def test_a_deepspeed_json_is_checked_against_the_precision_training_sets(tmp_path: Path) -> None:
    import json

    (tmp_path / "ds.json").write_text(json.dumps({"bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}))
    data = demo_profile_data(hardware={"accelerator": "cuda"}, training={"bf16": True},
                             distributed={"strategy": "deepspeed", "deepspeed": {"config_file": "ds.json"}})
    assert [p for p in validate_profile(data, "p.toml", tmp_path) if p.is_error] == []


@pytest.mark.slow
def test_a_real_run_trains_in_the_precision_its_accelerate_config_says(runs_dir: Path) -> None:
    """`accelerate launch` for real: accelerate.yaml, the plan and the rank's Trainer say the same precision."""
    plan = cli("plan", "demo", "--json", "--set", "training.bf16=true", runs_dir=runs_dir)
    assert plan.returncode == 0, plan.stderr
    result = cli("run", "demo", *SHORT, "--set", "training.bf16=true", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = list(runs_dir.iterdir())
    assert wait_until_ended(run_dir)["status"] == "finished"
    import yaml

    assert yaml.safe_load((run_dir / "accelerate.yaml").read_text())["mixed_precision"] == "bf16"
    assert '"mixed_precision": "bf16"' in plan.stdout
    begin = next(e for e in events(run_dir) if e["event"] == "train_begin")
    assert begin["mixed_precision"] == "bf16"
