"""The run keeper (runs.keeper.supervisor.Supervisor) is written once over a small workers interface (runs.keeper.workers): the
record, control requests, the hang watch's gating, the end and its outcome are the keeper's, whatever its workers
are. These drive it over fake workers, with no process started."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

from tuitrain.rundir import preemption
from tuitrain.rundir.layout import CONTROL_SAVE, CONTROL_STOP, CONTROL_TERMINATE, RunPaths
from tuitrain.rundir.record import new_record, read_record, write_record
from tuitrain.runs.keeper.local_launch import LauncherOptions, LocalLaunch
from tuitrain.runs.keeper.supervisor import Supervisor, run_supervisor
from tuitrain.runs.keeper.workers import Keeper, Outcome, Settled
from tuitrain.slurm.agent import SlurmSupervisor


class FakeWorkers:
    """Workers that end after `looks` looks, as told, and remember what the keeper asked of them."""

    STOP_SAID = "stop requested: the fakes stop"
    KILLED_SAID = "ended by `tuitrain stop --now`: every fake was ended"
    HANG_SAID = "{said} ({on_hang})"
    SAMPLED_HERE = False
    ACTS_ON_HANG = False

    def __init__(self, keeper: Keeper, looks: int = 3, status: str = "finished", down: bool = False) -> None:
        self.keeper = keeper
        self.looks = looks
        self.status = status
        self.tearing_down = down
        self.asked: list[str] = []

    def start(self) -> None:
        self.asked.append("start")
        self.keeper.update(status="running")

    def poll(self, woke: bool) -> None:
        self.looks -= 1

    def relay_control(self) -> None:
        self.asked.append("relay")

    def terminate(self, why: str) -> None:
        self.asked.append(f"terminate: {why}")
        self.looks = 0

    def rank_pids(self) -> dict[int, int]:
        return {}

    def rank_states(self) -> dict[int, str] | None:
        return None

    def hang_begins(self, limit: float | None) -> None:
        self.asked.append("hang")

    def hang_cause(self, stalled: str) -> str | None:
        return f"hung: {stalled}"

    def step(self) -> int | None:
        return 0 if self.looks <= 0 else None

    def wait(self) -> bool:
        return False

    def abort(self) -> None:
        self.asked.append("abort")

    def settle(self, code: int) -> Settled:
        return Settled({"fake": code})

    def outcome(self, code: int, records: dict[int, dict[str, Any]], cause: Any) -> Outcome:
        return ("stopped" if self.keeper.stop_requested else self.status), None, None

    def said_end(self, status: str, code: int, error: str | None) -> str:
        return f"fakes {status}"

    def after_end(self, exit_codes: dict[str, Any]) -> None:
        self.asked.append("after end")


def _run_dir(tmp_path: Path) -> RunPaths:
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    write_record(paths, new_record("run", "fake"))
    return paths


def _keeper(paths: RunPaths, **fake: Any) -> tuple[Supervisor, FakeWorkers]:
    made: list[FakeWorkers] = []

    def workers(keeper: Keeper) -> FakeWorkers:
        made.append(FakeWorkers(keeper, **fake))
        return made[-1]

    keeper = Supervisor(paths, workers)
    return keeper, made[-1]


def test_the_keeper_records_its_workers_end_with_their_exit_codes(tmp_path: Path) -> None:
    paths = _run_dir(tmp_path)
    keeper, fakes = _keeper(paths)
    assert run_supervisor(keeper) == "finished"
    record = read_record(paths)
    assert (record["status"], record["exit_codes"], record.get("error")) == ("finished", {"fake": 0}, None)
    assert fakes.asked[0] == "start" and fakes.asked[-1] == "after end" and "relay" in fakes.asked


def test_stop_now_is_the_keepers_and_its_words_are_the_workers(tmp_path: Path) -> None:
    paths = _run_dir(tmp_path)
    paths.control.mkdir()
    paths.control_request(CONTROL_TERMINATE).touch()
    keeper, fakes = _keeper(paths, looks=1000)
    assert run_supervisor(keeper) == "killed"
    assert read_record(paths).get("error") == FakeWorkers.KILLED_SAID
    assert fakes.asked.count("terminate: ended by a kill request (`tuitrain stop --now`, or k in the app)") == 1


def test_a_stop_request_is_taken_once_and_the_workers_say_the_outcome(tmp_path: Path) -> None:
    paths = _run_dir(tmp_path)
    paths.control.mkdir()
    paths.control_request(CONTROL_STOP).touch()
    keeper, _ = _keeper(paths)
    assert run_supervisor(keeper) == "stopped"
    assert keeper.stop_requested
    assert read_record(paths)["status"] == "stopped"


def test_while_the_workers_are_torn_down_no_control_request_is_taken(tmp_path: Path) -> None:
    paths = _run_dir(tmp_path)
    paths.control.mkdir()
    for name in (CONTROL_STOP, CONTROL_TERMINATE, CONTROL_SAVE):
        paths.control_request(name).touch()
    keeper, fakes = _keeper(paths, down=True, status="failed")
    assert run_supervisor(keeper) == "failed"
    assert not keeper.stop_requested and not keeper.terminating
    assert [a for a in fakes.asked if a == "relay" or a.startswith("terminate")] == []


LAUNCHER_SAYS = """
import json, os, signal, sys
json.dump({"x": os.environ.get("TUITRAIN_TEST_OPTION"), "term_ignored": signal.getsignal(signal.SIGTERM) == signal.SIG_IGN},
          open(sys.argv[1], "w"))
"""


def test_the_launchers_options_are_its_workers_not_the_keepers(tmp_path: Path) -> None:
    """LocalLaunch starts the launcher with the options it was made with (environment, what runs in it first):
    a keeper of any kind only chooses its workers."""
    paths = _run_dir(tmp_path)
    said = tmp_path / "said.json"
    write_record(paths, new_record("run", "fake", argv=[sys.executable, "-c", LAUNCHER_SAYS, str(said)]))
    options = LauncherOptions(env={"TUITRAIN_TEST_OPTION": "given"}, first=preemption.ignore_term)
    keeper = Supervisor(paths, lambda k: LocalLaunch(k, options))
    assert isinstance(keeper.workers, LocalLaunch)
    keeper.workers.start()
    assert keeper.workers.launcher is not None and keeper.workers.launcher.wait(timeout=120) == 0
    assert json.loads(said.read_text()) == {"x": "given", "term_ignored": True}


def test_a_slurm_node_chooses_a_launcher_that_outlives_slurms_sigterm(tmp_path: Path) -> None:
    paths = _run_dir(tmp_path)
    workers = SlurmSupervisor(paths, paths).workers
    assert isinstance(workers, LocalLaunch)
    assert dict(workers.options.env) == preemption.launcher_env()
    assert (workers.options.parent_death_signal, workers.options.first) == (signal.SIGKILL, preemption.ignore_term)
