"""The shared-workstation queue (issue 22): runs that wait for other runs and for free GPUs, the queue's view,
cancel, and bad input refused before anything is queued. Real demo runs on the CPU; GPUs from a recorded NVML
table that changes during the test."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAST, check_clean, cli, record, wait_for, wait_until_ended
from tests.queue_tables import LAUNCH_BOUND, NVML, gpu_two, held, launch_bound, queued_behind_a_run
from tuitrain.cli.queueing import status_lines
from tuitrain.runs.queue.entries import Dependency, Entry
from tuitrain.runs.queue.rule import dependency_cycle

# what four_gpu_mixed's GPU 1 and `held`'s stranger on GPU 0 make a GPU: taken, and by whom
FULL_ONE = ("96% full, 97% busy, held by pid 4100001 (user unknown, 30.0 GiB), pid 4100002 (user unknown, "
            "16.0 GiB)")
STRANGER_ON_0 = "95% full, held by pid 4100077 (user unknown, 10.4 GiB)"
LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]


@pytest.fixture(autouse=True)
def own_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own queue folder and config (the CLI's children inherit the environment)."""
    folder = tmp_path / "queue"
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TUITRAIN_CONFIG")  # the settings found where a user's are (conftest names an empty file)
    return folder


def queued(runs_dir: Path, *args: str) -> Path:
    done = cli("run", "demo", *args, runs_dir=runs_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = runs_dir / done.stdout.strip()
    assert record(run_dir)["status"] == "queued"
    return run_dir


def queue_json(runs_dir: Path) -> dict[str, Any]:
    done = cli("queue", "--json", runs_dir=runs_dir)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def end_now(run_dir: Path, runs_dir: Path) -> None:
    """A queued run once the test has seen it start: what it trains is no part of the test, so it ends now."""
    assert cli("stop", "--now", run_dir.name, runs_dir=runs_dir).returncode == 0
    wait_until_ended(run_dir, 60)


def steps(run_dir: Path) -> int:
    path = run_dir / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return max((json.loads(line).get("step") or 0 for line in lines if line.strip()), default=0)


@pytest.mark.slow
def test_a_run_queued_after_a_running_run_starts_after_its_end_and_not_before(runs_dir: Path) -> None:
    first = runs_dir / cli("run", "demo", "--detach", *LONG, runs_dir=runs_dir).stdout.strip()
    second = queued(runs_dir, "--after", first.name, *FAST)
    only_ok = queued(runs_dir, "--after-ok", first.name, *FAST)
    wait_for(lambda: steps(first) >= 3, 180, "the first run's third step")
    assert record(second)["status"] == "queued" and record(second)["started"] is None
    shown = queue_json(runs_dir)["runs"]
    assert [r["run"] for r in shown] == [second.name, only_ok.name]
    assert shown[0]["position"] == 1 and shown[0]["waits"][0].startswith(f"run {first.name} to end (running, step ")
    assert shown[1]["waits"][0].startswith(f"run {first.name} to finish (--after-ok) (running, step ")
    assert cli("stop", first.name, "--now", runs_dir=runs_dir).returncode == 0
    ended = wait_until_ended(first, 60)
    assert wait_until_ended(only_ok)["status"] == "failed"
    rec = wait_until_ended(second, 240)
    assert rec["status"] == "finished", rec
    assert rec["started"] >= ended["ended"]
    assert queue_json(runs_dir)["runs"] == []  # its entry left with its end


@pytest.mark.slow
def test_after_ok_on_a_run_that_fails_ends_the_queued_run_with_that_reason(runs_dir: Path) -> None:
    failing = runs_dir / cli("run", "demo", "--detach", *FAST, "--set", "model.config.type_vocab_size=0",
                             runs_dir=runs_dir).stdout.strip()
    follower = queued(runs_dir, "--after-ok", failing.name, *FAST)
    assert wait_until_ended(failing)["status"] == "failed"
    rec = wait_until_ended(follower, 60)
    assert rec["status"] == "failed" and rec["started"] is None
    assert f"run {failing.name}" in rec["error"] and "--after-ok" in rec["error"] and "ended failed" in rec["error"]
    # queued after it now: refused in one line, nothing queued
    again = cli("run", "demo", "--after-ok", failing.name, runs_dir=runs_dir)
    check_clean(again, "already ended failed", "--after")
    assert sorted(p.name for p in runs_dir.iterdir()) == sorted([failing.name, follower.name])


@pytest.mark.slow
def test_two_queued_runs_wanting_one_gpu_start_one_after_the_other(runs_dir: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "nvml.json"
    gpu_two(table, taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    on_gpu = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]", *FAST]
    first = queued(runs_dir, "--queue", *on_gpu)
    second = queued(runs_dir, "--queue", *on_gpu)
    shown = queue_json(runs_dir)["runs"]
    assert [r["run"] for r in shown] == [first.name, second.name] and [r["position"] for r in shown] == [1, 2]
    assert shown[0]["waits"] == ["GPU 2: 95% full, held by pid 4100077 (user unknown, 22.8 GiB)"], shown
    assert shown[1]["waits"] == [f"GPU 2: run {first.name} ({shown[0]['user']}) is ahead in the queue"], shown
    assert record(first)["status"] == record(second)["status"] == "queued"
    assert status_lines(second, record(second)) == ["queue      position 2 of 2", f"waits for  {shown[1]['waits'][0]}"]
    said = cli("status", second.name, runs_dir=runs_dir).stdout  # tuitrain status says it too
    assert "queue      position 2 of 2" in said and f"waits for  {shown[1]['waits'][0]}" in said, said
    gpu_two(table, taken=False)  # the stranger is gone
    wait_for(lambda: record(first)["started"], 60, "the first queued run to start")
    assert record(second)["started"] is None
    held = queue_json(runs_dir)["runs"]
    assert held[0]["run"] == second.name and held[0]["waits"][0].startswith(f"GPU 2: held by run {first.name}")
    ended = wait_until_ended(first)
    started = wait_for(lambda: record(second)["started"], 60, "the second queued run to start")
    assert started >= ended["ended"]
    end_now(second, runs_dir)


@pytest.mark.slow
def test_a_queued_run_waits_for_a_gpu_a_launch_bound_run_holds_naming_it_and_starts_once_it_is_gone(
        runs_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35: a run at 15% of an H100 and 5% of its memory holds it. Run A's rank is the table's one process (a
    live process here, so the queue names it by its run); a plain run onto it starts with a one-line warning; a
    queued run waits, saying who holds the GPU, and starts once the driver no longer lists the process. The GPU lane
    runs the same flow on a real GPU (tests/test_gpu_queue_lane.py)."""
    table = tmp_path / "nvml.json"
    launch_bound(table, None)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    on_gpu = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[0]"]

    def plain_run_warns(first: Path) -> None:
        said = (first / "logs" / "rank-0.log").read_text()  # a rehearsal on the CPU, and the rank says so
        assert "rank 0 trains on the CPU: the run's GPUs are a recorded device table's" in said, said[-2000:]
        plain = cli("run", "demo", "--detach", *on_gpu, *FAST, runs_dir=runs_dir)
        beside = runs_dir / plain.stdout.strip()
        assert plain.returncode == 0 and beside.is_dir(), plain.stderr  # it starts, as python train.py would
        cli("stop", beside.name, "--now", runs_dir=runs_dir)
        (warning,) = [line for line in plain.stderr.splitlines() if "hardware.gpus" in line]
        assert (f"warning: hardware.gpus: GPU 0 (NVIDIA H100 80GB HBM3) is held by rank 0 of run {first.name} "
                "(3.8 GiB)") in warning, plain.stderr
        assert "--queue" in warning
        wait_until_ended(beside, 120)
        shown = queue_json(runs_dir)["runs"]
        assert shown[0]["waits"] == [f"GPU 0: held by rank 0 of run {first.name} (3.8 GiB)"], shown  # 15%: no "busy"

    _, rec = queued_behind_a_run(runs_dir, on_gpu, lambda pid: launch_bound(table, pid), plain_run_warns)
    assert rec["queue"]["gpus"] == [0] and rec["status"] == "finished", rec


def test_a_gpu_a_process_computes_on_is_shared_only_by_a_run_that_sets_min_free_memory(tmp_path: Path) -> None:
    """On the recorded tables: the launch-bound run's GPU waits a plain queued run and takes one that asked for
    10 GiB of its 75.8 free (memory decides, as before); a desktop's GPU (graphics processes only) is free; a
    compute process that holds no memory yet takes its GPU all the same."""
    from tuitrain.hardware.devices import discover, no_identity
    from tuitrain.hardware.recorded import RecordedNvml, load_table
    from tuitrain.runs.queue.rule import verdict

    gib = 2**30

    def entry(gpus: tuple[int, ...] = (0,), min_free: int | None = None, count: int = 0) -> Entry:
        (tmp_path / "r1").mkdir(exist_ok=True)
        return Entry(name="r1.json", run="r1", run_dir=str(tmp_path / "r1"), uid=0, user="ann", queued=0.0,
                     gpus=gpus, min_free=min_free, count=count)

    def decide(table: Path, wanted: Entry) -> Any:
        gpus = discover(RecordedNvml(load_table(table)), no_identity).gpus
        return verdict(wanted, [wanted], lambda: gpus)

    alone = decide(LAUNCH_BOUND, entry())
    assert not alone.start and alone.waits == ("GPU 0: held by pid 4100401 (user unknown, 3.8 GiB)",), alone
    assert decide(LAUNCH_BOUND, entry(min_free=10 * gib)).start
    greedy = decide(LAUNCH_BOUND, entry(min_free=78 * gib))
    assert not greedy.start and greedy.waits[0].startswith(
        "GPU 0: 75.8 GiB free, 78.0 GiB needed (hardware.min_free_memory), 3.8 GiB used, held by pid 4100401"), greedy
    desktop = LAUNCH_BOUND.parent / "workstation_desktop.json"
    assert decide(desktop, entry((0,))).start  # Xorg and gnome-shell draw there: no compute process
    starting = decide(desktop, entry((1,)))
    assert starting.waits == ("GPU 1: held by pid 4100503 (user unknown, no memory yet)",), starting
    anyone = decide(desktop, entry((), count=2))
    passed = "passed over GPU 1: held by pid 4100503 (user unknown, no memory yet)"
    assert not anyone.start and anyone.waits == (f"any 2 free GPU(s): GPU 0: only 1 of the 2 asked are free ({passed})",)


@pytest.mark.slow
def test_cancel_drops_a_queued_run_and_a_killed_waiter_is_lost(runs_dir: Path) -> None:
    first = runs_dir / cli("run", "demo", "--detach", *LONG, runs_dir=runs_dir).stdout.strip()
    dropped = queued(runs_dir, "--after", first.name)
    orphan = queued(runs_dir, "--after", first.name)
    signalled = queued(runs_dir, "--after", first.name)
    done = cli("cancel", dropped.name, runs_dir=runs_dir)
    assert done.returncode == 0, done.stderr
    rec = record(dropped)
    assert rec["status"] == "cancelled" and rec["started"] is None and "cancel" in rec["error"]
    check_clean(cli("cancel", dropped.name, runs_dir=runs_dir), "already ended (cancelled)")
    check_clean(cli("cancel", first.name, runs_dir=runs_dir), "has started", "tuitrain stop")
    os.kill(record(signalled)["pids"]["supervisor"], signal.SIGTERM)  # as a logout or `kill` would
    rec = wait_for(lambda: record(signalled)["status"] == "cancelled" and record(signalled), 30,
                   "the signalled waiter's run to be cancelled")
    assert "SIGTERM" in rec["error"]
    os.kill(record(orphan)["pids"]["supervisor"], signal.SIGKILL)
    shown = wait_for(lambda: (s := json.loads(cli("status", orphan.name, "--json", runs_dir=runs_dir).stdout))
                     ["status"] == "lost" and s, 30, "the killed waiter's run to show as lost")
    assert "supervisor" in shown["error"]
    assert [r["run"] for r in queue_json(runs_dir)["runs"]] == []
    assert cli("stop", first.name, "--now", runs_dir=runs_dir).returncode == 0
    wait_until_ended(first, 60)


def test_bad_queue_input_is_one_line_and_queues_nothing(runs_dir: Path, tmp_path: Path) -> None:
    check_clean(cli("run", "demo", "--after", "20990101-000000-nope", runs_dir=runs_dir), "--after 20990101-000000-nope",
                "no run")
    gpus = {**os.environ, "TUITRAIN_NVML_TABLE": str(NVML)}
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tuitrain", "run", "demo", "--queue", "--set", "hardware.accelerator=cuda",
                           "--set", "hardware.gpus=[9]", "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, env=gpus, timeout=300)
    check_clean(done, "hardware.gpus", "GPU(s) 9 not found on this machine")
    for wrong, says in (("hardware.gpus=9", "hardware.gpus: asks for any 9 GPUs, but this machine has 4"),
                        ('hardware.min_free_memory="200GiB"', "hardware.min_free_memory: 200GiB is more than any GPU")):
        done = subprocess.run([sys.executable, "-m", "tuitrain", "run", "demo", "--queue", "--set",
                               "hardware.accelerator=cuda", "--set", wrong, "--runs-dir", str(runs_dir)],
                              capture_output=True, text=True, env=gpus, timeout=300)
        check_clean(done, says)
    config = tmp_path / "config" / "tuitrain" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[notify]\ntimeout = "soon"\n')
    check_clean(cli("run", "demo", "--queue", runs_dir=runs_dir), f"{config}: notify.timeout:", "e.g. timeout = 10")
    config.unlink()
    # two runs that wait for each other (only hand-made records can: a new run waits only for older ones)
    for name, other in (("20990101-000000-x", "20990101-000000-y"), ("20990101-000000-y", "20990101-000000-x")):
        (runs_dir / name).mkdir()
        (runs_dir / name / "run.json").write_text(json.dumps({
            "id": name, "profile": "demo", "status": "queued", "created": 0,
            "queue": {"after": [{"run": other, "run_dir": str(runs_dir / other), "ok": False}]}}))
    check_clean(cli("run", "demo", "--after", "20990101-000000-x", runs_dir=runs_dir), "wait for each other",
                "20990101-000000-x -> 20990101-000000-y -> 20990101-000000-x")
    assert sorted(p.name for p in runs_dir.iterdir()) == ["20990101-000000-x", "20990101-000000-y"]
    assert not (tmp_path / "queue").exists() or not [p for p in (tmp_path / "queue").iterdir() if p.suffix == ".json"]


def test_a_dependency_cycle_is_found_through_recorded_waits(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for run, other in ((a, b), (b, a)):
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"id": run.name, "status": "queued", "queue": {
            "after": [{"run": other.name, "run_dir": str(other), "ok": False}]}}))
    assert dependency_cycle([Dependency("a", str(a))]) == ["a", "b", "a"]
    (b / "run.json").write_text(json.dumps({"id": "b", "status": "queued"}))
    assert dependency_cycle([Dependency("a", str(a))]) == []


@pytest.mark.slow
def test_gpus_n_waits_for_n_free_gpus_then_takes_them_and_records_which(runs_dir: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "nvml.json"
    held(table, {0: 0.95, 2: 0.95})  # and GPU 1 is full already: only GPU 3 is free
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    any_two = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=2", *FAST]
    plan = cli("plan", "demo", *any_two, runs_dir=runs_dir)
    assert "hardware.gpus = 2: any 2 free GPU(s); chosen at start" in plan.stdout, plan.stdout + plan.stderr
    wide = queued(runs_dir, "--queue", *any_two)
    shown = queue_json(runs_dir)["runs"]
    assert shown[0]["any_gpus"] == 2 and shown[0]["gpus"] == []
    assert shown[0]["waits"][0] == (f"any 2 free GPU(s): GPU 3: only 1 of the 2 asked are free (passed over "
                                    f"GPU 0: {STRANGER_ON_0}; GPU 1: {FULL_ONE}; GPU 2: 95% full, held by pid 4100077 "
                                    "(user unknown, 22.8 GiB))"), shown
    assert status_lines(wide, record(wide))[1] == f"waits for  {shown[0]['waits'][0]}"
    held(table, {0: 0.95})  # GPU 2's stranger is gone
    rec = wait_for(lambda: record(wide)["started"] and record(wide), 60, "the run asking for any 2 GPUs to start")
    chosen = rec["queue"]["chosen"]
    assert chosen["gpus"] == [2, 3] and rec["queue"]["gpus"] == [2, 3]
    assert chosen["why"] == f"GPU 2, 3: the first 2 free (passed over GPU 0: {STRANGER_ON_0}; GPU 1: {FULL_ONE})"
    assert rec["env"]["CUDA_VISIBLE_DEVICES"] == "2,3" and rec["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert status_lines(wide, rec) == [f"gpus       2, 3, chosen by the queue at its start: {chosen['why']}"]
    end_now(wide, runs_dir)


@pytest.mark.slow
def test_min_free_memory_waits_for_that_much_free_then_shares_a_busy_gpu(runs_dir: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "nvml.json"
    held(table, {2: 0.95}, busy=90)  # the RTX 4090 (24 GiB): 1.2 GiB free, and busy
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    small = queued(runs_dir, "--queue", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]",
                   "--set", 'hardware.min_free_memory="10GiB"', *FAST)
    shown = queue_json(runs_dir)["runs"]
    assert shown[0]["min_free_memory"] == 10 * 2**30
    assert shown[0]["waits"][0].startswith("GPU 2: 1.2 GiB free, 10.0 GiB needed (hardware.min_free_memory)"), shown
    held(table, {2: 0.5}, busy=90)  # the stranger shrank: 12 GiB free, still busy computing
    rec = wait_for(lambda: record(small)["started"] and record(small), 60, "the small run to start beside it")
    assert rec["queue"]["gpus"] == [2]
    end_now(small, runs_dir)


def test_runs_that_set_min_free_memory_share_a_gpu_by_the_memory_they_promised(tmp_path: Path) -> None:
    """Four runs of 20 GiB fit one 80 GiB GPU, a fifth waits (the memory promised to a started run counts even
    before it is allocated); a run without min_free_memory never joins a GPU a queued run holds; a run asking for
    any 2 GPUs takes the first two that fit, passing over the held one."""
    from tuitrain.hardware.devices import GpuInfo
    from tuitrain.runs.queue.rule import verdict

    gib = 2**30
    for name in ("r0", "r1", "r2", "r3", "r4", "r5", "r6"):
        (tmp_path / name).mkdir()
    gpus = [GpuInfo(index=i, memory_total=80 * gib, memory_used=0, utilization=0) for i in range(3)]

    def entry(name: str, state: str = "waiting", gpus: tuple[int, ...] = (0,), min_free: int | None = 20 * gib,
              count: int = 0) -> Entry:
        return Entry(name=f"{name}.json", run=name, run_dir=str(tmp_path / name), uid=0, user="ann", queued=0.0,
                     gpus=gpus, state=state, min_free=min_free, count=count)

    started = [entry(f"r{i}", "started") for i in range(3)]
    fourth = verdict(entry("r3"), [*started, entry("r3")], lambda: gpus)
    assert fourth.start, fourth
    full = [*started, entry("r3", "started"), entry("r4")]
    fifth = verdict(full[-1], full, lambda: gpus)
    assert not fifth.start and fifth.waits == (
        ("GPU 0: 80.0 GiB free, but 80.0 GiB of it promised to runs of the queue: 0.0 GiB left, 20.0 GiB needed "
        "(hardware.min_free_memory), 0.0 GiB used"),), fifth
    alone = entry("r5", min_free=None)
    assert verdict(alone, [*started, alone], lambda: gpus).waits[0] == "GPU 0: held by run r0 (ann)"
    wide = entry("r6", gpus=(), min_free=None, count=2)
    chosen = verdict(wide, [*started, wide], lambda: gpus)
    assert chosen.start and chosen.chosen == (1, 2)
    assert chosen.why == "GPU 1, 2: the first 2 free (passed over GPU 0: held by run r0 (ann))"


@pytest.mark.slow
def test_queue_move_top_puts_a_waiting_run_first_and_the_queue_follows_it(runs_dir: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "nvml.json"
    gpu_two(table, taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    on_gpu = ["--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[2]", *FAST]
    first, second, third = (queued(runs_dir, "--queue", *on_gpu) for _ in range(3))
    check_clean(cli("queue", "move", third.name, runs_dir=runs_dir), "tuitrain queue move RUN --top")
    moved = cli("queue", "move", third.name, "--top", runs_dir=runs_dir)
    assert moved.returncode == 0 and f"run {third.name} is first in the queue (it was 3)" in moved.stderr, moved.stderr
    shown = queue_json(runs_dir)["runs"]
    assert [r["run"] for r in shown] == [third.name, first.name, second.name]
    assert shown[0]["waits"][0].startswith("GPU 2: 95% full") and \
        shown[1]["waits"] == [f"GPU 2: run {third.name} ({shown[0]['user']}) is ahead in the queue"]
    assert cli("cancel", second.name, runs_dir=runs_dir).returncode == 0
    check_clean(cli("queue", "move", second.name, "--top", runs_dir=runs_dir), "already ended (cancelled)",
                "nothing to move")
    gpu_two(table, taken=False)  # the moved run starts first
    wait_for(lambda: record(third)["started"], 60, "the moved run to start")
    assert record(first)["started"] is None
    assert cli("cancel", first.name, runs_dir=runs_dir).returncode == 0
    end_now(third, runs_dir)


def test_a_move_to_the_top_jumps_only_the_users_own_runs(tmp_path: Path) -> None:
    """On a shared workstation bob's move puts his run before his own, never before ann's (as Slurm's `scontrol top`
    takes priority from the same user's other jobs): ann's run queued before his keeps its place."""
    from tuitrain.runs.queue.move import renamed_to_top

    def entry(place: int, run: str, uid: int) -> Entry:
        return Entry(name=f"{place:020d}-{uid}-{run}.json", run=run, run_dir=str(tmp_path / run), uid=uid,
                     user={0: "root", 1001: "ann", 1002: "bob"}[uid], queued=0.0)

    b1, a1, b2, a2, b3 = entry(1, "b1", 1002), entry(2, "a1", 1001), entry(3, "b2", 1002), entry(4, "a2", 1001), \
        entry(5, "b3", 1002)
    renames = renamed_to_top(b3, [b1, a1, b2, a2, b3])
    assert renames == {b3.name: f"{1:020d}-1002-b3.json", b1.name: f"{3:020d}-1002-b1.json",
                       b2.name: f"{5:020d}-1002-b2.json"}
    after = sorted([a1.name, a2.name, *renames.values()])
    assert [name.rsplit("-", 1)[1] for name in after] == ["b3.json", "a1.json", "b1.json", "a2.json", "b2.json"]
    assert not set(renames.values()) & {e.name for e in (b1, a1, b2, a2, b3)}  # no rename lands on a name in use
    assert renamed_to_top(b1, [b1, a1]) == {}  # already first of his


@pytest.mark.slow
def test_a_damaged_entry_is_named_set_aside_and_ends_its_run_with_that_cause(runs_dir: Path, own_queue: Path) -> None:
    first = runs_dir / cli("run", "demo", "--detach", *LONG, runs_dir=runs_dir).stdout.strip()
    second = queued(runs_dir, "--after", first.name, *FAST)
    wait_for(lambda: record(second).get("pids", {}).get("supervisor"), 60, "the queued run's waiting supervisor")
    (entry,) = [p for p in own_queue.iterdir() if p.name.endswith(f"-{second.name}.json")]
    entry.write_text(entry.read_text()[:40])  # truncated, as a full disk or a killed editor leaves it
    ended = wait_until_ended(second, 120)
    assert ended["status"] == "failed" and ended["started"] is None, ended
    assert f"its queue entry {entry} was damaged (not valid JSON: " in ended["error"], ended["error"]
    assert "queue it again" in ended["error"]
    assert not list(own_queue.glob(f"*{second.name}*")), "the damaged entry stays once its cause is the run's"

    junk = own_queue / f"{10**19}-{os.getuid()}-ghost.json"  # a run's entry whose supervisor is long gone
    junk.write_text('{"run": "ghost", "uid": "not a number"}')
    said = cli("queue", runs_dir=runs_dir).stdout
    assert f"damaged entry {junk}.damaged (run ghost of " in said and "set aside" in said, said
    assert "): no run_dir; " in said, said  # the first key it lacks
    assert [d["run"] for d in queue_json(runs_dir)["damaged"]] == ["ghost"]
    assert cli("stop", "--now", first.name, runs_dir=runs_dir).returncode == 0
    wait_until_ended(first)
