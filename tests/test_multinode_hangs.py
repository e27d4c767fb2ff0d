"""Issue 26 across two machines (namespace hosts, tests/hosts.py): a rank frozen with SIGSTOP on machine b of a
run over SSH. Its heartbeat comes home with the mirror, so home marks the run hung? (`[run] hang_after = 4`: within
about 6 s of the freeze on an idle machine, the mirror adding a fraction of a second); `tuitrain stacks` reaches the
ranks on both machines through their node agents (`node_agent NODE_DIR --stacks WORKDIR` over ssh) and names the
frozen rank first; its agent says it is stopped, and a graceful stop says what it waits for. Home itself writes the
hang's digest once, from the stacks each machine's supervisor took of its own ranks (their files come home)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from conftest import cli, only_run, wait_for
from machine_profiles import free_port, write_profile
from test_hangs import FAULTHANDLER
from test_multinode import LONG, leftovers, losses, rank_pid, record, run_cli, wait_final
from tuitrain.runs.hang import run_hang
from tuitrain.runs.heartbeat import Beat, read_beats
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.stacks import mirrored_stacks, read_digest


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
    paths.rank_stacks(0).write_text(FAULTHANDLER)
    paths.rank_stacks(1).write_text("stale")
    os.utime(paths.rank_stacks(1), (1, 1))
    taken, missing = mirrored_stacks(paths, beats, {2: "stopped"})
    assert missing == [1]
    assert taken[0].how == "faulthandler" and len(taken[0].threads) == 2
    assert (taken[2].state, taken[2].pid) == ("stopped", 102)
