"""Who may end a GPU process from the GPUs screen (one rule), how its processes sort, and the
SIGTERM-then-SIGKILL escalation on real processes."""

from __future__ import annotations

import signal
import subprocess
import sys

from conftest import wait_for
from tuitrain.hardware.devices import GpuInfo, GpuProcess
from tuitrain.hardware.na import NA
from tuitrain.hardware.processes import command_line, process_rows, refusal, short_command, sort_processes, terminate
from tuitrain.runs.view.owners import RankOwner

GiB = 2**30


def test_only_my_own_process_outside_any_run_may_be_ended():
    assert refusal(GpuProcess(10, GiB, user="alice", command="python"), "alice") is None
    theirs = refusal(GpuProcess(11, GiB, user="bob", command="python"), "alice")
    assert theirs == "pid 11 belongs to bob: only your own processes can be killed here"
    unseen = refusal(GpuProcess(12, GiB), "alice")  # another container's pid: no user to see
    assert unseen is not None and "cannot be seen" in unseen
    rank = refusal(GpuProcess(13, GiB, user="alice", owner=RankOwner("r1", 3)), "alice")
    assert rank is not None and "rank 3 of run r1" in rank and "stop the run with s" in rank
    launcher = refusal(GpuProcess(14, GiB, user="alice", owner=RankOwner("r1", None, "launcher")), "alice")
    assert launcher is not None and "launcher of run r1" in launcher


def test_a_process_command_line_has_its_arguments_and_a_short_form_without_the_program_folder():
    """Issue 21, item 7: the GPUs screen showed 'python' for every training process."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--epochs", "3"])
    expected = f"{sys.executable} -c 'import time; time.sleep(60)' --epochs 3"
    try:
        # between fork and exec the child has no command line yet (NA): wait for the exec, as a busy machine delays it
        full = wait_for(lambda: command_line(proc.pid) if command_line(proc.pid) == expected else None, 30, "the exec")
        assert full == expected
        assert short_command(full) == f"{sys.executable.rsplit('/', 1)[1]} -c 'import time; time.sleep(60)' --epochs 3"
    finally:
        proc.kill()
        proc.wait()
    assert command_line(proc.pid) is NA  # gone
    assert command_line(4100001) is NA  # another container's pid (above pid_max here)
    assert short_command("python train.py") == "python train.py"
    assert short_command("'/opt/my env/bin/python' x.py") == "'/opt/my env/bin/python' x.py"


def test_sorting_by_memory_pid_and_user():
    procs = (GpuProcess(30, GiB, user="carol"), GpuProcess(10, NA, user="alice"), GpuProcess(20, 5 * GiB, user=NA),
             GpuProcess(40, 5 * GiB, user="alice"))
    assert [p.pid for p in sort_processes(procs, "memory")] == [20, 40, 30, 10]  # largest first, unknown last
    assert [p.pid for p in sort_processes(procs, "pid")] == [10, 20, 30, 40]
    assert [p.pid for p in sort_processes(procs, "user")] == [10, 40, 30, 20]  # unknown user last
    gpus = (GpuInfo(1, processes=procs[:2]), GpuInfo(0, processes=procs[2:]))
    assert [(r.gpu, r.process.pid) for r in process_rows(gpus, "pid")] == [(0, 20), (0, 40), (1, 10), (1, 30)]


def test_sigterm_ends_a_process_that_obeys_it():
    proc = subprocess.Popen(["sleep", "60"])
    try:
        assert terminate(proc.pid, grace=30) == f"pid {proc.pid} ended on SIGTERM"
        assert proc.wait(timeout=10) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_process_ignoring_sigterm_gets_sigkill_after_the_grace():
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        said = terminate(proc.pid, grace=0.3)
        assert said == f"pid {proc.pid} ignored SIGTERM for 0.3 s: sent SIGKILL"
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_pid_now_someone_elses_is_left_alone_and_a_gone_one_said_so():
    proc = subprocess.Popen(["sleep", "60"])
    try:
        said = terminate(proc.pid, grace=1, user="somebody-else")
        assert said == f"pid {proc.pid} is no longer somebody-else's process: left alone" and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert terminate(proc.pid, grace=1) == f"pid {proc.pid} had already ended"
