"""Per-rank plumbing that must run before heavy imports: log redirection and the rank record."""

from __future__ import annotations

import atexit
import io
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn, cast

from tuitrain.atomic import write_json_atomic
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.linetimes import timed_stream, times_path
from tuitrain.runs.redirect import redirect_output
from tuitrain.script import MACHINE_RANK_ENV


def global_rank() -> int:
    return int(os.environ.get("RANK", "0"))


def redirect_output_to_rank_log(run_dir: Path) -> int:
    """Point fds 1 and 2 at logs/rank-K.log (append), so C extensions and subprocesses land there too."""
    paths = RunPaths(run_dir)
    rank = global_rank()
    paths.logs.mkdir(parents=True, exist_ok=True)
    redirect_output(paths.rank_log(rank))
    for stream in (sys.stdout, sys.stderr):  # still sys.__stdout__ / __stderr__ for whoever writes there
        cast(io.TextIOWrapper, stream).reconfigure(line_buffering=True)  # typed TextIO; a TextIOWrapper at run time
    # Python's own output also notes when each line was written (logs/rank-K.times), so viewers
    # can merge the ranks' logs in time order; the log's bytes are the same either way
    times = os.open(times_path(paths.rank_log(rank)), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    sys.stdout = timed_stream(1, times, cast(io.TextIOWrapper, sys.stdout))
    sys.stderr = timed_stream(2, times, cast(io.TextIOWrapper, sys.stderr))
    write_rank_record(paths, rank, exit_code=None)
    return rank


def _started() -> float | None:
    """This process's start time, as psutil reads it (pid + start time name a process)."""
    import psutil

    try:
        return psutil.Process().create_time()
    except psutil.Error:
        return None


def write_rank_record(paths: RunPaths, rank: int, exit_code: int | None, **extra: object) -> None:
    """`extra`: what else the rank tells its supervisor (script mode: the output_dir its Trainer uses)."""
    paths.ranks.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        paths.rank_record(rank),
        {
            "rank": rank,
            "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
            "node_rank": int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0"))),
            # the machine whose supervisor started it (a c10d rendezvous may number node_rank otherwise)
            "machine_rank": int(os.environ.get(MACHINE_RANK_ENV) or os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0"))),
            "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": _started(),
            "exit_code": exit_code,
            "time": time.time(),
            **extra,
        },
    )


def exit_without_teardown(code: int) -> NoReturn:
    """End the rank once its work is on disk, skipping the interpreter's finalization.

    After `main` has written the rank record, Python's exit would collect every object the Trainer,
    torch and datasets built, which nothing reads: 3.4 s of a 20 s CPU demo run (benchmarks/run_phases.py),
    added to every run's wall time. What an ordinary exit does that matters still happens, in its order:
    `threading._shutdown` (what Py_FinalizeEx calls: the threading atexits, which stop idle
    ThreadPoolExecutor workers such as huggingface_hub's upload pool, then a join of the non-daemon
    threads), the atexit handlers (datasets' temporary cache files, weakref finalizers, multiprocessing's
    children), and the flush of Python's and C's buffered output (NCCL_DEBUG's lines go to C's stdout)."""
    threading._shutdown()  # type: ignore[attr-defined]  # private, but the one call that does what an exit does
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more can be said on it
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # every C stdio stream: fds 1 and 2 are a file, so fully buffered
    except (OSError, AttributeError):
        pass
    os._exit(code)
