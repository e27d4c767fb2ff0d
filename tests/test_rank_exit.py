"""A rank ends as soon as its work is on disk (engine/rank_io.exit_without_teardown), and still does
what an ordinary exit does that anyone can see: joins its threads, runs atexit handlers and weakref
finalizers, flushes buffered output, and exits with the rank's code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import atexit, sys, threading, weakref
from pathlib import Path
from tuitrain.engine.rank_io import exit_without_teardown

out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))

class Cache:
    pass

cache = Cache()
weakref.finalize(cache, (out / "finalizer").write_text, "ran")

def late_writer():
    with open(out / "thread", "w") as handle:
        for i in range(20000):
            handle.write(f"{i}\\n")

threading.Thread(target=late_writer).start()
sys.stdout.write("buffered, no newline")  # a pipe: block-buffered until flushed
exit_without_teardown(3)
"""


def test_the_fast_exit_keeps_what_an_exit_must_do(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "finalizer").read_text() == "ran"
    assert (tmp_path / "thread").read_text().splitlines()[-1] == "19999"  # joined, not cut off


POOL = """
import sys
from concurrent.futures import ThreadPoolExecutor
from tuitrain.engine.rank_io import exit_without_teardown

pool = ThreadPoolExecutor(max_workers=1)  # used and never shut down, as huggingface_hub's upload pool is
pool.submit(print, "uploaded").result()
exit_without_teardown(0)
"""


def test_an_idle_thread_pool_does_not_hold_the_exit(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", POOL], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "uploaded\n", done.stderr


C_OUTPUT = """
import ctypes
from tuitrain.engine.rank_io import exit_without_teardown

ctypes.CDLL(None).printf(b"from C, buffered\\n")  # a pipe: C's stdout is fully buffered
exit_without_teardown(0)
"""


def test_what_c_code_printed_is_not_lost(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", C_OUTPUT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "from C, buffered" in done.stdout, (done.stdout, done.stderr)
