"""Following a run in the foreground: progress lines from events.jsonl until the run ends."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from tuitrain.humanize import number
from tuitrain.rundir.events import parse_event
from tuitrain.rundir.exits import end_cause, explained_itself, failure_log
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.process_tree import running
from tuitrain.rundir.record import FINAL_STATUSES, RunRecord
from tuitrain.rundir.run import Run
from tuitrain.rundir.tail import read_new_lines
from tuitrain.runs.catalog import load_record
from tuitrain.runs.control import ControlError, request
from tuitrain.runs.liveness import effective_status, live_processes
from tuitrain.runs.view.summary import last_traceback

# killed: ended by the user (Ctrl-C twice, `stop --now`), like a stop but with nothing saved; cancelled: dropped by
# the user while queued (`tuitrain cancel`, a stop), or by the queue when it could never start (a gone dependency).
EXIT_CODES = {"finished": 0, "failed": 1, "stopped": 2, "killed": 2, "lost": 1, "cancelled": 2}


def describe_event(event: dict, max_steps: int | None) -> str | None:
    kind, step = event.get("event"), event.get("step")
    where = f"step {step}/{max_steps}" if max_steps else f"step {step}"
    if kind == "train_begin":
        return f"training: {event.get('max_steps')} steps on {event.get('world_size', 1)} process(es)"
    if kind == "log" and "loss" in event:
        return f"{where}  loss {number(event['loss'])}  lr {number(event.get('learning_rate'), 3)}  epoch {number(event.get('epoch'), 3)}"
    if kind == "evaluate":
        metrics = "  ".join(f"{k[5:]} {number(v)}" for k, v in event.items()
                            if k.startswith("eval_") and not k.endswith(("runtime", "per_second")))
        return f"{where}  eval  {metrics}"
    if kind == "save":
        return f"{where}  saved {event.get('checkpoint')}"
    if kind == "error":
        return f"rank {event.get('rank')} error: {event.get('message')}"
    if kind == "control":
        return f"{where}  honoured request: {event.get('request')}"
    if kind == "restart":
        begins = f"checkpoint-{step}" if event.get("resume_from") else "the beginning"
        return f"restarted: attempt {event.get('attempt')} from {begins} (tuitrain status says why)"
    return None


class _EventPrinter:
    """Prints the events appended since the last call; the offset moves line by line, so an
    interruption mid-way loses nothing and repeats nothing. A rank's error goes to `err`."""

    def __init__(self, paths: RunPaths, out: TextIO, err: TextIO) -> None:
        self.paths, self.out, self.err = paths, out, err
        self.offset = 0
        self.max_steps: int | None = None

    def print_new(self) -> bool:
        """True when whole new lines were read."""
        lines = read_new_lines(self.paths.events, self.offset)
        for raw in lines:
            self._print(raw)
            self.offset += len(raw)
        return bool(lines)

    def _print(self, raw: bytes) -> None:
        event = parse_event(raw)
        if event is None:
            return
        if event.get("event") == "train_begin":
            self.max_steps = event.get("max_steps")
        text = describe_event(event, self.max_steps)
        if text:
            print(text, file=self.err if event.get("event") == "error" else self.out, flush=True)


class _Interrupts:
    """Counts Ctrl-C while following. As a SIGINT handler it is never lost, wherever it lands
    (reading, printing or sleeping); KeyboardInterrupt is the fallback off the main thread."""

    def __init__(self) -> None:
        self.count = 0
        self.handled = 0
        self._previous: Any = None

    def __enter__(self) -> "_Interrupts":
        try:
            self._previous = signal.signal(signal.SIGINT, self._on_signal)
        except ValueError:  # not the main thread: KeyboardInterrupt is caught instead
            self._previous = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.count += 1

    def pending(self) -> list[int]:
        """The numbers (1st, 2nd, …) of the Ctrl-Cs not yet acted on."""
        numbers = list(range(self.handled + 1, self.count + 1))
        self.handled = self.count
        return numbers


def _ask_to_end(paths: RunPaths, nth: int, out: TextIO) -> None:
    """The first Ctrl-C asks for a graceful stop, any later one kills."""
    try:
        request(paths, "stop" if nth == 1 else "terminate")
    except ControlError:
        return
    if nth == 1:
        print("\nstopping: the run saves a checkpoint at the next step end (Ctrl-C again to kill it now)", file=out, flush=True)
    else:
        print("\nkilling the run now", file=out, flush=True)


def follow_run(paths: RunPaths, out: TextIO | None = None, poll: float = 0.1, err: TextIO | None = None) -> int:
    """Print progress until the run ends; Ctrl-C asks for a graceful stop, a second one kills. Progress goes to
    `out` (stdout), what went wrong (a rank's error, a failed or lost run's cause) to `err` (stderr)."""
    out = out or sys.stdout
    err = err or sys.stderr
    printer = _EventPrinter(paths, out, err)
    print(f"run {paths.id}  (logs: {paths.logs})", file=out, flush=True)
    with _Interrupts() as interrupts:
        while True:
            try:
                for nth in interrupts.pending():
                    _ask_to_end(paths, nth, out)
                ended = _follow_once(paths, printer, out)
                if ended is not None:
                    await_run_processes(load_record(paths), lambda: interrupts.count > interrupts.handled)
                    return ended
                time.sleep(poll)
            except KeyboardInterrupt:
                interrupts.count += 1


def _follow_once(paths: RunPaths, printer: _EventPrinter, out: TextIO) -> int | None:
    """Print what is new; the exit code once the run has ended and everything is printed."""
    record = load_record(paths)
    if printer.print_new():
        return None
    status = effective_status(record)
    if status in FINAL_STATUSES:
        return report_end(paths, {**record, "status": status}, out, printer.err)
    return None


PROCESSES_EXIT_SECONDS = 30.0  # the supervisor's last steps (the queue's claims, [notify] word) after the end


def await_run_processes(record: RunRecord, interrupted: Callable[[], bool]) -> None:
    """`tuitrain run` returns once the run's own processes are gone too, as `accelerate launch` does: the
    supervisor records the end and then still frees the run's queue claims and sends word of it. Bounded, and
    a Ctrl-C ends the wait: a supervisor that lingers (a webhook slower than its timeout) finishes alone."""
    left = list(live_processes(record).values())
    deadline = time.monotonic() + PROCESSES_EXIT_SECONDS
    while left and time.monotonic() < deadline and not interrupted():
        time.sleep(0.1)
        left = [proc for proc in left if running(proc)]  # a zombie is gone too: its parent has yet to reap it


def checkpoints_where(run: Run) -> str:
    """'; checkpoints in DIR', or nothing for a run that names no output folder (a script that never made a Trainer)."""
    return f"; checkpoints in {run.output_dir}" if run.output_dir else ""


def report_end(paths: RunPaths, record: RunRecord, out: TextIO, err: TextIO | None = None) -> int:
    """The run's last word: how it ended on `out`; for a failed or lost run, why, on `err` (default: `out`)."""
    run = Run(paths, record)
    status = run.status
    line = f"run {paths.id} {status}"
    if status in ("failed", "lost"):
        out = err or out
    if status == "failed":
        rank = run.failed_rank
        line += f" (rank {rank})" if rank is not None else ""
        print(line + (f": {run.error}" if run.error else ""), file=out)
        log = failure_log(paths, record)
        if explained_itself(record):
            print(f"(the rank explained it in one line; its traceback: tuitrain logs {paths.id} --rank {rank})", file=out, flush=True)
            return EXIT_CODES["failed"]
        for tb in last_traceback(log):
            print(f"  {tb}", file=out)
        print(f"full log: {log}", file=out, flush=True)
    elif status in ("killed", "lost"):
        print(f"{line}: {end_cause(record)}{checkpoints_where(run)}", file=out, flush=True)
    elif status == "cancelled":
        print(f"{line}: {end_cause(record)}", file=out, flush=True)
    else:
        print(line + checkpoints_where(run), file=out, flush=True)
    return EXIT_CODES.get(status, 1)
