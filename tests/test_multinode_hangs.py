"""Issue 26 across two machines (namespace hosts, tests/hosts.py): a rank frozen with SIGSTOP on machine b of a
run over SSH. Its heartbeat comes home with the mirror, so home marks the run hung? (`[run] hang_after = 4`: within
about 6 s of the freeze on an idle machine, the mirror adding a fraction of a second); `tuitrain stacks` reaches the
ranks on both machines through their node agents (`node_agent NODE_DIR --stacks WORKDIR` over ssh) and names the
frozen rank first; its agent says it is stopped, and a graceful stop says what it waits for. Home itself writes the
hang's digest once, from the stacks each machine's supervisor took of its own ranks (their files come home), and
names a data loader worker that hangs on machine b as a local run's digest does."""

from __future__ import annotations

import os
import signal
import sysconfig
from pathlib import Path
from typing import Any

from conftest import cli, only_run, wait_for
from machine_profiles import free_port, write_profile
from test_hangs import FAULTHANDLER, SCRIPT, WORKER_SLEEP_LINE
from test_multinode import LONG, leftovers, losses, rank_pid, record, run_cli, wait_final
from tuitrain.rundir.heartbeat import Beat, read_beats
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.view.hang import run_hang
from tuitrain.runs.view.stacks import (
    RankStacks,
    WorkerStacks,
    describe_rank,
    digest_data,
    mirrored_stacks,
    parse_stacks,
    read_digest,
    workers_part,
)


def test_a_rank_frozen_on_machine_b_is_marked_hung_and_stacks_reach_it_through_its_agent(
        hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port())
    result = run_cli(hosts, runs_dir, "run", str(path), "--detach", "--no-doctor", *LONG, "--set", "run.hang_after=4")
    assert result.returncode == 0, result.stdout + result.stderr
    run = only_run(runs_dir)
    paths = RunPaths(run)
    wait_for(lambda: losses(run), 120, "a first logged step")
    # a step's limit is hang_after once the ranks have step times (before, a step is start-up: it may compile)
    wait_for(lambda: sorted(b.rank for b in read_beats(paths).values() if b.step_seconds) == [0, 1], 120,
             "both machines' heartbeats at home, with step times")
    rank1 = rank_pid(run, 1)  # on node2 (the hosts share this machine's process table)
    os.kill(rank1, signal.SIGSTOP)
    try:
        def hung() -> Any:  # rank 1 known stopped (its agent says so), rank 0 stalled in the collective
            verdict = run_hang(paths, record(run))
            return verdict if verdict is not None and [s.rank for s in verdict.stalled] == [0, 1] else None

        verdict = wait_for(hung, 60, "home to mark the run hung?")
        assert [s.state for s in verdict.stalled] == [None, "stopped"], verdict
        listing = cli("runs", runs_dir=runs_dir).stdout
        assert "hung?" in listing.splitlines()[1], listing

        # home writes the hang's digest once, from the stacks each machine's supervisor took and the mirror brought
        kept = wait_for(lambda: read_digest(paths), 120, "home to write the hang's digest")
        assert kept["lines"][0] == f"rank 1: stopped (SIGSTOP): no stack, it answers no signal until continued " \
                                   f"(kill -CONT {rank1})", kept
        assert kept["lines"][1].startswith("rank 0: "), kept
        assert "waiting in" in kept["lines"][1] or "in backward" in kept["lines"][1], kept
        assert kept["how"] == {"0": "faulthandler", "1": ""}, kept
        cause = wait_for(lambda: (record(run).get("hang") or {}).get("cause"), 30, "the hang's cause in run.json")
        assert cause.startswith("hung: rank") and "made no progress" in cause, cause
        assert "rank 1: stopped (SIGSTOP)" in cause, cause
        assert "stacks     rank 1: stopped (SIGSTOP)" in cli("status", run.name, runs_dir=runs_dir).stdout

        stacks = cli("stacks", run.name, runs_dir=runs_dir, timeout=180)
        assert stacks.returncode == 0, stacks.stdout + stacks.stderr
        lines = stacks.stdout.splitlines()
        digest = lines[lines.index("digest") + 1:]
        assert digest[0] == f"  rank 1: stopped (SIGSTOP): no stack, it answers no signal until continued " \
                            f"(kill -CONT {rank1})", stacks.stdout
        assert digest[1].startswith("  rank 0: "), stacks.stdout
        assert "waiting in" in digest[1] or "in backward" in digest[1], stacks.stdout
        assert "most recent call first" in paths.rank_stacks(0).read_text()  # node1's rank, its file at home

        stop = cli("stop", run.name, runs_dir=runs_dir)
        assert stop.returncode == 0, stop.stderr
        assert f"rank 1 (pid {rank1} on node2) is stopped (SIGSTOP)" in stop.stderr, stop.stderr
        assert "rank 0 made no progress for" in stop.stderr and "step's end" in stop.stderr, stop.stderr
        assert f"tuitrain stop --now {run.name}" in stop.stderr, stop.stderr
    finally:
        cli("stop", "--now", run.name, runs_dir=runs_dir)
        os.kill(rank1, signal.SIGCONT)
    rec = wait_final(run, 120)
    assert rec["status"] in ("killed", "failed", "stopped"), rec
    wait_for(lambda: not leftovers(tmp_path), 60, "no process of the run left on either host")


def test_home_takes_only_the_stacks_taken_since_a_rank_last_moved(tmp_path: Path) -> None:
    """A stacks file older here than the rank's heartbeat is an earlier one: that rank's stacks have not come home."""
    paths = RunPaths(tmp_path)
    paths.heartbeats.mkdir()
    paths.stacks.mkdir()
    beats = [Beat(rank, "step", 1000.0, 1000.0, pid=100 + rank) for rank in range(3)]
    for rank in range(3):
        paths.heartbeat(rank).write_text("{}")
    paths.rank_stacks(0).write_text(FAULTHANDLER + workers_part(()))
    paths.rank_stacks(1).write_text("stale" + workers_part(()))
    os.utime(paths.rank_stacks(1), (1, 1))
    taken, missing = mirrored_stacks(paths, beats, {2: "stopped"})
    assert missing == [1]
    assert taken[0].how == "faulthandler" and len(taken[0].threads) == 2
    assert (taken[2].state, taken[2].pid) == ("stopped", 102)


STDLIB = sysconfig.get_paths()["stdlib"]  # Python's own frames: a worker waiting for work is in them
WAITING_FOR_DATA = """Current thread 0x00007f2cfe5bab80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1295 in _get_data
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1454 in _next_data
  File "/venv/lib/python3.11/site-packages/transformers/trainer.py", line 2400 in _inner_training_loop
  File "/home/me/train.py", line 90 in main
  File "/home/me/train.py", line 99 in <module>
"""
WORKER = """Current thread 0x00007f2cfe5bab81 (most recent call first):
  File "/home/me/train.py", line 57 in __getitem__
  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 52 in fetch
  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 349 in _worker_loop
  File "/usr/lib/python3.11/multiprocessing/process.py", line 108 in run
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314 in _bootstrap
  File "/home/me/train.py", line 90 in main
"""
IDLE_WORKER = f"""Current thread 0x00007f2cfe5bab82 (most recent call first):
  File "{STDLIB}/multiprocessing/queues.py", line 113 in get
  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 320 in _worker_loop
  File "{STDLIB}/multiprocessing/process.py", line 314 in _bootstrap
"""


def test_home_names_a_remote_ranks_data_loader_worker_as_a_local_digest_does(tmp_path: Path) -> None:
    """The rank's file as its machine's supervisor left it (its workers' stacks after its own) is read back at home
    into the same stacks, so the digest's words are the local rule's (describe_rank): the worker in your code is
    named. A file without its closing line (the rank's dump alone, on its way) is not read yet."""
    paths = RunPaths(tmp_path)
    paths.heartbeats.mkdir()
    paths.stacks.mkdir()
    workers = (WorkerStacks(0, 500, "faulthandler", IDLE_WORKER, parse_stacks(IDLE_WORKER)),
               WorkerStacks(1, 501, "faulthandler", WORKER, parse_stacks(WORKER)))
    local = RankStacks(1, 101, "faulthandler", WAITING_FOR_DATA, threads=parse_stacks(WAITING_FOR_DATA),
                       workers=workers)
    said = "waiting for its data loader; worker 1 in train.py line 57"
    assert describe_rank(local) == said
    beats = [Beat(rank, "between steps", 1000.0, 1000.0, pid=100 + rank) for rank in range(2)]
    for rank in range(2):
        paths.heartbeat(rank).write_text("{}")
    paths.rank_stacks(0).write_text(FAULTHANDLER + workers_part(()))
    paths.rank_stacks(1).write_text(WAITING_FOR_DATA)  # its dump is here, its workers' not yet
    taken, missing = mirrored_stacks(paths, beats, {})
    assert missing == [1] and list(taken) == [0]
    assert taken[0].how == "faulthandler" and taken[0].text == FAULTHANDLER.rstrip("\n") and not taken[0].workers

    paths.rank_stacks(1).write_text(WAITING_FOR_DATA + workers_part(workers))
    taken, missing = mirrored_stacks(paths, beats, {})
    assert missing == [] and [w.worker for w in taken[1].workers] == [0, 1], taken
    assert [(w.worker, w.pid, w.how, w.threads) for w in taken[1].workers] == \
        [(w.worker, w.pid, w.how, w.threads) for w in workers] and taken[1].pid == 101
    assert describe_rank(taken[1]) == said
    waiting = "waiting in all_reduce (trainer.py:2410 → distributed_c10d.py:2801)"
    assert digest_data(paths, taken)["lines"] == [f"rank 1: {said}", f"rank 0: {waiting}"]


def test_a_data_loader_worker_that_hangs_on_machine_b_is_named_in_homes_digest(
        hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    """Rank 1 on node2 has two data loader workers; its worker 1 sleeps for ever after its 20th row, so rank 1 waits
    for its data loader while rank 0 (node1) goes on into DDP's all-reduce. Home's digest names the worker and the
    line it sleeps on, from the stacks node2's supervisor took of its rank and that rank's workers."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "train.py").write_text(SCRIPT)
    args = ["--workers", "2", "--worker_hang_after", "20", "--worker_hang_rank", "1"]
    (folder / "train.toml").write_text(
        f'[script]\npath = "train.py"\nargs = {args!r}\n\n[hardware]\naccelerator = "cpu"\n\n'
        '[run]\nhang_after = 4\n\n'
        f'[distributed]\nstrategy = "ddp"\nnum_processes = 1\nmain_process_ip = "{hosts["node1"].address}"\n'
        f'main_process_port = {free_port()}\nnetwork_interface = "{hosts["node1"].ifname}"\n'
        '[[distributed.machines]]\nhost = "node1"\n[[distributed.machines]]\nhost = "node2"\n')
    result = run_cli(hosts, runs_dir, "run", str(folder / "train.toml"), "--detach", "--no-doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    run = only_run(runs_dir)
    paths = RunPaths(run)
    worker = f"waiting for its data loader; worker 1 in train.py line {WORKER_SLEEP_LINE} `time.sleep(…)`"
    try:
        kept = wait_for(lambda: read_digest(paths) or record(run)["status"] not in ("starting", "running"), 240,
                        "home to find the hang and write its digest")
        assert kept is not True, record(run)
        assert kept["lines"][0] == f"rank 1: {worker}", kept
        assert kept["lines"][1].startswith("rank 0: "), kept
        assert "waiting in" in kept["lines"][1] or "in backward" in kept["lines"][1], kept
        cause = wait_for(lambda: (record(run).get("hang") or {}).get("cause"), 30, "the hang's cause in run.json")
        assert f"rank 1: {worker}" in cause, cause

        stacks = cli("stacks", run.name, runs_dir=runs_dir, timeout=180)  # asked of each machine's agent now
        assert stacks.returncode == 0, stacks.stdout + stacks.stderr
        assert f"  rank 1: {worker}" in stacks.stdout, stacks.stdout
    finally:
        cli("stop", "--now", run.name, runs_dir=runs_dir)
    rec = wait_final(run, 120)
    assert rec["status"] in ("killed", "failed", "stopped"), rec
    wait_for(lambda: not leftovers(tmp_path), 60, "no process of the run left on either host")
