"""Every machine's queue in the app (issue 38): `Q` shows what `tuitrain queue --all-hosts` prints, this machine's
queue (a real queued sweep, waiting on a GPU a stranger holds: a recorded NVML table) then each workstation's, or
why it did not answer in one line; `e` lists the sweep's runs each on its line, as `--expand`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import cli, wait_until_ended
from queue_tables import gpu_two
from test_tui_app import make_app, run, until

ON_TWO = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]", "--set", "training.max_steps=2"]


@pytest.fixture
def queued_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Two runs of a sweep queued here, both waiting (GPU 2 is a stranger's); cancelled at the end."""
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    gpu_two(tmp_path / "nvml.json", taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(tmp_path / "nvml.json"))
    runs = tmp_path / "runs"
    runs.mkdir()
    done = cli("run", "demo", *ON_TWO, "--sweep", "run.seed=1,2", "--max-parallel", "1", runs_dir=runs)
    assert done.returncode == 0, done.stderr
    ids = done.stdout.split()
    assert len(ids) == 2, done.stdout
    try:
        yield runs
    finally:
        for run_id in ids:
            cli("cancel", run_id, runs_dir=runs)
        for run_id in ids:
            wait_until_ended(runs / run_id, 120)


def show_queues(tmp_path: Path, expected: str, expanded: str) -> None:
    app = make_app(tmp_path)

    async def script(pilot: Any) -> None:
        await pilot.press("Q")
        screen = await until(pilot, lambda: type(app.screen).__name__ == "QueueScreen" and app.screen,
                             what="the queues")
        await until(pilot, lambda: screen.shown, timeout=120, what="every machine's queue")
        assert screen.shown.rstrip() == expected, (screen.shown, expected)
        await pilot.press("e")
        await until(pilot, lambda: screen.shown and "queue --expand` lists each" not in screen.shown, timeout=120,
                    what="the sweep's runs each on its line")
        assert screen.shown.rstrip() == expanded, (screen.shown, expanded)
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="Home again")

    run(script, app, size=(140, 40))


def test_Q_shows_every_machines_queue_as_queue_all_hosts_prints_it(tmp_path: Path, queued_sweep: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A workstation whose name does not resolve is its one line under its heading, as the command says it."""
    settings = tmp_path / "config.toml"
    settings.write_text('[[workstations]]\nhost = "nohost.invalid"\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings))
    printed = cli("queue", "--all-hosts", runs_dir=queued_sweep, timeout=120)
    expanded = cli("queue", "--all-hosts", "--expand", runs_dir=queued_sweep, timeout=120)
    assert printed.returncode == 1 and "== nohost.invalid\nnohost.invalid: " in printed.stdout, printed.stdout
    assert "2 of 2 runs waiting (seed=1, seed=2)" in printed.stdout, printed.stdout
    show_queues(tmp_path, printed.stdout.rstrip(), expanded.stdout.rstrip())


@pytest.mark.slow
def test_Q_shows_each_boxs_queue_as_it_answers(hosts: Any, tmp_path: Path, queued_sweep: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from test_workstations import settings

    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    printed = cli("queue", "--all-hosts", runs_dir=queued_sweep, timeout=120)
    expanded = cli("queue", "--all-hosts", "--expand", runs_dir=queued_sweep, timeout=120)
    assert printed.returncode == 0 and "== node1\n" in printed.stdout and "== node2\n" in printed.stdout, \
        printed.stdout + printed.stderr
    show_queues(tmp_path, printed.stdout.rstrip(), expanded.stdout.rstrip())
