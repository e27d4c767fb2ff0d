"""The launch dialog queues a run as `tuitrain run --queue` does (issue 22): ctrl+o creates it queued on this
machine, its supervisor starts it when nothing holds it back; a profile over several machines is refused in the
words the CLI uses (the one start, backends.start)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w

from conftest import FINAL, wait_until_ended
from test_tui_app import make_app, run, until
from tuitrain.profile.lookup import BUILTIN_DIR
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import read_record

QUICK = ["training.max_steps=2", "training.logging_steps=1", "training.eval_strategy=no", "training.save_strategy=no"]


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    (tmp_path / "runs").mkdir()
    return tmp_path


def test_ctrl_o_queues_the_run_and_its_supervisor_starts_it(base: Path) -> None:
    from tuitrain.tui.screens.launch import LaunchScreen

    app = make_app(base)
    runs = base / "runs"

    async def script(pilot):
        app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml", QUICK))
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#queue"),
                    what="the launch dialog")
        await pilot.press("ctrl+o")
        run_dir = await until(pilot, lambda: next(iter(runs.iterdir()), None), timeout=60, what="the queued run")
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", timeout=60, what="its monitor")
        record = await until(pilot, lambda: (r := read_record(RunPaths(run_dir))).get("status") in FINAL and r,
                             timeout=300, what="the run's end")
        assert "queue" in record and record["status"] == "finished", record.get("status")

    run(script, app, size=(120, 40))


def test_a_profile_over_several_machines_is_not_queued(base: Path) -> None:
    from tuitrain.tui.screens.launch import LaunchScreen

    data = tomllib.loads((BUILTIN_DIR / "demo.toml").read_text(encoding="utf-8"))
    data["distributed"] = {"strategy": "ddp", "num_processes": 1, "main_process_ip": "127.0.0.1",
                           "main_process_port": 29555, "machines": [{"host": "localhost"}, {"host": "127.0.0.1"}]}
    profile = base / "two.toml"
    profile.write_text(tomli_w.dumps(data))
    app = make_app(base)

    async def script(pilot):
        app.push_screen(LaunchScreen(profile))
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#queue"),
                    what="the launch dialog")
        await pilot.press("ctrl+o")
        problems = app.screen.query_one("#problems")
        await until(pilot, lambda: "waits on this machine" in str(problems.render()), what="the refusal")
        assert "[[distributed.machines]]" in str(problems.render())
        assert list((base / "runs").iterdir()) == []

    run(script, app, size=(120, 40))


def test_a_profile_that_always_queues_is_queued_by_run_and_by_launch(base: Path) -> None:
    """`[run] queue = true`: `tuitrain run` returns the queued run's id as with --queue, and the dialog's Launch
    queues it; --set run.queue=false starts it at once; with several machines it is one line naming the key."""
    from conftest import cli
    from tuitrain.tui.screens.launch import LaunchScreen

    runs = base / "runs"
    quick = [arg for value in QUICK for arg in ("--set", value)]
    done = cli("run", "demo", "--set", "run.queue=true", *quick, runs_dir=runs)
    assert done.returncode == 0 and "queued run" in done.stderr, done.stderr
    queued = runs / done.stdout.strip()
    assert "queue" in read_record(RunPaths(queued))
    profile = base / "always.toml"
    data = tomllib.loads((BUILTIN_DIR / "demo.toml").read_text(encoding="utf-8"))
    data["run"] = {**data.get("run", {}), "queue": True}
    profile.write_text(tomli_w.dumps(data))
    app = make_app(base)

    async def script(pilot):
        app.push_screen(LaunchScreen(profile, QUICK))
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#launch"),
                    what="the launch dialog")
        app.screen.query_one("#launch").press()
        await until(pilot, lambda: len(list(runs.iterdir())) == 2, timeout=60, what="the second queued run")
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", timeout=60, what="its monitor")

    run(script, app, size=(120, 40))
    launched = next(p for p in runs.iterdir() if p != queued)
    assert "queue" in read_record(RunPaths(launched))
    for run_dir in (queued, launched):
        ended = wait_until_ended(run_dir, 300)
        assert ended["status"] == "finished", ended.get("error")
    at_once = cli("run", "demo", "--set", "run.queue=true", "--set", "run.queue=false", "--detach", *quick,
                  runs_dir=runs)
    assert at_once.returncode == 0 and "queue" not in read_record(RunPaths(runs / at_once.stdout.strip()))
    assert cli("stop", "--now", at_once.stdout.strip(), runs_dir=runs).returncode == 0  # started at once: enough
    wait_until_ended(runs / at_once.stdout.strip(), 60)
    data["distributed"] = {"strategy": "ddp", "num_processes": 1, "main_process_ip": "127.0.0.1",
                           "main_process_port": 29555, "machines": [{"host": "localhost"}, {"host": "127.0.0.1"}]}
    profile.write_text(tomli_w.dumps(data))
    refused = cli("validate", str(profile), "--offline", runs_dir=runs)
    assert refused.returncode == 1 and "run.queue: a run over several machines" in refused.stderr, refused.stderr


def test_the_dialog_queues_a_sweep_after_a_run_as_run_sweep_after_does(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Queue options typed in the dialog are `tuitrain run`'s: `--sweep K=V1,V2 --max-parallel 1 --after RUN` queues
    one run per value, each after RUN, the second after the first too, as one sweep (backends.sweep); what they
    queue is said as they are typed, and a sweep `run --sweep` refuses is refused in its words, queueing nothing.
    Every run waits on GPU 2, held by a stranger (a recorded table), so none of them trains."""
    from conftest import cli
    from queue_tables import gpu_two
    from tuitrain.tui.screens.launch import LaunchScreen

    gpu_two(base / "nvml.json", taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(base / "nvml.json"))
    on_two = ["hardware.accelerator=cuda", "hardware.gpus=[2]", "training.max_steps=2"]
    runs = base / "runs"
    first = cli("run", "demo", "--queue", *(w for s in on_two for w in ("--set", s)), runs_dir=runs).stdout.strip()
    assert first, "the run to wait for"
    said_by_run = cli("run", "demo", *(w for s in on_two for w in ("--set", s)), "--after-ok", "nosuchrun",
                      runs_dir=runs)
    assert said_by_run.returncode != 0 and "--after-ok nosuchrun: " in said_by_run.stderr, said_by_run.stderr
    refused = said_by_run.stderr.strip().split("--after-ok nosuchrun: ", 1)[1]
    app = make_app(base)

    async def script(pilot):
        app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml", on_two))
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen" and app.screen.query("#queue-options"),
                    what="the launch dialog")
        dialog = app.screen
        said = dialog.query_one("#queue-said")
        dialog.query_one("#queue-options").value = "--sweep run.seed=1"
        await until(pilot, lambda: "a sweep needs two values or more" in str(said.render()), what="the refusal")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "a sweep needs two values or more" in str(dialog.query_one("#problems").render()),
                    what="the refusal on ctrl+o")
        assert sorted(p.name for p in runs.iterdir()) == [first]
        dialog.query_one("#queue-options").value = "--max-parallel 2"
        await until(pilot, lambda: "--max-parallel limits the runs of a --sweep" in str(said.render()),
                    what="--max-parallel alone refused as typed")
        dialog.query_one("#queue-options").value = "--after-ok nosuchrun"
        await until(pilot, lambda: str(said.render()) == "queues 1 run, after nosuchrun finish(es) well",
                    what="what --after-ok queues")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "--after-ok nosuchrun: " in str(dialog.query_one("#problems").render())
                    and not dialog.busy, timeout=60, what="the run it names not found, in run's words")
        assert f"--after-ok nosuchrun: {refused}" in str(dialog.query_one("#problems").render())
        assert sorted(p.name for p in runs.iterdir()) == [first]
        dialog.query_one("#queue-options").value = f"--sweep run.seed=1,2 --max-parallel 1 --after {first}"
        await until(pilot, lambda: str(said.render()) == "queues 2 runs of a sweep over run.seed (seed=1, seed=2), "
                    f"at most 1 at once, after {first}", what="what the options queue")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: app.screen is not dialog, timeout=60, what="the sweep queued")

    run(script, app, size=(120, 40))
    swept = sorted(p for p in runs.iterdir() if p.name != first)
    try:
        assert len(swept) == 2
        records = sorted((read_record(RunPaths(p)) for p in swept), key=lambda r: r["queue"]["sweep"]["index"])
        assert [r["queue"]["sweep"]["label"] for r in records] == ["seed=1", "seed=2"]
        assert [[d["run"] for d in r["queue"]["after"]] for r in records] == [[first], [first, records[0]["id"]]]
        assert [r["profile"] for r in records] == ["demo seed=1", "demo seed=2"]
        assert not any(RunPaths(p).control_request("hold").exists() for p in swept)  # let go: queued whole
    finally:
        for run_dir in [*swept, runs / first]:
            cli("cancel", run_dir.name, runs_dir=runs)
        for run_dir in [*swept, runs / first]:
            wait_until_ended(run_dir, 120)
