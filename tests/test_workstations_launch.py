"""Launch on a chosen workstation (issue 23): `tuitrain run --host HOST PROFILE` sends a profile of this machine
there (frozen: --set applied, relative paths made absolute from its folder here), checks it there with that box's
`tuitrain validate` (its data files must be at the same paths there: no data is sent) and starts it there
detached, printing HOST:RUN. On the namespace hosts (tests/hosts.py); they share this file system, so a file
missing here is missing there too."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

import tuitrain
from conftest import FAST, wait_for, wait_until_ended
from test_workstations import settings, tuitrain_processes

pytestmark = pytest.mark.slow
DEMO = Path(tuitrain.__file__).parent / "profiles" / "demo.toml"


@pytest.fixture
def boxes(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    return tmp_path


def run_there(host: str, profile: Path, *overrides: str, **options: Any) -> int:
    from tuitrain.cli.workstations import cmd_run_there

    args = argparse.Namespace(host=host, profile=str(profile), set=list(overrides), no_doctor=False, queue=False,
                              after=None, after_ok=None, sweep=[], **options)
    return cmd_run_there(args)


def sent_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("tuitrain-sent-*"))


def test_a_local_profile_is_sent_checked_and_started_there(boxes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = boxes / "mine" / "tiny.toml"
    mine.parent.mkdir()
    shutil.copy(DEMO, mine)
    assert run_there("node1", mine, *FAST[1::2]) == 0
    out = capsys.readouterr().out.strip()
    host, _, run = out.partition(":")
    assert host == "node1" and run, out
    run_dir = boxes / "node1-runs" / run
    assert run_dir.is_dir() and not list((boxes / "node2-runs").iterdir())
    assert "max_steps = 8" in (run_dir / "profile.toml").read_text()  # its --set went with it
    assert wait_until_ended(run_dir, 300)["status"] == "finished"
    wait_for(lambda: not tuitrain_processes(boxes, "supervise"), 60, "its supervisor gone once the run ended")


def test_data_missing_there_is_one_line_a_file_and_nothing_starts(boxes: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from tuitrain.cli.errors import CliError

    mine = boxes / "mine" / "csv.toml"
    mine.parent.mkdir()
    text = DEMO.read_text().replace('generate = "sentiment-words"', 'train_file = "data/train.csv"\n'
                                    'validation_file = "data/val.csv"')
    mine.write_text(text)
    before = sent_folders()
    with pytest.raises(CliError) as refused:
        run_there("node2", mine)
    said = capsys.readouterr().err.splitlines()
    assert said == [f"node2: data.train_file: no such file: {mine.parent / 'data' / 'train.csv'}",
                    f"node2: data.validation_file: no such file: {mine.parent / 'data' / 'val.csv'}"], said
    assert str(refused.value) == (f"{mine}: not started on node2; its data files must be at the same paths there "
                                  "(tuitrain sends the profile, not its data)")
    assert not list((boxes / "node2-runs").iterdir()) and sent_folders() == before  # nothing started, nothing left


def test_an_unknown_host_is_one_line_and_nothing_is_sent(boxes: Path) -> None:
    from tuitrain.user_config import UserConfigError

    before = sent_folders()
    with pytest.raises(UserConfigError) as refused:
        run_there("gpu9", DEMO)
    assert str(refused.value).startswith("'gpu9' is not a workstation of ") and "(listed: node1, node2)" in str(refused.value)
    assert sent_folders() == before
