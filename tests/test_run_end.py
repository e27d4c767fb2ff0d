"""A run's end is recorded when its ranks have all exited 0, not after accelerate launch's own teardown (its
interpreter holds torch: 1-3 s more). The launcher is still reaped, and a run that failed still waits for it
(its log says which rank failed first)."""

from __future__ import annotations

import json

import psutil
import pytest

from conftest import FAST, cli, record

pytestmark = pytest.mark.slow


def still_that_process(entry: dict) -> psutil.Process | None:
    """A recorded process, if it is still running as that process (a shared run's pids may be another's by now)."""
    try:
        proc = psutil.Process(entry["pid"])
        if abs(proc.create_time() - entry["started"]) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE:
            return proc
    except psutil.NoSuchProcess:
        pass
    return None


@pytest.mark.parametrize("shared", ["finished_run", "finished_two_rank_run"], ids=["one-rank", "two-ranks"])
def test_the_end_is_recorded_with_the_ranks_and_the_launcher_is_reaped(shared, request):
    run_dir = request.getfixturevalue(shared)  # a FAST demo run, finished, shared with the tests that read it
    rec = record(run_dir)
    assert rec["status"] == "finished" and rec["exit_codes"]["launcher"] == 0
    assert all(rec["exit_codes"][str(rank)] == 0 for rank in range(rec["num_processes"]))
    ranks = [json.loads((run_dir / "ranks" / f"rank-{rank}.json").read_text()) for rank in range(rec["num_processes"])]
    assert [r["machine_rank"] for r in ranks] == [0] * rec["num_processes"]  # the supervisor's machine, said back
    launcher_log = (run_dir / "logs" / "launcher.log").read_text()
    if rec["num_processes"] == 1:  # one process is started as its own rank (issue 35): no accelerate launch to wait for
        assert "run finished (its one rank's exit code 0)" in launcher_log, launcher_log
    else:  # the end is recorded with the ranks, unless the launcher's teardown ended first (a race either may win)
        assert "every rank exited 0; accelerate launch still exiting" in launcher_log or \
            "run finished (launcher exit code 0)" in launcher_log, launcher_log
    supervisor = still_that_process(rec["processes"]["supervisor"])
    if supervisor is not None:  # it outlives the record only to reap the launcher
        supervisor.wait(timeout=120)
    assert still_that_process(rec["processes"]["launcher"]) is None


def test_a_failed_rank_still_waits_for_the_launchers_word(runs_dir):
    done = cli("run", "demo", *FAST, "--set", "data.text_column=nope", runs_dir=runs_dir, timeout=600)
    assert done.returncode != 0
    (run_dir,) = list(runs_dir.iterdir())
    assert record(run_dir)["status"] == "failed"
    assert "accelerate launch still exiting" not in (run_dir / "logs" / "launcher.log").read_text()


def test_a_run_whose_directory_is_removed_ends_every_process(runs_dir):
    """`rm -rf runs/<id>` under a live run: nothing can show it or stop it any more, so it must not train on
    unseen (holding its GPUs) for ever."""
    import shutil

    from conftest import losses, wait_for

    started = cli("run", "demo", "--detach", "--set", "training.max_steps=100000", "--set", "training.logging_steps=1",
                  "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no", runs_dir=runs_dir)
    assert started.returncode == 0, started.stderr
    run_dir = runs_dir / started.stdout.strip()
    wait_for(lambda: losses(run_dir), 300, "a logged step")
    rec = record(run_dir)
    pids = [rec["pids"]["supervisor"], rec["pids"]["launcher"], *rec["pids"]["ranks"].values()]
    for _ in range(5):  # the sampler may write a file in it meanwhile (an atomic write's temporary name)
        try:
            shutil.rmtree(run_dir)
            break
        except OSError:
            continue
    assert not run_dir.exists()

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def gone() -> bool:
        return not any(alive(pid) for pid in pids)

    wait_for(gone, 120, "every process of the removed run to end")
