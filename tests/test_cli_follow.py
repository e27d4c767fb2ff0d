"""Following a run: `logs --follow` and the foreground follower of `tuitrain run`.

The runs here are fabricated run directories (no training): what matters is what the files say
and whether the run's supervisor is alive."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import as_in_a_terminal, cli, wait_for


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def fake_run(runs: Path, status: str, supervisor: int, ranks: int = 2, name: str = "20200101-000000-demo") -> Path:
    run = runs / name
    (run / "logs").mkdir(parents=True)
    (run / "control").mkdir()
    record = {"id": name, "profile": "demo", "status": status, "created": time.time(), "started": time.time(),
              "ended": None, "num_processes": ranks, "pids": {"supervisor": supervisor},
              "exit_codes": {}, "failed_rank": None, "error": None, "output_dir": str(run / "output")}
    (run / "run.json").write_text(json.dumps(record))
    for rank in range(ranks):
        (run / "logs" / f"rank-{rank}.log").write_text(f"rank {rank} says hello\nrank {rank} says bye\n")
    return run


def set_status(run: Path, status: str) -> None:
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "status": status}))


def test_logs_rank_zero_follow_prints_rank_zero_only(runs_dir):
    run = fake_run(runs_dir, "finished", dead_pid())
    result = cli("logs", run.name, "--rank", "0", "--follow", runs_dir=runs_dir, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "rank 0 says hello\nrank 0 says bye\n"


def test_logs_follow_ends_when_nothing_of_the_run_is_alive(runs_dir):
    run = fake_run(runs_dir, "running", dead_pid())
    result = cli("logs", run.name, "--follow", runs_dir=runs_dir, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "[rank 1] rank 1 says bye" in result.stdout and "[rank 0] rank 0 says hello" in result.stdout
    assert "lost" in result.stderr and "Traceback" not in result.stderr


FOLLOW = ("import sys; from pathlib import Path; from tuitrain.cli.follow import follow_run; "
          "from tuitrain.rundir.layout import RunPaths; sys.exit(follow_run(RunPaths(Path(sys.argv[1]))))")


def test_ctrl_c_while_the_follower_prints_still_asks_the_run_to_stop(runs_dir):
    """The follower of `tuitrain run` spends most of its time sleeping; a Ctrl-C that lands while it
    reads or prints must count as much as one that lands in its sleep."""
    supervisor = subprocess.Popen(["sleep", "300"])
    try:
        run = fake_run(runs_dir, "running", supervisor.pid, ranks=1)
        lines = (json.dumps({"event": "log", "step": i, "loss": 0.5, "learning_rate": 1e-3, "epoch": 0.1}) for i in range(100_000))
        (run / "events.jsonl").write_text("\n".join(lines) + "\n")
        follower = subprocess.Popen([sys.executable, "-c", FOLLOW, str(run)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        time.sleep(3)  # by now the pipe nobody reads is full: the follower is stuck printing
        follower.send_signal(signal.SIGINT)
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(follower.stdout.read()), daemon=True)
        reader.start()
        wait_for(lambda: (run / "control" / "stop").exists() or follower.poll() is not None, 60, "a stop request")
        assert follower.poll() is None, follower.stderr.read()
        assert (run / "control" / "stop").exists()
        follower.send_signal(signal.SIGINT)
        wait_for(lambda: (run / "control" / "terminate").exists(), 30, "a terminate request")
        set_status(run, "stopped")
        supervisor.kill()  # a real supervisor exits once it has recorded the end
        assert follower.wait(timeout=30) == 2
        reader.join(timeout=10)
        assert "Traceback" not in follower.stderr.read()
        text = out[0]
        assert "step 99999" in text and "stopping:" in text and "killing the run now" in text
        assert f"run {run.name} stopped" in text
    finally:
        supervisor.kill()
        supervisor.wait()


def follow_to_the_end(run: Path, supervisor: subprocess.Popen, interrupt: bool) -> None:
    follower = subprocess.Popen([sys.executable, "-c", FOLLOW, str(run)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(follower.stdout), daemon=True).start()
    wait_for(lambda: any(f"run {run.name} finished" in line for line in lines), 60, "the end said")
    assert follower.poll() is None  # the end is said, and the supervisor is still there
    if interrupt:
        follower.send_signal(signal.SIGINT)
    else:
        supervisor.kill()
    assert follower.wait(timeout=60) == 0
    assert "Traceback" not in follower.stderr.read()


def test_the_follower_returns_once_the_supervisor_is_gone_too(runs_dir):
    """After recording the end a supervisor still frees the run's queue claims and sends word of it: `tuitrain run`
    returns once it is gone (seen on a loaded CI machine: the run had ended, its supervisor was still there), as
    `accelerate launch` returns with its processes; a Ctrl-C ends that wait at once."""
    for interrupt in (False, True):
        supervisor = subprocess.Popen(["sleep", "300"])
        try:
            run = fake_run(runs_dir, "finished", supervisor.pid, ranks=1, name=f"20200101-00000{int(interrupt)}-demo")
            follow_to_the_end(run, supervisor, interrupt)
        finally:
            supervisor.kill()
            supervisor.wait()


def test_logs_into_a_pipe_carry_no_terminal_codes(runs_dir):
    """`tuitrain logs RUN | grep …` or `> file`: what a terminal would have shown, without tqdm's carriage returns
    and the colours (issue 13, item 9); in a terminal the bytes go out as written."""
    run = fake_run(runs_dir, "finished", dead_pid(), ranks=1)
    (run / "logs" / "rank-0.log").write_bytes(
        b"\x1b[32mINFO\x1b[0m starting\n"
        b"  0%|          | 0/8 [00:00<?, ?it/s]\r 50%|#####     | 4/8 [00:01<00:01]\r100%|##########| 8/8\n"
        b"\x1b]0;title\x07plain \x1b[1;31mred\x1b[0m end\n")
    result = cli("logs", run.name, runs_dir=runs_dir)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    assert result.stdout.splitlines() == ["INFO starting", "100%|##########| 8/8", "plain red end"]


def test_a_cancelled_run_ends_the_follower_like_a_stop_and_says_why(runs_dir):
    """A run dropped while queued (`tuitrain cancel`) is an end the user asked for: exit 2, as a stop, with the
    cause on stdout."""
    run = fake_run(runs_dir, "cancelled", dead_pid(), ranks=1)
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "started": None,
                                              "error": "cancelled while queued (`tuitrain cancel`); it never started"}))
    done = subprocess.run([sys.executable, "-c", FOLLOW, str(run)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"run {run.name} cancelled: cancelled while queued (`tuitrain cancel`); it never started" in done.stdout
    assert "Traceback" not in done.stderr
