"""The backend seam (tuitrain.backends): one chooser from a profile or a run record, and the app going through it
where it used to decide for itself — the launch dialog previews a multi-machine profile machine by machine, and
the resume dialog resumes a Slurm run by submitting a job, as `tuitrain resume` does."""

from __future__ import annotations

import ast
import asyncio
import copy
import re
from pathlib import Path

import pytest
import tomli_w

from conftest import DEMO_PROFILE, FAST, cli, losses, record, wait_until_ended
from slurm_cluster import PARTITION, Cluster
from test_tui_app import until
from tuitrain.backends import for_profile, for_run

TWO_MACHINES = {"strategy": "ddp", "num_processes": 1, "main_process_ip": "10.99.0.1", "main_process_port": 29555,
                "machines": [{"host": "box-a"}, {"host": "box-b", "workdir": "/srv/work"}]}


def two_machine_profile(folder: Path) -> Path:
    data = copy.deepcopy(DEMO_PROFILE)
    data["distributed"] = copy.deepcopy(TWO_MACHINES)
    path = folder / "two.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def test_one_chooser_for_profiles_and_records() -> None:
    from tuitrain.slurm.script import JobOptions

    assert for_profile(DEMO_PROFILE).kind == "local"
    assert for_profile({**DEMO_PROFILE, "distributed": TWO_MACHINES}).kind == "machines"
    assert for_profile(DEMO_PROFILE, slurm=JobOptions(partition="debug")).kind == "slurm"  # the command decides
    assert for_profile(None, slurm=JobOptions()).kind == "slurm"
    with pytest.raises(ValueError):
        for_profile(None)
    assert for_run({"id": "r"}).kind == "local"
    assert for_run({"id": "r", "machines": [{"host": "a"}, {"host": "b"}], "ssh_config": "/x"}).kind == "machines"
    assert for_run({"id": "r", "slurm": {"job_id": "7"}}).kind == "slurm"


RUN_KINDS = {"local", "machines", "slurm"}
RECORD = re.compile(r"record|summary")  # what a viewer calls a run's record (a profile's [[distributed.machines]] is not)
PACKAGE = Path(__file__).resolve().parents[1] / "tuitrain"


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _key(node: ast.AST) -> tuple[object, str]:
    """The string a `x.get("K")`, `x["K"]` or `"K" in x` reads, and what `x` is; (None, "") for anything else."""
    if (isinstance(node, ast.Call) and _called(node) == "get" and isinstance(node.func, ast.Attribute) and node.args
            and isinstance(node.args[0], ast.Constant)):
        return node.args[0].value, ast.unparse(node.func.value)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value, ast.unparse(node.value)
    if (isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(node.left, ast.Constant)):
        return node.left.value, ast.unparse(node.comparators[0])
    return None, ""


def kind_tests(text: str, inside: tuple[str, ...]) -> list[tuple[int, str]]:
    """Where a module (its `text`, its path's parts under tuitrain/) tests the kind of a run: compares `run_kind(…)`
    or a `.kind` with a kind's name, asks `run_kind`, `isinstance`s a backend, or reads the record keys a kind
    writes (`slurm`; `machines` in a viewer)."""
    viewer = inside[0] in ("cli", "tui") or (inside[0] == "runs" and inside[1] != "keeper")
    found = []
    for node in ast.walk(ast.parse(text)):
        what = ""
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if (any(_called(s) == "run_kind" or isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides)
                    and any(isinstance(s, ast.Constant) and s.value in RUN_KINDS for s in sides)):
                what = "compares a run's kind"
        if isinstance(node, ast.Call) and _called(node) == "run_kind":
            what = "asks run_kind"
        if isinstance(node, ast.Call) and _called(node) in ("isinstance", "issubclass") and len(node.args) == 2:
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(isinstance(c, ast.Name) and c.id.endswith("Backend") for c in classes):
                what = "isinstance of a backend"
        key, of = _key(node)
        if inside[0] != "slurm" and key == "slurm" or viewer and key == "machines" and RECORD.search(of):
            what = f"reads the record's {key!r}"
        if what:
            found.append((node.lineno, what))
    return sorted(found)


def test_no_module_outside_backends_tests_the_kind_of_a_run() -> None:
    """What differs between local, machines and Slurm runs is asked of the run's backend (tuitrain.backends: its
    job state, machines, stacks, whether it can queue, its checks), never decided by a viewer or a front end: a
    fourth kind is one module in backends/ (and its record's one reader, rundir/kind.py)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        inside = path.relative_to(PACKAGE).parts
        if inside[0] not in ("backends", "rundir"):
            found += [f"{path.relative_to(PACKAGE)}:{n}: {what}" for n, what in kind_tests(path.read_text(), inside)]
    assert found == []


def test_the_kind_test_finds_what_it_looks_for() -> None:
    text = ('if run_kind(record) == "slurm": pass\nif backend.kind != "machines": pass\n'
            'isinstance(b, LocalBackend)\nrecord.get("slurm")\nrecord["machines"]\n"slurm" in record\n'
            'change.kind == "checkpoint"\nrecord.get("status")\nisinstance(plan, MachinesPlan)\n')
    assert kind_tests(text, ("tui", "x.py")) == [
        (1, "asks run_kind"), (1, "compares a run's kind"), (2, "compares a run's kind"),
        (3, "isinstance of a backend"), (4, "reads the record's 'slurm'"), (5, "reads the record's 'machines'"),
        (6, "reads the record's 'slurm'")]
    assert kind_tests('record["machines"]', ("runs", "keeper", "machine_links.py")) == []  # its keeper reads them
    assert kind_tests('section["machines"].doc', ("tui", "screens", "editor.py")) == []  # the profile's schema


def test_a_run_no_scheduler_holds_costs_no_query(tmp_path: Path, monkeypatch) -> None:
    from tuitrain.backends import settle_runs
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.slurm import state as slurm_state
    from tuitrain.slurm.commands import JobState

    asked: list[list[str]] = []
    monkeypatch.setattr(slurm_state, "job_states", lambda ids: asked.append(list(ids)) or {
        i: JobState(i, "RUNNING") for i in asked[-1]})
    monkeypatch.setattr(slurm_state, "_asked", {})
    local = {"id": "r", "status": "running"}
    paths = RunPaths(tmp_path / "r")
    assert settle_runs([(paths, local)]) == [(local, None)] and asked == []
    assert for_run(local).job_words(local) is None
    job = {"id": "s", "status": "running", "slurm": {"job_id": "42", "partition": "debug"}}
    (one, none), (settled, label) = settle_runs([(paths, local), (RunPaths(tmp_path / "s"), job)])
    assert asked == [["42"]] and (one, none) == (local, None)
    assert settled == job and label is not None and label["state"] == "RUNNING" and label["partition"] == "debug"
    assert for_run(job).job_words(job) == "Slurm job 42"
    settle_runs([(RunPaths(tmp_path / "s"), job)])
    assert asked == [["42"]]  # asked again within a second: what Slurm said then


def test_plan_of_a_multi_machine_profile_is_one_plan_per_machine(tmp_path: Path) -> None:
    profile = two_machine_profile(tmp_path)
    result = cli("plan", str(profile), runs_dir=tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "machine 0: box-a" in result.stdout and "machine 1: box-b" in result.stdout
    assert "not built yet" not in result.stdout + result.stderr


def test_the_launch_dialog_previews_a_multi_machine_profile_machine_by_machine(tmp_path: Path) -> None:
    """It used to show the local planner's "… not built yet" error while its Launch button worked."""
    from tuitrain.tui.app import TuitrainApp
    from tuitrain.tui.screens.launch import LaunchScreen

    profile = two_machine_profile(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3, monitor_interval=0.2)

    async def main() -> tuple[str, str]:
        async with app.run_test(size=(120, 40)) as pilot:
            app.push_screen(LaunchScreen(profile))
            await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#plan"), 20,
                        "the launch dialog")
            plan = app.screen.query_one("#plan")
            await until(pilot, lambda: "machine 1" in str(plan.content), 60, "the plan of every machine")
            shown = str(plan.content)
            app.screen.query_one("#overrides").value = "distributed.main_process_port=29556"
            await until(pilot, lambda: "29556" in str(plan.content), 60, "the plan again with the override")
            return shown, str(app.screen.query_one("#problems").content)

    shown, problems = asyncio.run(main())
    assert "# machine 0: box-a" in shown and "# machine 1: box-b, in /srv/work" in shown, shown
    assert "2 process(es) in all · 2 machine(s)" in shown, shown
    assert "not built yet" not in shown + problems, problems
    assert list((tmp_path / "runs").iterdir()) == []  # a preview starts nothing


def test_the_resume_dialog_submits_a_slurm_run_again(slurm_cluster: Cluster, tmp_path: Path) -> None:
    """A Slurm run resumed from the app is a new job on the cluster, as `tuitrain resume` makes it; it used to
    start as a local run on the login node."""
    from tuitrain.tui.app import TuitrainApp
    from tuitrain.tui.screens.resume import ResumeScreen

    runs = tmp_path / "runs"
    submitted = cli("submit", "demo", *FAST, "--partition", PARTITION, "--time", "10", runs_dir=runs)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    parent = runs / submitted.stdout.strip()
    job = str(record(parent)["slurm"]["job_id"])
    assert wait_until_ended(parent, 180)["status"] == "finished"
    app = TuitrainApp(runs, cwd=tmp_path, poll_interval=0.3, monitor_interval=0.2)

    async def main() -> Path:
        async with app.run_test(size=(120, 40)) as pilot:
            app.push_screen(ResumeScreen(parent, "latest", ["training.max_steps=11"]))
            await until(pilot, lambda: type(app.screen).__name__ == "ResumeScreen" and app.screen.query("#resume-set"),
                        20, "the resume dialog")
            await until(pilot, lambda: app.screen.chosen is not None, 30, "the checkpoint")
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", 90, "the resumed run's monitor")
            return app.screen.run_watch.paths.root

    child = asyncio.run(main())
    child_record = record(child)
    assert child_record["parent"] == parent.name and child_record["resume_from"].endswith("checkpoint-8")
    assert child_record["slurm"]["job_id"] not in (None, job)  # a job of its own, with its parent's options
    assert child_record["slurm"]["partition"] == PARTITION and child_record["slurm"]["time"] == "10"
    done = wait_until_ended(child, 180)
    assert done["status"] == "finished", done
    assert min(losses(child)) == 9 and max(losses(child)) == 11
