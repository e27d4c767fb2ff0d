"""Ending processes of our own: the exit code a teardown reaps is the code the keeper reads. A launcher that psutil
reaped while ending it was read by Popen as exit 0 (no child left), so a run whose rank was killed was recorded with a
launcher that succeeded, and the rank's cause was never looked for (seen under load in the killed-rank tests)."""

from __future__ import annotations

import subprocess
import sys

import psutil

from tuitrain.rundir.process_tree import end_processes, keep_popen_code

EXITS_3_ON_SIGTERM = ("import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(3)); "
                      "print('up', flush=True); time.sleep(600)")
IGNORES_SIGTERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   "print('up', flush=True); time.sleep(600)")


def test_a_child_ended_and_reaped_by_psutil_keeps_its_exit_code() -> None:
    child = subprocess.Popen([sys.executable, "-c", EXITS_3_ON_SIGTERM], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"up\n"  # its handler is in place
    targets = [psutil.Process(child.pid)]
    assert end_processes(targets, grace=60) == []
    keep_popen_code(child, targets)
    assert child.poll() == 3  # without keep_popen_code: 0, Popen finding no child to wait for


def test_a_child_killed_by_the_teardown_is_read_as_killed() -> None:
    child = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"up\n"
    targets = [psutil.Process(child.pid)]
    assert end_processes(targets, grace=0.5) == [child.pid]
    keep_popen_code(child, targets)
    assert child.poll() == -9
