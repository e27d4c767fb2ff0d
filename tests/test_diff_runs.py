"""Issue 24: `tuitrain diff RUN_A RUN_B` — two real demo runs that differ in learning_rate and in a data file's
content show exactly those two lines, the data first; a resumed run names its lineage."""

from __future__ import annotations

import json
from pathlib import Path

import tomli_w

from conftest import FAST, cli, demo_profile_data

WORDS = {1: ["good", "great", "fine", "nice"], 0: ["bad", "awful", "poor", "sad"]}


def write_csv(path: Path, rows: int, start: int) -> None:
    lines = ["text,label"]
    for i in range(start, start + rows):
        label = i % 2
        lines.append(f"the film was {WORDS[label][i % 4]} number {i},{label}")
    path.write_text("\n".join(lines) + "\n")


def csv_profile(folder: Path) -> Path:
    write_csv(folder / "train.csv", 64, 0)
    write_csv(folder / "validation.csv", 16, 1000)
    data = demo_profile_data(data={"generate": None, "num_train": None, "num_validation": None,
                                   "train_file": str(folder / "train.csv"),
                                   "validation_file": str(folder / "validation.csv")})
    path = folder / "csv.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def run_id(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-1].split()[1]


def test_two_runs_differing_in_learning_rate_and_data_show_exactly_those_two_lines(tmp_path, runs_dir, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    profile = csv_profile(tmp_path)
    first = run_id(cli("run", str(profile), *FAST, runs_dir=runs_dir, cwd=tmp_path))
    write_csv(tmp_path / "train.csv", 64, 500)  # the same file, other rows
    second = run_id(cli("run", str(profile), *FAST, "--set", "training.learning_rate=0.001", runs_dir=runs_dir,
                        cwd=tmp_path))

    result = cli("diff", first, second, runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    head, lines = result.stdout.splitlines()[:2], result.stdout.splitlines()[2:]
    assert head == [f"a  {first}", f"b  {second}"]
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("data      data.train_file  ") and "content differs: sha256 " in lines[0], lines
    assert lines[1] == "profile   training.learning_rate  0.003 → 0.001", lines

    found = json.loads(cli("diff", first, second, "--json", runs_dir=runs_dir).stdout)
    assert [(d["kind"], d["key"]) for d in found["differences"]] == \
        [("data", "data.train_file"), ("profile", "training.learning_rate")]
    assert found["a"] == first and found["b"] == second

    same = cli("diff", first, first, runs_dir=runs_dir)
    assert same.stdout.splitlines()[2:] == [
        "no difference found in the profile, TrainingArguments, data files, code, versions or hardware"]


def test_a_resumed_run_names_its_parent_and_checkpoint_and_its_overrides_follow():
    from tuitrain.runs.view.diff import RunFacts, diff_runs

    profile = {"run": {"name": "demo", "seed": 42}, "training": {"max_steps": 40}}
    parent = RunFacts("20260101-000000-demo", "/runs/20260101-000000-demo", {}, profile, None, {})
    child = RunFacts("20260101-000500-demo", "/runs/20260101-000500-demo", {"parent": parent.id},
                     {**profile, "training": {"max_steps": 60}}, None, {}, ancestors=((parent.id, 20),))
    lines = [d.line() for d in diff_runs(parent, child)]
    assert lines == [
        (f"lineage   resumed  {child.id} resumed {parent.id} from checkpoint-20: the profile lines are its overrides "
         f"({child.id} ← {parent.id} (checkpoint-20))"),
        "profile   training.max_steps  40 → 60"]
