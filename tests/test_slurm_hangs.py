"""Issue 26 under Slurm: a job's nodes keep their heartbeats and stacks in their own folders of the shared run
directory (node 0 the run's own, node M > 0 nodes/machine-M/), so the viewers at home judge every node's ranks, and
`tuitrain stacks` asks each node's supervisor through that directory (control/stacks in its folder) for its own
ranks' stacks: a signal from the login node reaches no rank.

The real job is tests/test_hangs.py's script on the namespace hosts node1 and node2 (one rank each): rank 1, on node
2, sleeps for ever at the end of step 5 while rank 0 goes on into tuitrain's control broadcast."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil

from conftest import FINAL, cli, record, wait_for, wait_until_ended
from slurm_cluster import TWO_NODES, Cluster
from test_hangs import HANG_AFTER, SCRIPT, SLEEP_LINE
from test_multinode import leftovers
from tuitrain.backends import for_run
from tuitrain.rundir.layout import CONTROL_STACKS, PHASE_STEP, RunPaths
from tuitrain.rundir.record import read_record
from tuitrain.runs.view.hang import run_hang
from tuitrain.runs.view.stacks import answer_stacks_request, gather

# -- a run directory made here --------------------------------------------------------------------------------------


def heartbeat(folder: Path, rank: int, moved: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "phase": PHASE_STEP, "time": moved,
                                                          "since": moved, "step": 5, "step_seconds": 0.1}))


def test_a_slurm_node_s_heartbeats_are_judged_at_home(tmp_path: Path) -> None:
    """Rank 1 beats in node 2's folder and stopped moving 100 s ago; rank 0, in the run's own, moves."""
    paths = RunPaths(tmp_path / "run")
    heartbeat(paths.heartbeats, 0, 1000.0)
    heartbeat(paths.node(1).heartbeats, 1, 900.0)
    verdict = run_hang(paths, {"status": "running"}, now=1000.0, states={})
    assert verdict is not None and verdict.hung, verdict
    assert [(s.rank, s.since) for s in verdict.stalled] == [(1, 900.0)]
    assert list(paths.nodes()) == [0, 1] and paths.node(1).nodes() == {0: paths.node(1)}


def test_a_rank_stopped_on_a_slurm_node_is_known_stopped_at_home(tmp_path: Path) -> None:
    """Node 2's supervisor writes its stopped ranks into its own folder (SlurmSupervisor.tell_stopped_ranks)."""
    paths = RunPaths(tmp_path / "run")
    heartbeat(paths.heartbeats, 0, 1000.0)
    heartbeat(paths.node(1).heartbeats, 1, 1000.0)
    paths.node(1).machine_states(1).write_text(json.dumps({"1": "stopped"}))
    verdict = run_hang(paths, {"status": "running"}, now=1000.0)
    assert verdict is not None and [(s.rank, s.state) for s in verdict.stalled] == [(1, "stopped")], verdict


RANK = '''
import sys
import time
from pathlib import Path

from tuitrain.engine.rank_io import register_stacks_dump

register_stacks_dump(Path(sys.argv[1]), int(sys.argv[2]))
print("ready", flush=True)
time.sleep(3600)  # where the rank is
'''


def test_tuitrain_stacks_asks_every_node_s_supervisor_through_the_run_directory(tmp_path: Path) -> None:
    """A job supervised elsewhere: each node's rank writes its stacks into its node's folder when that node's
    supervisor (here a thread answering as SlurmSupervisor.tick does) finds the request; a node that is not there
    is named."""
    paths = RunPaths(tmp_path / "run")
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    ranks = []
    for rank in (0, 1):
        paths.node(rank).root.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([sys.executable, str(script), str(paths.node(rank).root), str(rank)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        wait_for(lambda pid=proc.pid: psutil.Process(pid).status() == psutil.STATUS_SLEEPING, 30, "the rank to sleep")
        ranks.append(proc)
    done = threading.Event()

    def supervise(node: RunPaths, rank: int, pid: int) -> None:
        while not done.is_set():
            answer_stacks_request(node, {"processes": {f"rank {rank}": pid}})
            done.wait(0.05)

    supervisors = [threading.Thread(target=supervise, args=(paths.node(r), r, p.pid), daemon=True)
                   for r, p in enumerate(ranks)]
    for thread in supervisors:
        thread.start()
    job: dict[str, Any] = {"status": "running", "slurm": {"job_id": "7", "host": "another-host"}}
    try:
        taken, summary = gather(paths, job, for_run(job).take_stacks)
        assert sorted(taken) == [0, 1] and all(s.how == "faulthandler" for s in taken.values()), taken
        line = next(i for i, text in enumerate(RANK.splitlines(), 1) if "# where the rank is" in text)
        assert summary["ranks"] == {str(r): f"in your script, rank.py line {line} `time.sleep(…)`" for r in (0, 1)}
        for rank in (0, 1):  # kept here, where `tuitrain stacks` names them, and in the node's own folder
            assert "most recent call first" in paths.rank_stacks(rank).read_text()
            assert "most recent call first" in paths.node(rank).rank_stacks(rank).read_text()
            assert not paths.node(rank).control_request(CONTROL_STACKS).exists()

        paths.node(2).root.mkdir(parents=True)  # a node with no supervisor to answer
        from tuitrain.runs.view import stacks

        taken, problems = stacks.nodes_stacks(paths, paths.nodes(), timeout=1.0)
        assert sorted(taken) == [0, 1] and problems == ["node 2: its supervisor did not answer within 1s"], problems
        assert not paths.node(2).control_request(CONTROL_STACKS).exists()  # taken back
    finally:
        done.set()
        for proc in ranks:
            proc.kill()
            proc.wait()


def test_word_of_a_hang_comes_from_node_0_alone(tmp_path: Path, monkeypatch) -> None:
    """Every node's supervisor judges its own ranks (to act on on_hang there); node 0 judges them all, and its word
    of the hang is the job's."""
    from tuitrain import notify
    from tuitrain.rundir.record import new_record, write_record
    from tuitrain.slurm.agent import SlurmSupervisor, prepare_node

    home = RunPaths(tmp_path / "run")
    home.root.mkdir()
    home.profile.write_text("")
    write_record(home, new_record(home.id, "p.toml"))
    sent: list[str] = []
    monkeypatch.setattr(notify, "notify_end", lambda word, progress, run_dir: sent.append(run_dir))
    for node in (1, 0):
        SlurmSupervisor(prepare_node(home, node, 1, read_record(home)), home).send_hang_word()
    for thread in threading.enumerate():
        if thread.name == "hang-word":
            thread.join(30)
    assert sent == [str(home.root)]


# -- a real two-node job ---------------------------------------------------------------------------------------------

def status_saying(run: Path, runs_dir: Path, needle: str) -> str | None:
    said = cli("status", run.name, runs_dir=runs_dir).stdout
    return said if needle in said else None


def test_a_rank_asleep_on_node_2_is_found_hung_at_home_and_its_stacks_come_from_its_node(
        slurm_two_nodes: Cluster, runs_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(SCRIPT)
    profile = project / "train.toml"
    profile.write_text('[script]\npath = "train.py"\nargs = ["--hang_at", "5"]\n\n[hardware]\naccelerator = "cpu"\n\n'
                       '[distributed]\nstrategy = "ddp"\nnum_machines = 2\nnetwork_interface = "net0"\n\n'
                       f'[run]\nhang_after = {HANG_AFTER}\n')
    submitted = cli("submit", str(profile), "--partition", TWO_NODES, "--time", "10", runs_dir=runs_dir, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    run = runs_dir / submitted.stdout.strip()
    rank1 = 0
    try:
        # node 0's supervisor judges both nodes' heartbeats and takes every node's stacks once on the hang
        kept = wait_for(lambda: (run / "stacks" / "digest.json").exists() or record(run)["status"] in FINAL, 300,
                        "node 0's supervisor to find the hang and take the stacks")
        assert kept is True and record(run)["status"] not in FINAL, (record(run), (run / "logs" / "launcher.log")
                                                                      .read_text()[-3000:])
        assert (run / "nodes" / "machine-1" / "heartbeats" / "rank-1.json").exists()
        hang = wait_for(lambda: record(run).get("hang"), 60, "the hang in run.json")
        assert sorted(hang["ranks"]) == [0, 1], hang
        assert f"rank 1: in your script, train.py line {SLEEP_LINE} `time.sleep(…)`" in hang["cause"], hang
        assert "rank 0: waiting in broadcast" in hang["cause"], hang

        said = json.loads(cli("status", run.name, "--json", runs_dir=runs_dir).stdout)
        assert said["hang"]["hung"] and {s["rank"] for s in said["hang"]["stalled"]} == {0, 1}, said["hang"]
        listing = cli("runs", runs_dir=runs_dir).stdout
        assert "hung?" in next(line for line in listing.splitlines() if line.startswith(run.name)), listing

        shown = cli("stacks", run.name, runs_dir=runs_dir, timeout=120)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        lines = shown.stdout.splitlines()
        at = lines.index("digest")
        assert lines[at + 1] == f"  rank 1: in your script, train.py line {SLEEP_LINE} `time.sleep(…)`", shown.stdout
        assert lines[at + 2].startswith("  rank 0: waiting in broadcast ("), shown.stdout
        assert "on_step_end train.py" in shown.stdout  # rank 1's block, from node 2
        for rank in (0, 1):
            assert "most recent call first" in (run / "stacks" / f"rank-{rank}.txt").read_text()
        assert "most recent call first" in (run / "nodes" / "machine-1" / "stacks" / "rank-1.txt").read_text()

        # frozen on node 2: home knows it stopped, from node 2's supervisor
        rank1 = json.loads((run / "ranks" / "rank-1.json").read_text())["pid"]
        os.kill(rank1, signal.SIGSTOP)
        said_stopped = wait_for(lambda: status_saying(run, runs_dir, "rank 1 is stopped (SIGSTOP)"), 60,
                                "status to say rank 1 is stopped")
        assert "status     hung?" in said_stopped, said_stopped
        verdict = run_hang(RunPaths(run), record(run))
        assert verdict is not None and [(s.rank, s.state) for s in verdict.stalled if s.state] == [(1, "stopped")]
    finally:
        if rank1:
            os.kill(rank1, signal.SIGCONT)
        cli("stop", "--now", run.name, runs_dir=runs_dir, timeout=120)
    wait_until_ended(run, 120)
    wait_for(lambda: not leftovers(runs_dir), 60, "no process left on either host")
