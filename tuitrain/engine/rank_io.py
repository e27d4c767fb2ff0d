"""Per-rank plumbing that must run before heavy imports: log redirection and the rank record."""

from __future__ import annotations

import atexit
import io
import os
import socket
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import NoReturn, cast

from tuitrain.atomic import write_json_atomic
from tuitrain.rundir.layout import (
    PHASE_BETWEEN,
    PHASE_EVALUATING,
    PHASE_FINISHING,
    PHASE_SAVING,
    PHASE_STARTING,
    PHASE_STEP,
    STACKS_SIGNAL,
    RunPaths,
)
from tuitrain.rundir.linetimes import timed_stream, times_path
from tuitrain.rundir.redirect import redirect_output
from tuitrain.rundir.script_env import MACHINE_RANK_ENV


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


HEARTBEAT_SECONDS = 1.0  # a moving rank's heartbeat file is rewritten at most this often (a slow phase: at once)
STEP_TIMES_KEPT = 20
URGENT_PHASES = (PHASE_STARTING, PHASE_EVALUATING, PHASE_SAVING, PHASE_FINISHING)


class Heartbeat:
    """This rank's progress in heartbeats/rank-K.json: step, phase, when it last moved, and its recent step time.

    `beat` is called on every step, so it only notes the moment (no syscall, no formatting, no sorting: a clock
    read, a deque append and one tuple); a daemon thread turns the notes into the file's record and writes it
    atomically when they changed, at most once a HEARTBEAT_SECONDS, at once for a slow phase. A rank that stops
    moving leaves its last beat as it was: its age is how long it has not moved (tuitrain.runs.view.hang)."""

    def __init__(self, paths: RunPaths, rank: int, interval: float = HEARTBEAT_SECONDS) -> None:
        self.path = paths.heartbeat(rank)
        self.rank = rank
        self.interval = interval
        self._pid = os.getpid()
        self._last: tuple[int | None, str, float, float] | None = None  # step, phase, time, since: one beat's note
        self._changed = 0
        self._written = 0
        self._wake = threading.Event()
        self._phase = ""
        self._since = 0.0
        self._last_end: float | None = None  # the previous step's end, while no slow phase came between
        self._step_times: deque[float] = deque(maxlen=STEP_TIMES_KEPT)
        self._between_times: deque[float] = deque(maxlen=STEP_TIMES_KEPT)  # a step's end to the next one's begin
        # since the start, over the steps timed whole (their wait and the step itself, with no evaluation or save
        # between): the time spent from a step's end to the next one's begin, where the Trainer reads the next batch
        # (and logs), and the time of those steps end to end. Their ratio is the share of its time the rank waits
        # for its data (tuitrain.runs.keeper.samples.WaitShares, tuitrain.runs.view.usage).
        self._waited = 0.0
        self._stepped = 0.0
        self._wait: float | None = None  # this step's wait, while it runs
        self._slow: dict[str, float] = {}  # phase -> its longest stretch so far (replaced, never changed in place)
        paths.heartbeats.mkdir(parents=True, exist_ok=True)
        threading.Thread(target=self._write_loop, name="tuitrain-heartbeat", daemon=True).start()

    def beat(self, phase: str, step: int | None) -> None:
        now = time.time()
        if phase != self._phase:
            if self._phase in URGENT_PHASES:
                self._slow = {**self._slow, self._phase: max(self._slow.get(self._phase, 0.0), now - self._since)}
                self._last_end = None  # a step time across an evaluation or a save is no step time
            elif phase == PHASE_STEP and self._phase == PHASE_BETWEEN and self._last_end is not None:
                self._wait = now - self._last_end
                self._between_times.append(self._wait)
            self._phase, self._since = phase, now
        if phase == PHASE_BETWEEN:  # a step just ended
            if self._last_end is not None:
                self._step_times.append(now - self._last_end)
                if self._wait is not None:
                    self._waited += self._wait
                    self._stepped += now - self._last_end
            self._last_end = now
            self._wait = None
        self._last = (step, phase, now, self._since)
        self._changed += 1
        if phase in URGENT_PHASES:
            self._wake.set()

    def record(self) -> dict[str, object] | None:
        """The heartbeat file's record of the latest beat (None before the first): tuitrain.rundir.heartbeat reads it."""
        last, slow = self._last, self._slow
        if last is None:
            return None
        step, phase, moved, since = last
        return {"rank": self.rank, "pid": self._pid, "step": step, "phase": phase, "time": moved, "since": since,
                "step_seconds": _median(tuple(self._step_times)),
                "between_seconds": _median(tuple(self._between_times)), "slow_seconds": dict(slow),
                "waited_seconds": round(self._waited, 4), "stepped_seconds": round(self._stepped, 4)}

    def flush(self) -> None:
        """Write the latest state now (the rank's last word before it ends)."""
        self._write()

    def _write(self) -> None:
        changed = self._changed
        record = self.record()
        if changed == self._written or record is None:
            return
        try:
            write_json_atomic(self.path, record)
            self._written = changed
        except OSError:
            pass  # a full disk: the run's own files matter more; the next beat tries again

    def _write_loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            self._write()
            time.sleep(self.interval / 10)  # a burst of slow-phase changes is still a few writes


def _median(times: tuple[float, ...]) -> float | None:
    return sorted(times)[len(times) // 2] if times else None


_heartbeat: Heartbeat | None = None


def start_heartbeat(run_dir: Path, rank: int) -> Heartbeat:
    """This process's heartbeat (one a rank: started once, by the engine at start-up or by script mode when the
    script first shows its progress)."""
    global _heartbeat
    if _heartbeat is None:
        _heartbeat = Heartbeat(RunPaths(run_dir), rank)
    return _heartbeat


def register_stacks_dump(run_dir: Path, rank: int) -> None:
    """On STACKS_SIGNAL, Python writes every thread's stack into stacks/rank-K.txt (faulthandler, from its C signal
    handler: it answers even while the main thread waits in a collective). `tuitrain stacks` empties the file,
    signals, and reads it back."""
    import faulthandler
    import signal

    paths = RunPaths(run_dir)
    try:
        paths.stacks.mkdir(parents=True, exist_ok=True)
        out = open(paths.rank_stacks(rank), "a", encoding="utf-8")  # faulthandler writes to it on every signal: kept open
        faulthandler.register(getattr(signal, STACKS_SIGNAL), file=out, all_threads=True, chain=False)
    except (OSError, AttributeError, ValueError, RuntimeError) as exc:
        print(f"[tuitrain] rank {rank}: stacks on demand unavailable ({exc})", file=sys.stderr, flush=True)
        return
    os.register_at_fork(after_in_child=lambda: _watch_for_worker(paths, rank))


WORKER_KNOWN_SECONDS = 30.0  # how long a forked child may take to show it is a data loader worker


def worker_stacks_name(rank: int, pid: int) -> str:
    """A data loader worker's stacks file in stacks/; its marker (the same name, .json) says whose worker it is:
    `{"rank", "worker", "pid", "file"}` (tuitrain.runs.view.stacks reads the markers, not the names)."""
    return f"rank-{rank}-worker-{pid}.txt"


def _watch_for_worker(paths: RunPaths, rank: int) -> None:
    """In a child the rank forked: once torch's DataLoader makes it one of its workers (it sets the worker's info as
    the worker starts), its own stacks are written on STACKS_SIGNAL too. Any other child does nothing (it inherits
    the rank's handler, so the signal never kills it)."""
    def wait() -> None:
        deadline = time.monotonic() + WORKER_KNOWN_SECONDS
        while time.monotonic() < deadline:
            module = sys.modules.get("torch.utils.data._utils.worker")
            info = module.get_worker_info() if module is not None else None
            if info is not None:
                register_worker_stacks_dump(paths, rank, int(info.id))
                return
            time.sleep(0.05)

    threading.Thread(target=wait, name="tuitrain-worker-stacks", daemon=True).start()


def register_worker_stacks_dump(paths: RunPaths, rank: int, worker: int) -> None:
    """This data loader worker's stacks on STACKS_SIGNAL, into its own file, and the marker that names it; both
    removed when the worker ends (multiprocessing's finalizers run as a worker exits; `tuitrain stacks` removes
    those of workers that were killed)."""
    import faulthandler
    import multiprocessing.util
    import signal

    pid = os.getpid()
    stacks = paths.stacks / worker_stacks_name(rank, pid)
    marker = stacks.with_suffix(".json")
    try:
        out = open(stacks, "w", encoding="utf-8")
        faulthandler.register(getattr(signal, STACKS_SIGNAL), file=out, all_threads=True, chain=False)
        write_json_atomic(marker, {"rank": rank, "worker": worker, "pid": pid, "file": stacks.name})
    except (OSError, AttributeError, ValueError, RuntimeError):
        return  # the worker's stack is then missing from `tuitrain stacks`: never a reason to fail its work

    def remove() -> None:
        marker.unlink(missing_ok=True)
        stacks.unlink(missing_ok=True)

    multiprocessing.util.Finalize(None, remove, exitpriority=0)
