"""`tuitrain profile export-accelerate / import-accelerate`, the strategy field table, and the
real launches of issue 6 on this machine's CPU (single, ddp with 2 gloo ranks, fsdp refused)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file

from conftest import cli, record
from tuitrain.launch.strategies import STRATEGY_FIELD, STRATEGY_FIELDS, fields_for
from tuitrain.profile import builtin_profile_path
from tuitrain.profile.schema import SCHEMA, STRATEGIES

FIXTURES = Path(__file__).parent / "fixtures" / "accelerate"
SHORT = ["--set", "training.max_steps=4", "--set", "training.eval_steps=4", "--set", "training.save_steps=4",
         "--set", "training.logging_steps=2", "--set", "training.warmup_steps=0"]
HEAVY = ("torch", "transformers", "datasets", "evaluate", "accelerate")


# ------------------------------------------------------------------ export


def test_export_prints_a_config_accelerate_loads(tmp_path: Path, runs_dir: Path) -> None:
    result = cli("profile", "export-accelerate", "demo", runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# accelerate config of ")
    path = tmp_path / "demo.yaml"
    path.write_text(result.stdout)
    assert load_config_from_file(str(path)).distributed_type.value == "NO"
    assert ClusterConfig.from_yaml_file(str(path)).use_cpu is True


def test_export_skips_the_machine_checks(tmp_path: Path, runs_dir: Path) -> None:
    """A cluster's DeepSpeed config from a laptop without GPUs, DeepSpeed or the JSON file."""
    profile = tmp_path / "cluster.toml"
    shutil.copy(FIXTURES / "deepspeed_config_file.toml", profile)
    assert cli("plan", str(profile), runs_dir=runs_dir).returncode == 1  # this machine cannot run it
    result = cli("profile", "export-accelerate", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    assert config["distributed_type"] == "DEEPSPEED" and "mixed_precision" not in config
    assert config["deepspeed_config"] == {"deepspeed_config_file": "/home/user/configs/ds_zero3_config.json",
                                          "zero3_init_flag": True}


def test_export_of_cpu_ranks_says_how_to_launch_them(runs_dir: Path, tmp_path: Path) -> None:
    profile = tmp_path / "ddp.toml"
    profile.write_text(builtin_profile_path().read_text().replace('strategy = "single"\nnum_processes = 1',
                                                                  'strategy = "ddp"\nnum_processes = 2'))
    result = cli("profile", "export-accelerate", str(profile), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    assert "CUDA_VISIBLE_DEVICES=" in result.stdout and "MULTI_CPU" in result.stdout
    assert yaml.safe_load(result.stdout)["distributed_type"] == "MULTI_GPU"


def test_profile_commands_load_without_the_ml_stack(tmp_path: Path) -> None:
    code = ("import sys, contextlib, io\n"
            "from tuitrain.cli import main\n"
            "for argv in (['profile', 'export-accelerate', sys.argv[1]], ['profile', 'import-accelerate', sys.argv[2]],\n"
            "             ['plan', sys.argv[1]]):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "        main(argv + ['--runs-dir', sys.argv[3]])\n"
            f"print(sorted(set({HEAVY!r}) & set(m.split('.')[0] for m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code, str(FIXTURES / "fsdp.toml"), str(FIXTURES / "fsdp.yaml"),
                          str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


# ------------------------------------------------------------------ import


def test_import_names_every_field_it_cannot_map(tmp_path: Path, runs_dir: Path) -> None:
    source = tmp_path / "mine.yaml"
    source.write_text(yaml.safe_dump({
        "compute_environment": "LOCAL_MACHINE", "distributed_type": "MULTI_GPU", "num_processes": 2,
        "mixed_precision": "fp8", "enable_cpu_affinity": True, "dynamo_config": {"dynamo_backend": "INDUCTOR"},
        "gpu_ids": "0,1", "same_network": True, "some_future_key": 3, "tpu_env": [], "debug": False,
    }))
    result = cli("profile", "import-accelerate", str(source), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    tables = tomllib.loads(result.stdout)
    assert tables["distributed"] == {"strategy": "ddp", "num_processes": 2, "rdzv_backend": "static",
                                     "same_network": True}
    assert tables["hardware"] == {"accelerator": "cuda", "gpus": [0, 1]}
    for key in ("mixed_precision", "enable_cpu_affinity", "dynamo_config", "some_future_key"):
        assert f"warning: {key}:" in result.stderr, key
    assert "torch_compile" in result.stderr  # where dynamo settings go instead
    assert "nothing to carry over: debug, tpu_env" in result.stderr


def test_import_refuses_what_it_cannot_run(tmp_path: Path, runs_dir: Path) -> None:
    source = tmp_path / "tpu.yaml"
    source.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: XLA\nnum_processes: 8\n")
    result = cli("profile", "import-accelerate", str(source), runs_dir=runs_dir)
    assert result.returncode == 1 and "distributed_type" in result.stderr and "'XLA'" in result.stderr
    assert result.stdout == ""


def test_import_into_a_profile_replaces_distributed_and_validates(tmp_path: Path, runs_dir: Path) -> None:
    target = tmp_path / "mine.toml"
    shutil.copy(builtin_profile_path(), target)
    result = cli("profile", "import-accelerate", str(FIXTURES / "fsdp.yaml"), "--into", str(target), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    data = tomllib.loads(target.read_text())
    assert data["distributed"]["strategy"] == "fsdp"
    assert data["distributed"]["fsdp"]["transformer_layer_cls_to_wrap"] == ["BertLayer"]
    assert data["hardware"]["accelerator"] == "cuda" and data["hardware"]["mixed_precision"] == "bf16"
    assert data["model"] == tomllib.loads(builtin_profile_path().read_text())["model"]  # the rest is kept
    assert target.read_text().startswith(builtin_profile_path().read_text().split("[run]")[0])  # comments kept
    assert not (tmp_path / "mine.toml.bak").exists()  # so no backup
    assert "fsdp_backward_prefetch_policy" in result.stderr  # the renamed key is said


def test_import_default_reads_accelerates_default_config(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    run = lambda: subprocess.run([sys.executable, "-m", "tuitrain", "profile", "import-accelerate", "default"],  # noqa: E731
                                 capture_output=True, text=True, env=env, cwd=tmp_path)
    missing = run()
    assert missing.returncode == 2 and "no default config" in missing.stderr
    (tmp_path / "hf" / "accelerate").mkdir(parents=True)
    shutil.copy(FIXTURES / "ddp_multinode.yaml", tmp_path / "hf" / "accelerate" / "default_config.yaml")
    found = run()
    assert found.returncode == 0, found.stderr
    assert "default_config.yaml" in found.stderr
    assert tomllib.loads(found.stdout)["distributed"]["num_machines"] == 2


def test_export_needs_only_hardware_and_distributed(tmp_path: Path, runs_dir: Path) -> None:
    """A data file that exists only on the cluster, or no [model]/[data] at all (a profile made by
    import-accelerate --into), does not stop the export; a broken [distributed] does."""
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(builtin_profile_path().read_text().replace('generate = "sentiment-words"',
                                                                  'train_file = "/cluster/data/train.csv"'))
    assert "data.train_file" in cli("plan", str(cluster), runs_dir=runs_dir).stderr
    result = cli("profile", "export-accelerate", str(cluster), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    bare = tmp_path / "bare.toml"
    bare.write_text('[hardware]\naccelerator = "cuda"\ngpus = [0, 1]\n[distributed]\nstrategy = "ddp"\n')
    result = cli("profile", "export-accelerate", str(bare), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text('[distributed]\nstrategy = "dpp"\n')
    result = cli("profile", "export-accelerate", str(broken), runs_dir=runs_dir)
    assert result.returncode == 2 and "distributed.strategy" in result.stderr and "ddp" in result.stderr


def test_export_counts_one_process_per_selected_gpu_as_the_plan_does(tmp_path: Path, runs_dir: Path) -> None:
    bare = tmp_path / "bare.toml"
    bare.write_text('[hardware]\naccelerator = "cuda"\ngpus = [0, 1, 3]\n[distributed]\nstrategy = "ddp"\n')
    result = cli("profile", "export-accelerate", str(bare), runs_dir=runs_dir)
    config = yaml.safe_load(result.stdout)
    assert (config["distributed_type"], config["num_processes"], config["gpu_ids"]) == ("MULTI_GPU", 3, "0,1,3")
    assert "one per selected GPU" in result.stdout
    every = tmp_path / "every.toml"
    every.write_text('[hardware]\naccelerator = "cuda"\n[distributed]\nstrategy = "ddp"\n')
    result = cli("profile", "export-accelerate", str(every), runs_dir=runs_dir)
    assert yaml.safe_load(result.stdout)["num_processes"] == 1
    assert "set distributed.num_processes" in result.stdout  # the header says why 1, and what to do


def test_cpu_ranks_come_back_as_cpu_ranks(tmp_path: Path, runs_dir: Path) -> None:
    profile = tmp_path / "ddp.toml"
    profile.write_text(builtin_profile_path().read_text().replace('strategy = "single"\nnum_processes = 1',
                                                                  'strategy = "ddp"\nnum_processes = 2'))
    exported = tmp_path / "ddp.yaml"
    exported.write_text(cli("profile", "export-accelerate", str(profile), runs_dir=runs_dir).stdout)
    result = cli("profile", "import-accelerate", str(exported), runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    tables = tomllib.loads(result.stdout)
    assert tables["hardware"]["accelerator"] == "cpu" and tables["distributed"]["num_processes"] == 2
    plain = tmp_path / "plain.yaml"  # the same YAML without our header: read as GPUs, and said so
    plain.write_text("\n".join(line for line in exported.read_text().splitlines() if not line.startswith("#")))
    result = cli("profile", "import-accelerate", str(plain), runs_dir=runs_dir)
    assert tomllib.loads(result.stdout)["hardware"]["accelerator"] == "cuda"
    assert 'set hardware.accelerator = "cpu"' in result.stderr


def test_import_into_a_bare_name_uses_the_profiles_folder(tmp_path: Path, runs_dir: Path) -> None:
    project = tmp_path / "project"
    (project / "profiles").mkdir(parents=True)
    shutil.copy(builtin_profile_path(), project / "profiles" / "mine.toml")
    result = cli("profile", "import-accelerate", str(FIXTURES / "fsdp.yaml"), "--into", "mine", runs_dir=runs_dir,
                 cwd=project)
    assert result.returncode == 0, result.stderr
    assert tomllib.loads((project / "profiles" / "mine.toml").read_text())["distributed"]["strategy"] == "fsdp"
    assert not (project / "mine").exists()
    result = cli("profile", "import-accelerate", str(FIXTURES / "fsdp.yaml"), "--into", "demo", runs_dir=runs_dir,
                 cwd=project)  # a built-in name: a copy of the built-in, in ./profiles
    assert result.returncode == 0, result.stderr
    copied = tomllib.loads((project / "profiles" / "demo.toml").read_text())
    assert copied["distributed"]["strategy"] == "fsdp" and copied["data"]["generate"] == "sentiment-words"
    assert "copy of the built-in profile demo" in result.stderr


def test_import_into_writes_nothing_that_would_break_the_profile(tmp_path: Path, runs_dir: Path) -> None:
    target = tmp_path / "mine.toml"
    shutil.copy(builtin_profile_path(), target)
    before = target.read_text()
    # Each key imports on its own, but fp16 does not run on the CPU: the profile would not run.
    source = tmp_path / "cpu_fp16.yaml"
    source.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 2\n"
                      "mixed_precision: fp16\nuse_cpu: true\n")
    result = cli("profile", "import-accelerate", str(source), "--into", str(target), runs_dir=runs_dir)
    assert result.returncode == 1 and "nothing written" in result.stderr, result.stderr
    assert "hardware.mixed_precision" in result.stderr
    assert target.read_text() == before and not (tmp_path / "mine.toml.bak").exists()


def test_import_into_carries_deepspeed_clipping_and_accumulation_into_training(tmp_path: Path,
                                                                               runs_dir: Path) -> None:
    """The Trainer docs' DeepSpeed plugin config clips gradients at 0.7: transformers stops a run
    whose training.max_grad_norm differs, so the import sets it too (issue 10, item 12)."""
    target = tmp_path / "mine.toml"
    shutil.copy(builtin_profile_path(), target)
    result = cli("profile", "import-accelerate", str(FIXTURES / "deepspeed_plugin.yaml"), "--into", str(target),
                 runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    data = tomllib.loads(target.read_text())
    assert data["distributed"]["deepspeed"]["gradient_clipping"] == 0.7
    assert data["training"]["max_grad_norm"] == 0.7 and data["training"]["gradient_accumulation_steps"] == 1
    assert data["training"]["max_steps"] == 150  # the rest of [training] is kept
    assert "training.max_grad_norm" in result.stderr and "training.gradient_accumulation_steps" in result.stderr
    printed = cli("profile", "import-accelerate", str(FIXTURES / "deepspeed_plugin.yaml"), runs_dir=runs_dir)
    assert tomllib.loads(printed.stdout)["training"] == {"max_grad_norm": 0.7, "gradient_accumulation_steps": 1}


def test_import_into_names_it_cannot_use_are_clear_errors(tmp_path: Path, runs_dir: Path) -> None:
    source = str(FIXTURES / "fsdp.yaml")
    empty = cli("profile", "import-accelerate", source, "--into", "", runs_dir=runs_dir, cwd=tmp_path)
    assert empty.returncode == 2 and "--into needs a profile name" in empty.stderr
    (tmp_path / "profiles").write_text("a file where the folder should be")
    blocked = cli("profile", "import-accelerate", source, "--into", "mine", runs_dir=runs_dir, cwd=tmp_path)
    assert blocked.returncode == 2 and "cannot create the folder" in blocked.stderr
    assert "Traceback" not in empty.stderr + blocked.stderr


# ------------------------------------------------------------------ the strategy editor's table


def test_every_strategy_has_its_fields_with_help_and_valid_defaults() -> None:
    assert set(STRATEGY_FIELDS) == set(STRATEGIES) == set(STRATEGY_FIELD.choices)
    for strategy in STRATEGIES:
        fields = fields_for(strategy)
        assert len({f.key for f in fields}) == len(fields)
        for f in fields:
            assert f.help and f.kind, f.key
            if f.choices and f.default is not None:
                assert f.default in f.choices, f.key
    fsdp = {f.name: f for f in fields_for("fsdp")}
    assert fsdp["sharding_strategy"].choices[0] == "full_shard" and fsdp["sharding_strategy"].default == "full_shard"
    assert "_no_split_modules" in fsdp["transformer_layer_cls_to_wrap"].help
    assert not any(f.section == "distributed.fsdp" for f in fields_for("deepspeed"))
    assert not any(f.section.startswith("distributed.") for f in fields_for("single"))
    assert set(SCHEMA["distributed"]["fsdp"].keys) == {f.name for f in fields_for("fsdp") if f.section == "distributed.fsdp"}


# ------------------------------------------------------------------ real launches on the CPU


@pytest.mark.slow
@pytest.mark.parametrize("shared,processes", [("finished_run", 1), ("finished_two_rank_run", 2)], ids=["single-1", "ddp-2"])
def test_real_launch_on_the_cpu(shared: str, processes: int, request: pytest.FixtureRequest) -> None:
    run_dir = request.getfixturevalue(shared)  # the demo as the profile says it (single) and with TWO_RANKS (ddp)
    rec = record(run_dir)
    assert rec["status"] == "finished" and rec["num_processes"] == processes
    for rank in range(processes):
        assert f"[tuitrain] rank {rank}/{processes}" in (run_dir / "logs" / f"rank-{rank}.log").read_text()
    assert not (run_dir / "logs" / f"rank-{processes}.log").exists()
    config = load_config_from_file(str(run_dir / "accelerate.yaml"))
    assert config.distributed_type.value == ("NO" if processes == 1 else "MULTI_GPU")
    assert config.num_processes == processes
    assert rec["argv"][3:5] == ["--config_file", str(run_dir / "accelerate.yaml")]


@pytest.mark.slow
def test_fsdp_on_the_cpu_is_refused_before_anything_starts(runs_dir: Path) -> None:
    result = cli("run", "demo", *SHORT, "--set", "distributed.strategy=fsdp", "--set", "distributed.num_processes=2",
                 runs_dir=runs_dir)
    assert result.returncode == 2
    assert "distributed.strategy" in result.stderr and "fsdp" in result.stderr and "Traceback" not in result.stderr
    assert list(runs_dir.iterdir()) == []  # no run directory left behind
