"""Issue 24: what a run ran on, per machine (tuitrain.runs.keeper.manifest): a script run in a git repository with an
uncommitted change records its commit, dirty = true and the diff; a data file is hashed once (cached by path,
size and mtime); a machine of a multi-machine run whose torch differs is named by `diff` and `status`; the
manifest and its diff travel home from an SSH machine."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cli
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, read_record, write_record
from tuitrain.runs.keeper.manifest import file_fact, scan_manifests


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_a_script_run_in_a_dirty_git_repository_records_its_commit_and_its_diff(tmp_path, runs_dir, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_TOKEN", "hf_not_to_be_kept_123")
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "train.py").write_text('print("training")\n')
    (repo / "train.toml").write_text('[script]\npath = "train.py"\n\n[hardware]\naccelerator = "cpu"\n')
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "first")
    commit = git(repo, "rev-parse", "HEAD")
    (repo / "train.py").write_text('print("training")\nprint("an uncommitted change")\n')

    result = cli("run", str(repo / "train.toml"), runs_dir=runs_dir, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = runs_dir.iterdir()

    manifest = scan_manifests(run_dir)[0][0]
    (code,) = manifest["code"]  # the script's folder and the run's working folder: one repository, said once
    assert code["commit"] == commit and code["branch"] == "main" and code["dirty"] is True
    assert code["root"] == str(repo.resolve()) and code["changed"] == 1
    diff = (run_dir / "machines" / code["diff_file"]).read_text()
    assert '+print("an uncommitted change")' in diff and code["diff_bytes"] == len(diff.encode())
    assert manifest["packages"]["tuitrain"] and manifest["python"]["version"]
    for kept in (*run_dir.glob("machines/*"), run_dir / "run.json"):  # nothing of the environment
        assert "hf_not_to_be_kept" not in kept.read_text(), kept

    status = cli("status", run_dir.name, runs_dir=runs_dir)
    code_line = next(line for line in status.stdout.splitlines() if line.startswith("code"))
    assert commit[:12] in code_line and "(main)" in code_line and "dirty: 1 changed" in code_line, status.stdout
    assert any(line.startswith("versions   python ") for line in status.stdout.splitlines()), status.stdout
    full = json.loads(cli("status", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    assert full["manifests"]["0"]["code"][0]["commit"] == commit


def test_a_folder_that_is_no_repository_records_no_code(tmp_path):
    from tuitrain.runs.keeper.manifest import git_facts

    assert git_facts(tmp_path) is None


def test_a_data_file_is_hashed_once_then_read_from_the_cache_by_path_size_and_mtime(tmp_path):
    cache = tmp_path / "hashes.json"
    data = tmp_path / "train.csv"
    data.write_text("text,label\ngood,1\n")
    first = file_fact("data.train_file", str(data), cache)
    assert first["sha256"] and first["size"] == data.stat().st_size
    stamp = data.stat().st_mtime_ns

    data.write_text("text,label\nbad!,0\n")  # the same size: only the mtime tells it changed...
    os.utime(data, ns=(stamp, stamp))  # ...and it is put back: the cache answers, the file is not read
    assert file_fact("data.train_file", str(data), cache)["sha256"] == first["sha256"]
    assert json.loads(cache.read_text())[str(data.resolve())]["mtime_ns"] == stamp

    os.utime(data, ns=(stamp + 10**9, stamp + 10**9))  # a new mtime: hashed again
    again = file_fact("data.train_file", str(data), cache)
    assert again["sha256"] != first["sha256"]
    assert file_fact("data.train_file", str(data), cache, hash_now=False)["sha256"] == again["sha256"]


def test_a_missing_data_file_says_so_instead_of_a_hash(tmp_path):
    fact = file_fact("data.train_file", str(tmp_path / "gone.csv"), tmp_path / "hashes.json")
    assert fact["sha256"] is None and fact["error"]


# ---------------------------------------------------------------------------------------------- several machines
def manifest(rank: int, host: str, torch: str) -> dict:
    return {"format": 1, "machine_rank": rank, "run_id": "x", "written": 0.0,
            "python": {"version": "3.11.7", "implementation": "CPython", "executable": "/usr/bin/python3"},
            "packages": {"torch": torch, "transformers": "4.44.0", "accelerate": "0.33.0", "tuitrain": "0.1.0"},
            "torch_build": {"cuda": "12.1", "hip": None, "git_version": "abc", "cudnn": "9.1.0", "nccl": "2.20.5"},
            "host": {"name": host, "os": "Ubuntu 22.04", "kernel": "6.5.0", "arch": "x86_64",
                     "cpu_model": "AMD EPYC 7763", "cpu_count": 64, "memory_total": 515000},
            "gpus": {"driver": "550.54.15", "note": None,
                     "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total": 81559}]},
            "seed": 42, "data": [], "code": []}


def two_machine_run(runs: Path, run_id: str, torch_on_1: str) -> Path:
    paths = RunPaths(runs / run_id)
    paths.machines.mkdir(parents=True)
    write_record(paths, new_record(run_id, "two", status="finished", num_machines=2, num_processes=2))
    paths.profile.write_text('[run]\nname = "two"\n\n[distributed]\nnum_machines = 2\n')
    for rank, host, torch in ((0, "node-a", "2.3.1"), (1, "node-b", torch_on_1)):
        paths.machine_manifest(rank).write_text(json.dumps(manifest(rank, host, torch)))
    return paths.root


def test_diff_names_the_machine_whose_torch_differs(runs_dir):
    two_machine_run(runs_dir, "20260101-000000-two", "2.3.1")
    two_machine_run(runs_dir, "20260101-000100-two", "2.2.0")
    result = cli("diff", "20260101-000000-two", "20260101-000100-two", runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()[2:]
    assert lines == ["versions  machine 1 (node-b): torch  2.3.1 → 2.2.0"], result.stdout
    found = json.loads(cli("diff", "20260101-000000-two", "20260101-000100-two", "--json", runs_dir=runs_dir).stdout)
    assert [(d["kind"], d["key"], d["machine"]) for d in found["differences"]] == \
        [("versions", "torch", "machine 1 (node-b)")]


def test_status_names_a_machine_whose_torch_differs_from_machine_0(runs_dir):
    run_dir = two_machine_run(runs_dir, "20260101-000000-two", "2.2.0")
    status = cli("status", run_dir.name, runs_dir=runs_dir)
    assert "differs    machine 1 (node-b): torch  2.3.1 → 2.2.0" in status.stdout, status.stdout
    assert "torch 2.3.1 (CUDA 12.1)" in status.stdout
    assert "1 × NVIDIA H100 80GB HBM3 (80 GiB), driver 550.54.15" in status.stdout


def test_the_manifest_and_its_diff_travel_home_from_a_machine(tmp_path):
    from tuitrain.remote.wire import decode
    from tuitrain.runs.keeper.mirror import NodeFiles, apply

    node, home = RunPaths(tmp_path / "node"), RunPaths(tmp_path / "home")
    node.machines.mkdir(parents=True)
    home.root.mkdir()
    node.machine_git_diff(1, 0).write_text("diff --git a/x b/x\n+y\n")
    node.machine_manifest(1).write_text(json.dumps(manifest(1, "node-b", "2.3.1")))
    for message in NodeFiles(node, 1).changes():
        apply(home, decode(message))
    assert scan_manifests(home.root)[0][1]["host"]["name"] == "node-b"
    assert home.machine_git_diff(1, 0).read_text() == "diff --git a/x b/x\n+y\n"


@pytest.mark.parametrize("path", ["machines/machine-1-manifest.json", "machines/machine-0-git-3.diff"])
def test_only_the_manifest_names_are_mirrored(path, tmp_path):
    from tuitrain.remote.wire import decode, encode_bytes
    from tuitrain.runs.keeper.mirror import MirrorError, apply

    home = RunPaths(tmp_path)
    apply(home, decode(encode_bytes("file", path, b"{}")))
    with pytest.raises(MirrorError):
        apply(home, decode(encode_bytes("file", path.replace("machines/", "machines/../"), b"{}")))


def test_the_writer_names_the_gpus_the_run_uses_and_the_driver_from_a_gpu_sample(tmp_path):
    """A run on GPUs 1 and 2 (PCI order) of a recorded machine: the manifest names those two and the driver, read
    from the first sample the supervisor's sampler offers, in the writer's own thread."""
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.hardware.sampler import Sampler
    from tuitrain.runs.keeper.manifest import ManifestWriter

    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    paths.profile.write_text('[run]\nseed = 7\n')
    record = {"id": "run", "accelerator": "cuda", "cwd": str(tmp_path),
              "env": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1,2"}}
    table = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
    writer = ManifestWriter(paths, record, 0, log=pytest.fail, cache=tmp_path / "hashes.json")
    writer.start()
    with Sampler(RecordedNvml(load_table(str(table))), history=1) as sampler:
        writer.offer(sampler.sample())
    writer.finish(timeout=60)
    written = scan_manifests(paths.root)[0][0]
    assert written["gpus"]["driver"] == "550.54.15" and written["gpus"]["note"] is None
    assert [(g["index"], g["name"]) for g in written["gpus"]["devices"]] == \
        [(1, "NVIDIA RTX A6000"), (2, "NVIDIA GeForce RTX 4090")]
    assert written["seed"] == 7 and written["code"] == [] and written["data"] == []


def test_cudnn_and_nccl_are_read_from_conda_meta_where_no_wheel_has_them(tmp_path):
    """conda's torch takes cuDNN and NCCL from conda packages: their versions are in conda-meta, not in pip's metadata."""
    from tuitrain.runs.keeper.manifest import conda_version

    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / "cudnn-9.1.0.70-cuda12_0.json").write_text(json.dumps({"name": "cudnn", "version": "9.1.0.70"}))
    (meta / "nccl-2.20.5.1-h6103f9b_0.json").write_text(json.dumps({"name": "nccl", "version": "2.20.5.1"}))
    (meta / "cudnn-frontend-1.0-0.json").write_text(json.dumps({"name": "cudnn-frontend", "version": "1.0"}))
    (meta / "nccl-9-broken.json").write_text("{not json")
    assert conda_version("cudnn", tmp_path) == "9.1.0.70" and conda_version("nccl", tmp_path) == "2.20.5.1"
    assert conda_version("cudnn", tmp_path / "not-conda") is None


def test_a_damaged_manifest_is_named_damaged_not_missing(runs_dir):
    """A manifest cut short (a full disk, a killed writer) is said to be damaged by `status` and `diff`, never
    passed off as a run from before manifests."""
    good = two_machine_run(runs_dir, "20260101-000000-two", "2.3.1")
    bad = two_machine_run(runs_dir, "20260101-000100-two", "2.3.1")
    path = RunPaths(bad).machine_manifest(1)
    path.write_text(path.read_text()[:50])
    status = cli("status", bad.name, runs_dir=runs_dir)
    assert f"manifest   machine 1's is damaged: {path}: not valid JSON: " in status.stdout, status.stdout
    shown = json.loads(cli("status", bad.name, "--json", runs_dir=runs_dir).stdout)
    assert list(shown["damaged_manifests"]) == ["1"]
    said = cli("diff", good.name, bad.name, runs_dir=runs_dir).stdout
    assert f"run {bad.name}'s is damaged ({path}: not valid JSON: " in said and "before manifests" not in said, said


# (a) a manifest that does not check is named damaged, in one line, and hides nothing: machine 0's is shown as ever
@pytest.mark.parametrize(("change", "said"), [
    ({"host": {**manifest(1, "node-b", "2.3.1")["host"], "cpu_count": "64"}}, "host.cpu_count: '64' is not a whole number"),
    ({"machine_rank": 2**70}, "machine_rank: 1180591620717411303424 is not a rank"),
    ({"python": None}, "python: null is not an object"),
    ({"code": "abc"}, "code: 'abc' is not a list"),
    ({"format": 2}, "format: 2 is not one of 1"),
    ({"gpus": {"driver": None, "note": None, "devices": [{"index": 0, "name": 7, "memory_total": None}]}},
     "gpus.devices[0].name: 7 is not text"),
    ({"data": [{"key": "data.train_file", "path": "/d.csv", "sha256": None}]}, "no data[0].size"),
])
def test_a_manifest_that_does_not_check_is_damaged_in_one_line(runs_dir: Path, change: dict, said: str) -> None:
    from test_run_record_property import quiet
    from tuitrain.runs.keeper.manifest import scan_manifests

    good = two_machine_run(runs_dir, "20260101-000000-two", "2.3.1")
    bad = two_machine_run(runs_dir, "20260101-000100-two", "2.2.0")
    path = RunPaths(bad).machine_manifest(1)
    path.write_text(json.dumps({**manifest(1, "node-b", "2.2.0"), **change}))
    manifests, damaged = scan_manifests(bad)
    assert list(manifests) == [0] and damaged == {1: f"{path}: {said}"}
    code, text = quiet("status", bad.name, "--runs-dir", str(runs_dir))
    assert code == 0 and f"manifest   machine 1's is damaged: {path}: {said}\n" in text, text
    assert "versions   python 3.11.7   torch 2.3.1 (CUDA 12.1)" in text, text  # machine 0's, as ever
    code, text = quiet("diff", good.name, bad.name, "--runs-dir", str(runs_dir))
    assert code == 0 and f"machine 1 (node-b): manifest  run {bad.name}'s is damaged ({path}: {said}): " in text, text


@settings(max_examples=50, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_manifests_are_used_whole_or_named_damaged(runs_dir: Path, data: st.DataObject) -> None:
    """Manifests drawn from `Manifest`'s own annotations, some keys dropped or given any JSON value (the record's
    generator, tests/test_run_record_property.py): every reader of them (status, diff, the machines' differences)
    uses one whole or names it damaged, and never raises."""
    import typing

    from test_run_record_property import quiet, records
    from tuitrain.rundir.json_shape import problem
    from tuitrain.runs.keeper.manifest import Manifest, scan_manifests
    from tuitrain.runs.view.diff import compare_runs, machine_differences, short_manifest

    good = RunPaths(runs_dir / "20260101-000000-two")
    if not good.root.exists():
        two_machine_run(runs_dir, good.id, "2.3.1")
        two_machine_run(runs_dir, "20260101-000100-two", "2.3.1")
    bad = RunPaths(runs_dir / "20260101-000100-two")
    drawn = data.draw(records(manifest(1, "node-b", "2.2.0"), typing.get_type_hints(Manifest, include_extras=True)))
    bad.machine_manifest(1).write_text(json.dumps(drawn))
    manifests, damaged = scan_manifests(bad.root)
    assert manifests[0]["host"]["name"] == "node-a"
    assert (1 in damaged) == (problem(drawn, Manifest) is not None)
    assert all("\n" not in why for why in damaged.values())
    short_manifest(manifests)
    machine_differences(compare_runs(good, read_record(good), bad, read_record(bad)).b)
    for argv in (["status", bad.id], ["status", bad.id, "--json"], ["diff", good.id, bad.id]):
        code, text = quiet(*argv, "--runs-dir", str(runs_dir))
        assert code == 0 and "Traceback" not in text, text
