"""The launch dialog starts a profile of this machine on a chosen workstation (issue 23), as `tuitrain run --host`
does (remote.launch_there): Where picks the box (shown only with workstations in the settings), Launch sends it,
checks it there and starts it there detached, then the run's monitor opens on its mirror; a refusal is one line
each in the dialog's problems box and nothing starts. On the namespace hosts (tests/hosts.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import tuitrain
from conftest import FAST, wait_for, wait_until_ended
from test_tui_app import make_app, run, until
from test_workstations import settings, tuitrain_processes

DEMO = Path(tuitrain.__file__).parent / "profiles" / "demo.toml"


@pytest.fixture
def boxes(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "runs").mkdir()
    return tmp_path


async def launch_dialog(pilot: Any, app: Any, profile: Path, overrides: list[str], host: str) -> Any:
    from tuitrain.tui.screens.launch import LaunchScreen

    app.push_screen(LaunchScreen(profile, overrides))
    dialog = await until(pilot, lambda: isinstance(app.screen, LaunchScreen) and app.screen.query("#where")
                         and app.screen, 30, what="the launch dialog with Where")
    dialog.query_one("#where").value = host
    await until(pilot, lambda: dialog.host() == host, what=f"{host} chosen")
    return dialog


@pytest.mark.slow
def test_launch_on_a_box_starts_it_there_and_opens_its_monitor(boxes: Path) -> None:
    from tuitrain.tui.screens.monitor import MonitorScreen

    mine = boxes / "mine" / "tiny.toml"
    mine.parent.mkdir()
    shutil.copy(DEMO, mine)
    app = make_app(boxes)

    async def script(pilot: Any) -> None:
        await launch_dialog(pilot, app, mine, FAST[1::2], "node1")
        app.screen.query_one("#launch").press()
        monitor = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#title")
                              and app.screen, 300, what="the new run's monitor, composed")
        run_id = monitor.run_dir.name
        assert monitor.run_dir == boxes / "cache" / "tuitrain" / "workstations" / "node1" / run_id
        assert monitor.query_one("#title").text.endswith(" · on node1"), monitor.query_one("#title").text
        there = boxes / "node1-runs" / run_id
        assert there.is_dir() and not list((boxes / "node2-runs").iterdir()) and not list((boxes / "runs").iterdir())
        assert "max_steps = 8" in (there / "profile.toml").read_text()  # its overrides went with it
        assert wait_until_ended(there, 300)["status"] == "finished"
        await pilot.press("escape")

    run(script, app, size=(120, 40), notifications=True)
    wait_for(lambda: not tuitrain_processes(boxes, "workstations", "--mirror"), 60, "no mirror left on node1")


@pytest.mark.slow
def test_data_missing_there_is_one_line_each_in_the_dialog_and_nothing_starts(boxes: Path) -> None:
    import tempfile

    from tuitrain.tui.screens.launch import LaunchScreen

    mine = boxes / "mine" / "csv.toml"
    mine.parent.mkdir()
    mine.write_text(DEMO.read_text().replace('generate = "sentiment-words"', 'train_file = "data/train.csv"\n'
                                             'validation_file = "data/val.csv"'))
    before = set(Path(tempfile.gettempdir()).glob("tuitrain-sent-*"))
    app = make_app(boxes)

    async def script(pilot: Any) -> None:
        dialog = await launch_dialog(pilot, app, mine, [], "node2")
        dialog.query_one("#launch").press()
        problems = dialog.query_one("#problems")
        await until(pilot, lambda: "not started on node2" in str(problems.render()), 120, what="the refusal")
        assert str(problems.render()).splitlines() == [
            f"node2: data.train_file: no such file: {mine.parent / 'data' / 'train.csv'}",
            f"node2: data.validation_file: no such file: {mine.parent / 'data' / 'val.csv'}",
            (f"{mine}: not started on node2; its data files must be at the same paths there "
            "(tuitrain sends the profile, not its data)")]
        assert isinstance(app.screen, LaunchScreen) and not dialog.busy

    run(script, app, size=(120, 40))
    assert not list((boxes / "node2-runs").iterdir()) and not list((boxes / "runs").iterdir())
    assert set(Path(tempfile.gettempdir()).glob("tuitrain-sent-*")) == before  # nothing left there


@pytest.mark.slow
def test_a_box_that_cannot_be_reached_is_one_line_and_nothing_starts(hosts: Any, boxes: Path) -> None:
    from test_workstations import kill_every_sshd

    app = make_app(boxes)

    async def script(pilot: Any) -> None:
        dialog = await launch_dialog(pilot, app, DEMO, FAST[1::2], "node2")
        kill_every_sshd(hosts, "node2")
        dialog.query_one("#launch").press()
        problems = dialog.query_one("#problems")
        await until(pilot, lambda: str(problems.render()).startswith("node2: "), 120, what="the refusal")
        assert len(str(problems.render()).splitlines()) == 1, str(problems.render())

    try:
        run(script, app, size=(120, 40))
    finally:
        if hosts["node2"].sshd is None:
            hosts.start_sshd("node2")
    assert not list((boxes / "node2-runs").iterdir())


def test_where_lists_this_machine_first_and_the_copied_command_names_the_box(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """No ssh here: the settings name boxes, Where offers them, ctrl+y copies `run --host`, Slurm stays here."""
    from textual.widgets import Select

    from tuitrain.tui.screens.launch import LaunchScreen

    config = tmp_path / "config.toml"
    config.write_text('[[workstations]]\nhost = "gpu2"\n\n[[workstations]]\nhost = "gpu3"\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(config))
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def script(pilot: Any) -> None:
        app.push_screen(LaunchScreen(DEMO, ["training.max_steps=3"]))
        dialog = await until(pilot, lambda: isinstance(app.screen, LaunchScreen) and app.screen.query("#where")
                             and app.screen, 30, what="the launch dialog with Where")
        where = dialog.query_one("#where", Select)
        assert [str(prompt) for prompt, _ in where._options] == ["this machine", "gpu2", "gpu3"]
        assert dialog.host() == ""
        where.value = "gpu3"
        await until(pilot, lambda: dialog.host() == "gpu3", what="gpu3 chosen")
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard, what="the copied command")
        assert app.clipboard == f"tuitrain run {DEMO} --set training.max_steps=3 --host gpu3"
        dialog.query_one("#submit").press()
        problems = dialog.query_one("#problems")
        await until(pilot, lambda: "Slurm: a job is submitted from this machine" in str(problems.render()),
                    what="Slurm refused for a box")

    run(script, app, size=(120, 40))
    assert not list((tmp_path / "runs").iterdir())
