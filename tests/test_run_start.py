"""Starting a run: what is frozen with it, and how its folder is named."""

from __future__ import annotations

from tuitrain.runs.start.new_run import _slug, freeze_paths


def test_every_path_typed_key_is_frozen_absolute_so_a_resume_finds_it(tmp_path):
    """A resume runs the frozen profile from the run directory: a relative DeepSpeed config_file,
    NVMe offload folders or data files would point nowhere."""
    (tmp_path / "ds.json").write_text("{}")
    (tmp_path / "model").mkdir()
    data = {
        "data": {"train_file": "data/train.csv", "validation_file": "data/val.csv"},
        "model": {"name_or_path": "model", "tokenizer": "bert-base-uncased"},
        "distributed": {"deepspeed": {"config_file": "ds.json", "offload_param_nvme_path": "nvme",
                                      "offload_optimizer_nvme_path": "/abs/nvme"}},
    }
    frozen = freeze_paths(data, tmp_path)
    assert frozen["distributed"]["deepspeed"]["config_file"] == str(tmp_path / "ds.json")
    assert frozen["distributed"]["deepspeed"]["offload_param_nvme_path"] == str(tmp_path / "nvme")
    assert frozen["distributed"]["deepspeed"]["offload_optimizer_nvme_path"] == "/abs/nvme"
    assert frozen["data"]["train_file"] == str(tmp_path / "data/train.csv")
    assert frozen["model"]["name_or_path"] == str(tmp_path / "model")
    assert frozen["model"]["tokenizer"] == "bert-base-uncased"  # a Hub id stays one
    assert data["distributed"]["deepspeed"]["config_file"] == "ds.json"  # the profile itself is untouched


def test_a_run_name_keeps_its_letters_in_any_script():
    assert _slug("тест ünïcode") == "тест-ünïcode"
    assert _slug("a/b\\c:d") == "a-b-c-d"
    assert _slug("  ") == "run"


def test_a_plan_made_before_its_run_directory_exists_names_the_new_one(tmp_path):
    """start_run takes a plan, not a planner: the plan is made against `<new-run>` (runs.start.new_run.new_run_dir), and
    the run directory prepare_run makes is named in its place in run.json and accelerate.yaml, on this machine
    and on each listed one (its node_dir under its workdir)."""
    import copy
    import json

    from conftest import DEMO_PROFILE
    from tuitrain.hardware import Hardware
    from tuitrain.profile import Profile, settings_with_defaults
    from tuitrain.runs.start.from_profile import local_plan, machines_plan
    from tuitrain.runs.start.new_run import NEW_RUN, new_run_dir, plan_files, prepare_run

    runs = tmp_path / "runs"
    here = Profile(path=tmp_path / "demo.toml", data=copy.deepcopy(DEMO_PROFILE))
    settings = settings_with_defaults(here)
    plan = local_plan(settings, new_run_dir(runs), str(here.path), Hardware(cpu_count=4, physical_cores=2))
    assert not plan.errors and f"{new_run_dir(runs)}/accelerate.yaml" in plan.argv
    paths = prepare_run(here, settings, runs, plan_files(plan), cwd=tmp_path)
    record = json.loads(paths.record.read_text())
    assert f"{paths.root}/accelerate.yaml" in record["argv"] and str(paths.root) in record["argv"]
    assert NEW_RUN not in paths.record.read_text() + paths.accelerate_config.read_text()

    data = copy.deepcopy(DEMO_PROFILE)
    data["distributed"] = {"strategy": "ddp", "num_processes": 1, "main_process_ip": "10.99.0.1",
                           "main_process_port": 29555, "machines": [{"host": "box-a"}, {"host": "box-b", "workdir": "/srv/work"}]}
    two = Profile(path=tmp_path / "two.toml", data=data)
    settings = settings_with_defaults(two)
    plan = machines_plan(two, settings, new_run_dir(runs), str(two.path), local_cwd=str(tmp_path))
    assert not plan.errors
    paths = prepare_run(two, settings, runs, plan_files(plan), cwd=tmp_path)
    machines = json.loads(paths.record.read_text())["machines"]
    assert [m["node_dir"] for m in machines] == [f"{tmp_path}/.tuitrain/runs/{paths.id}/machine-0",
                                                 f"/srv/work/.tuitrain/runs/{paths.id}/machine-1"]
    assert f"/srv/work/.tuitrain/runs/{paths.id}/machine-1/accelerate.yaml" in machines[1]["argv"]
    assert NEW_RUN not in paths.record.read_text() + paths.accelerate_config.read_text()
