"""A verb on another workstation's run takes the local verb's options (issue 23): `tuitrain resume HOST:RUN
--set …` continues the run there to the new max_steps, a bad --set is the box's own one line, and the options are
read by this machine's parser (the verb's one list), so `-HHOST` or an abbreviated `--runs` mean here what they
mean for a run here. On the real namespace hosts over sshd (tests/hosts.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, check_clean, cli, events, wait_until_ended
from test_workstations import settings, started
from tuitrain.cli import build_parser
from tuitrain.cli.workstations import remote_argv


@pytest.fixture
def boxes(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(tmp_path, hosts)))
    return tmp_path


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def test_the_box_gets_each_option_as_this_parser_read_it_without_this_machines_own() -> None:
    args = parsed("--runs-dir", "/here", "resume", "gpu2:R1", "-Hgpu2", "--set", "training.max_steps=12",
                  "--set=training.logging_steps=1", "--checkpoint", "checkpoint-4", "-d", "--ssh-config", "lab.cfg")
    assert remote_argv(args, "R1") == ["resume", "--checkpoint=checkpoint-4", "--detach", "--ssh-config=lab.cfg",
                                       "--set=training.max_steps=12", "--set=training.logging_steps=1", "--", "R1"]
    abbreviated = parsed("--runs", "/here", "stop", "R1", "--ho", "gpu2", "--no", "--tim", "30")
    assert remote_argv(abbreviated, "R1") == ["stop", "--now", "--timeout=30.0", "--", "R1"]
    # a value that looks like an option stays a value; defaults are not said (the box has the same ones)
    assert remote_argv(parsed("resume", "R1", "--set=-x"), "R1") == ["resume", "--set=-x", "--", "R1"]
    assert remote_argv(parsed("logs", "gpu2:R1", "-f", "--rank", "0"), "R1") == ["logs", "--rank=0", "--follow",
                                                                                  "--", "R1"]


@pytest.mark.slow
def test_resume_of_a_remote_run_takes_set_there_and_continues_to_its_max_steps(hosts: Any, boxes: Path) -> None:
    run = started(hosts, boxes, "node1", *FAST)
    assert wait_until_ended(boxes / "node1-runs" / run)["status"] == "finished"
    local = boxes / "local-runs"
    local.mkdir()

    # options read here as here: -HHOST and --runs (of --runs-dir) are this machine's, never sent to the box
    status = cli("--runs", str(local), "status", run, "-Hnode1", "--json", runs_dir=local)
    assert status.returncode == 0 and json.loads(status.stdout)["id"] == run, status.stdout + status.stderr

    bad = cli("resume", f"node1:{run}", "--set", "training.max_steps=many", "--detach", runs_dir=local)
    said = check_clean(bad, "training.max_steps", "(from --set)")
    assert len(said.strip().splitlines()) == 1, said

    resumed = cli("resume", f"node1:{run}", "--set", "training.max_steps=12", "--checkpoint", "checkpoint-4",
                  "--detach", runs_dir=local)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "checkpoint-4" in resumed.stderr, resumed.stderr
    child = boxes / "node1-runs" / resumed.stdout.strip().splitlines()[-1]
    ended = wait_until_ended(child)
    assert ended["status"] == "finished" and ended.get("parent") == run, ended
    steps = [e["step"] for e in events(child) if e["event"] == "log" and "loss" in e]
    assert steps and min(steps) == 5 and max(steps) == 12, steps
