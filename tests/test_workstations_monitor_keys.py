"""The monitor's keys on another workstation's run do what they do on a run here (issue 23): `h` takes the stacks
there (`tuitrain stacks RUN --json` on its box) into the same stacks screen, `R` opens the resume dialog and its
--set overrides go to the box (a refusal there is the dialog's one line), and `x` exports a checkpoint there into a
folder of that box, as `tuitrain export HOST:RUN OUT` does. The app's parts on the real namespace hosts over sshd
(tests/hosts.py); what is read from the box's answers, here."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import check_clean, cli, wait_for
from test_tui_fixtures import FAILED, FINISHED, RUNNING, make_runs
from test_tui_hangs import sleeper_rank

STACKS_JSON = {"run": RUNNING, "digest": ["rank 0: in your script, sleeper.py line 6 `time.sleep(…)`"],
               "ranks": {"0": {"pid": 4242, "how": "faulthandler", "state": None,
                               "where": "in your script, sleeper.py line 6 `time.sleep(…)`",
                               "file": f"/box/runs/{RUNNING}/stacks/rank-0.txt",
                               "threads": [{"name": "0x7f00", "frames": [["/box/sleeper.py", 6, "<module>"]]},
                                           {"name": "0x7f01", "frames": [["/usr/lib/threading.py", 9, "wait"]]}]}}}


def parsed(*argv: str) -> argparse.Namespace:
    from tuitrain.cli import build_parser

    return build_parser().parse_args(argv)


def test_export_of_a_workstations_run_is_sent_to_its_box_with_the_folder_there(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tuitrain.cli.workstations import remote_argv, remote_target

    config = tmp_path / "config.toml"
    config.write_text('[[workstations]]\nhost = "node1"\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(config))
    args = parsed("export", "node1:R1", "model-out", "--checkpoint", "checkpoint-4")
    assert remote_target(args) == ("node1", "R1")
    assert remote_argv(args, "R1") == ["export", "--checkpoint=checkpoint-4", "--", "R1", "model-out"]
    assert remote_target(parsed("export", "R1", "out", "-H", "node1")) == ("node1", "R1")


def test_a_boxs_stacks_json_is_drawn_as_a_local_runs_stacks_and_a_bad_answer_is_one_line() -> None:
    from tuitrain.tui.screens.stacks import Stacks, remote_stacks, stacks_text

    stacks = remote_stacks("node1", json.dumps(STACKS_JSON))
    assert isinstance(stacks, Stacks)
    shown = stacks_text(stacks).plain
    lines = shown.splitlines()
    assert lines[:2] == ["digest", "  rank 0: in your script, sleeper.py line 6 `time.sleep(…)`"], shown
    assert "rank 0 (pid 4242, faulthandler)" in lines and "<module> sleeper.py:6" in lines, shown
    assert "(+1 other thread)" in lines, shown
    assert lines[-1] == f"every thread of each rank: /box/runs/{RUNNING}/stacks/rank-K.txt on node1", shown
    every = stacks_text(stacks, all_threads=True).plain.splitlines()  # `a`: the box's other thread too
    assert ["0x7f00 (main, 1 frame):", "  <module> sleeper.py:6", "0x7f01 (1 frame):", "  wait threading.py:9"] == [
        line for line in every if line.startswith(("0x", "  <", "  wait"))], every
    bad = remote_stacks("node1", "usage: tuitrain …")
    assert isinstance(bad, str) and bad.startswith("node1: ") and "\n" not in bad


def test_a_resume_there_sends_each_override_as_one_option_value() -> None:
    from tuitrain.tui.actions import resume_argv

    assert resume_argv("R1", "latest", ["training.max_steps=12", "data.text=-x"]) == [
        "resume", "--checkpoint=latest", "--detach", "--set=training.max_steps=12", "--set=data.text=-x", "--", "R1"]


@pytest.fixture
def rank_on_node1(tmp_path: Path) -> Any:
    """node1's runs folder with the fixture runs, its running one's rank 0 a real process that answers SIGUSR2 as a
    rank does (the hosts share this machine's process table)."""
    run_dir = make_runs(tmp_path / "node1-runs")[RUNNING]
    with sleeper_rank(run_dir, tmp_path) as proc:
        yield proc


@pytest.mark.slow
def test_export_of_a_boxs_run_runs_there_and_its_refusal_is_one_line(hosts: Any, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from test_workstations import settings

    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    make_runs(tmp_path / "node1-runs")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "model.bin").write_text("x")
    (tmp_path / "local-runs").mkdir()
    done = cli("export", f"node1:{FINISHED}", str(taken), runs_dir=tmp_path / "local-runs")
    said = check_clean(done, f"{taken} already exists and is not an empty folder")  # the run is only on node1
    assert len(said.strip().splitlines()) == 1, said


@pytest.mark.slow
def test_h_R_and_x_on_a_boxs_run_do_it_there(hosts: Any, tmp_path: Path, rank_on_node1: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Input

    from test_tui_app import make_app, run, until
    from test_tui_home_table import shown_ids
    from test_workstations import settings, tuitrain_processes
    from tuitrain.profile import builtin_profile_path
    from tuitrain.tui.screens.monitor import MonitorScreen
    from tuitrain.tui.screens.resume import ResumeScreen
    from tuitrain.tui.screens.stacks import StacksScreen

    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "node1-runs" / FINISHED / "profile.toml").write_text(builtin_profile_path().read_text())  # a real one
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def open_monitor(pilot: Any, run_id: str) -> MonitorScreen:
        await until(pilot, lambda: f"node1:{run_id}" in shown_ids(app), 60, what=f"node1's {run_id} in Home")
        app.screen.query_one("#runs").move_cursor(row=shown_ids(app).index(f"node1:{run_id}"))
        await pilot.press("enter")
        return await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.query("#header")
                           and app.screen.host == "node1" and app.screen, 60, what="the remote run's monitor")

    def said(words: str) -> str | None:
        return next((str(n.message) for n in app._notifications if words in str(n.message)), None)

    async def script(pilot: Any) -> None:
        monitor = await open_monitor(pilot, RUNNING)
        await until(pilot, lambda: "running" in monitor.query_one("#header").text, 60, what="the running run")
        await pilot.press("h")
        screen = await until(pilot, lambda: isinstance(app.screen, StacksScreen) and app.screen, 30,
                             what="the stacks screen")
        await until(pilot, lambda: screen.shown, 120, what="the stacks taken on node1")
        lines = screen.shown.splitlines()
        assert lines[:2] == ["digest", "  rank 0: in your script, sleeper.py line 6 `time.sleep(…)`"], screen.shown
        assert f"rank 0 (pid {rank_on_node1.pid}, faulthandler)" in lines and "<module> sleeper.py:6" in lines
        assert lines[-1].endswith(f"{RUNNING}/stacks/rank-K.txt on node1"), screen.shown
        assert (tmp_path / "node1-runs" / RUNNING / "stacks" / "digest.json").is_file(), "taken there"
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is monitor, what="back to the monitor")

        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MonitorScreen), what="back home")

        await open_monitor(pilot, FINISHED)
        await pilot.press("R")
        dialog = await until(pilot, lambda: isinstance(app.screen, ResumeScreen) and app.screen, 30,
                             what="the resume dialog")
        assert dialog.elsewhere == ("node1", FINISHED)
        dialog.query_one("#resume-set", Input).value = "training.max_steps=many"
        await pilot.press("enter")
        await until(pilot, lambda: dialog.problems and not dialog.busy, 120, what="node1's refusal")
        (problem,) = dialog.problems
        assert problem.startswith("node1: ") and "training.max_steps" in problem and "\n" not in problem, problem
        assert "Traceback" not in problem and app.screen is dialog
        assert not [p for p in (tmp_path / "node1-runs").iterdir() if p.name not in (FINISHED, FAILED, RUNNING)], \
            "nothing started"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), what="back to the monitor")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, MonitorScreen), what="back home")

    run(script, app, size=(140, 40), notifications=True)
    wait_for(lambda: not tuitrain_processes(tmp_path, "workstations"), 60, "no tuitrain left on node1")


@pytest.mark.slow
def test_x_on_a_boxs_run_exports_its_checkpoint_there_into_the_folder_chosen(hosts: Any, tmp_path: Path,
                                                                             finished_run: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A real finished demo run on node1: `x` offers the checkpoints node1 sees, a folder there that is not empty is
    refused in node1's one line, and a new one gets the model, exported there by `tuitrain export node1:RUN OUT`."""
    import shutil

    from test_tui_app import make_app, run, until
    from test_tui_home_table import shown_ids
    from test_workstations import settings
    from tuitrain.tui.screens.export import ExportScreen
    from tuitrain.tui.screens.monitor import MonitorScreen

    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copy = tmp_path / "node1-runs" / finished_run.name
    shutil.copytree(finished_run, copy)
    record = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**record, "output_dir": str(copy / "output")}))
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "model.bin").write_text("x")
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    def said(title: str) -> str | None:
        return next((str(n.message) for n in app._notifications if n.title == title), None)

    async def export_into(pilot: Any, monitor: MonitorScreen, folder: Path) -> None:
        await pilot.press("x")
        dialog = await until(pilot, lambda: isinstance(app.screen, ExportScreen) and app.screen, 30,
                             what="the export dialog")
        assert dialog.host == "node1" and dialog.chosen.path.parent == copy / "output", dialog.chosen
        dialog.pick("last")
        await until(pilot, lambda: dialog.chosen.path.name == "checkpoint-8", what="the last checkpoint")
        dialog.query_one("#export-out").value = str(folder)
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is monitor, what="the dialog closed")

    async def script(pilot: Any) -> None:
        run_id = f"node1:{finished_run.name}"
        await until(pilot, lambda: run_id in shown_ids(app), 60, what="node1's run in Home")
        app.screen.query_one("#runs").move_cursor(row=shown_ids(app).index(run_id))
        await pilot.press("enter")
        monitor = await until(pilot, lambda: isinstance(app.screen, MonitorScreen) and app.screen.host == "node1"
                              and len(app.screen.run_watch.checkpoints) == 2 and app.screen, 60,
                              what="the run's monitor with node1's checkpoints")
        await export_into(pilot, monitor, taken)
        refused = await until(pilot, lambda: said("Cannot export"), 120, what="node1's refusal")
        assert f"{taken} already exists and is not an empty folder" in refused and "\n" not in refused, refused
        await export_into(pilot, monitor, tmp_path / "exported")
        done = await until(pilot, lambda: said("Exported"), 300, what="the export on node1")
        assert str(tmp_path / "exported") in done, done

    run(script, app, size=(140, 40), notifications=True)
    folder = tmp_path / "exported"
    assert json.loads((folder / "config.json").read_text())["model_type"] == "bert"
    assert (folder / "model.safetensors").stat().st_size > 0 and not (folder / "optimizer.pt").exists()
