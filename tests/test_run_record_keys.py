"""run.json holds only the keys `RunRecord` declares (tuitrain.rundir.record), nested values included, so mypy guards
the one contract between launching and viewing: a key the code writes must be declared there first."""

from __future__ import annotations

import json
import time
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, cli, wait_until_ended
from test_machines import profile_with_defaults_of, two_machines
from test_tui_fixtures import make_runs
from test_tui_multinode import make_multinode_run
from tuitrain.launch.machines import plan_machines
from tuitrain.rundir import record as run_record
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.runs.queue.entries import Dependency, queue_fields

# Values the record types loosely (list[dict[str, Any]]) while their shape is declared apart.
ITEMS = {"machines": MachineEntry}


def _members(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _shape(key: str, hint: Any, top: bool) -> tuple[str, Any] | None:
    """How a key's value holds a TypedDict: ("one", it), ("each", it) for a list's items or a dict's values; None."""
    for member in _members(hint):
        if typing.is_typeddict(member):
            return "one", member
        args = typing.get_args(member)
        inner = args[-1:] if typing.get_origin(member) in (list, dict) else ()
        for arg in (a for each in inner for a in _members(each)):
            if typing.is_typeddict(arg):
                return "each", arg
    return ("each", ITEMS[key]) if top and key in ITEMS else None


def undeclared(value: dict[str, Any], declared: Any = RunRecord, where: str = "") -> list[str]:
    """Every key of `value` (a run.json object) its TypedDict does not declare, as `slurm.requeued[0].time`."""
    hints = typing.get_type_hints(declared)
    missing = []
    for key, item in value.items():
        path = f"{where}{key}"
        if key not in hints:
            missing.append(path)
            continue
        shape = _shape(key, hints[key], top=not where)
        if shape is None:
            continue
        how, kind = shape
        if how == "one" and isinstance(item, dict):
            missing += undeclared(item, kind, f"{path}.")
        elif isinstance(item, list):
            missing += [m for index, each in enumerate(item) if isinstance(each, dict)
                        for m in undeclared(each, kind, f"{path}[{index}].")]
        elif isinstance(item, dict):
            missing += [m for name, each in item.items() if isinstance(each, dict)
                        for m in undeclared(each, kind, f"{path}.{name}.")]
    return missing


def test_the_check_finds_an_undeclared_key_at_any_depth() -> None:
    assert undeclared({"id": "r", "typo": 1}) == ["typo"]
    assert undeclared({"slurm": {"job_id": "7", "jobid": "7", "requeued": [{"restart": 1, "when": 0}]}}) == [
        "slurm.jobid", "slurm.requeued[0].when"]
    assert undeclared({"processes": {"rank 0": {"pid": 1, "started": 0.0, "host": "a"}, "launcher": None}}) == [
        "processes.rank 0.host"]
    assert undeclared({"machines": [{"host": "a", "gpu": 0}], "queue": {"after": [{"run": "a", "why": ""}]}}) == [
        "machines[0].gpu", "queue.after[0].why"]


@pytest.mark.slow
def test_a_real_run_writes_only_declared_keys(runs_dir: Path) -> None:
    started = cli("run", "demo", "--detach", *FAST, runs_dir=runs_dir)
    assert started.returncode == 0, started.stderr
    record = wait_until_ended(runs_dir / started.stdout.strip(), 300)
    assert record["status"] == "finished", record
    assert undeclared(record) == []
    for key in ("processes", "pids", "exit_codes", "max_steps", "cwd", "accelerator"):
        assert key in record  # the walk saw the keys written after the start too


def test_what_the_code_adds_to_a_record_is_declared(tmp_path: Path) -> None:
    """The parts of a record no single-machine run writes: a queued run's, a run over SSH's, a requeued Slurm
    job's, a hang's, a lost run's end."""
    sweep = {"id": "20261126-080500-demo", "index": 1, "of": 2, "label": "lr=0.1"}
    queued = queue_fields(tmp_path / "queue", (0, 1), (Dependency("a", "/runs/a", True),), sweep)
    queued["queue"]["chosen"] = {"gpus": [0], "why": "the coolest", "at": time.time()}  # as queue.wait.take_chosen
    plan = plan_machines(profile_with_defaults_of(two_machines()), Path("/runs/r1"), "p.toml", local_python="/p",
                         local_cwd="/c")
    slurm = {"job_id": "7", "script": "slurm.sbatch", "partition": None, "time": None, "account": None,
             "warning_seconds": 60, "requeue": True, "nodes": 1, "gpus_per_node": 0, "host": "n1", "state": None}
    hang = {"since": time.time(), "ranks": [1], "cause": "rank 1 in train.py"}
    record = run_record.new_record("r1", "demo", **queued, **plan.record_fields(), slurm=slurm, hang=hang,
                                   machine_rank=1, home="/runs/r1")
    assert undeclared(record) == []

    from tuitrain.slurm.agent import restart_fields

    assert undeclared(restart_fields(record, 1)) == []


def test_the_fixture_runs_write_only_declared_keys(tmp_path: Path) -> None:
    make_runs(tmp_path / "runs")
    make_multinode_run(tmp_path / "runs")
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "runs").glob("*/run.json"))]
    assert len(records) == 4
    assert [undeclared(r) for r in records] == [[]] * 4
