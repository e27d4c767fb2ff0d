"""The launch dialog queues a run as `tuitrain run --queue` does (issue 22): ctrl+o creates it queued on this
machine, its supervisor starts it when nothing holds it back; a profile over several machines is refused in the
words the CLI uses (backends.queueing)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w

from conftest import FINAL
from test_tui_app import make_app, run, until
from tuitrain.profile.lookup import BUILTIN_DIR
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.record import read_record

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
