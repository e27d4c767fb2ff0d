"""`tuitrain run PROFILE --app` in a real terminal (a pty, as `scripts/demo.sh` runs it): the app opens on the run, and
quitting it once the run has ended says how it ended, with the run's exit code, as `run` without --app does. It said
"goes on" of a run that had finished."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from conftest import FAST, FINAL, patient, record, wait_for


def _in_a_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty is its controlling terminal, as a shell's is


def test_quitting_the_app_after_its_run_ended_says_how_it_ended(runs_dir: Path) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(runs_dir), "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "tuitrain", "run", "demo", *FAST, "--app"], stdin=slave,
                            stdout=slave, stderr=slave, env=env, cwd=runs_dir.parent, preexec_fn=_in_a_terminal)
    os.close(slave)
    said = bytearray()

    def read_for(seconds: float) -> None:  # the app blocks on a full terminal: what it draws is read all along
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    said.extend(os.read(master, 1 << 16))
                except OSError:  # the child closed the terminal
                    return

    def ended() -> Path | None:
        read_for(0.3)
        runs = [p for p in runs_dir.iterdir() if p.is_dir() and (p / "run.json").exists()]
        return runs[0] if runs and record(runs[0])["status"] in FINAL else None

    try:
        run_dir = wait_for(ended, 300, "the run started from the app to end")
        read_for(2.0)
        os.write(master, b"q")
        wait_for(lambda: (read_for(0.3), proc.poll() is not None)[1], 60, "the app to quit on q")
        read_for(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=patient(30))
        os.close(master)
    text = said.decode("utf-8", "replace").rpartition("\x1b[?1049l")[2]  # what it says once the app has left the screen
    assert record(run_dir)["status"] == "finished", text[-2000:]
    assert proc.returncode == 0 and f"run {run_dir.name} finished" in text, text[-2000:]
    assert "goes on" not in text and "Traceback" not in text, text[-2000:]
