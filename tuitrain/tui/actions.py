"""Actions the app and its screens share: waiting in a worker, asking a run to do something, resuming.

Screens import these from here, never from each other or from `app.py` (which imports the screens),
and this module imports neither. The request and resume functions run in worker threads and speak
to the user through the app they are given (a TuitrainApp: runs_root, cwd, launch_overrides, poke).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Sequence

from textual.worker import get_current_worker

from tuitrain.errors import TuitrainError

REQUEST_WORDS = {"stop": "save a checkpoint and stop", "save": "save a checkpoint at the next step end",
                 "evaluate": "evaluate at the next step end", "terminate": "end every process now"}


def wait_or_cancel(seconds: float, poke: threading.Event | None = None) -> bool:
    """Sleep in a worker thread until `seconds` pass, `poke` is set, or the worker is cancelled.

    Returns False when the worker was cancelled (the loop should end)."""
    worker = get_current_worker()
    deadline = time.monotonic() + seconds
    while not worker.is_cancelled:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        if poke is not None:
            if poke.wait(min(left, 0.2)):
                poke.clear()
                return True
        else:
            time.sleep(min(left, 0.2))
    return False


def run_request(app: Any, run_dir: Path, what: str) -> None:
    """A control request from a worker, announced either way. A stop goes through the run's backend (a Slurm
    job's is cancelled when it does not end in time), each of its steps said in a toast; quitting the app gives up
    any wait (the request stays); a refusal is titled with what could not be done."""
    from tuitrain.remote.run_mirror import mirrored_run
    from tuitrain.rundir.layout import RunPaths

    paths = RunPaths(Path(run_dir))
    title = {"terminate": "Stop now"}.get(what, what.capitalize())
    elsewhere = mirrored_run(run_dir)
    if elsewhere is not None:  # a viewer's copy of another workstation's run: the request goes to the box
        remote_request(app, *elsewhere, what, title)
        return

    def say(line: str) -> None:
        app.notify(line, title=title)
        app.poke()

    try:
        said = request_here(paths, what, say)
    except (TuitrainError, OSError) as exc:
        app.notify(str(exc), title=f"Cannot {what}", severity="warning", markup=False)
        return
    say(said)


def request_here(paths: Any, what: str, say: Any) -> str:
    """A request to a run of this machine, in a worker: a stop through the run's backend (each of its steps to
    `say`), any other as a control file; the line it ends with. Raises a TuitrainError (the refusal) or OSError."""
    from tuitrain.backends import for_run
    from tuitrain.rundir.record import read_record
    from tuitrain.runs.control import request

    if what in ("stop", "terminate"):
        return for_run(read_record(paths)).stop(paths, what == "terminate", say, pause=wait_or_cancel)
    request(paths, what)
    return f"asked {paths.id} to {REQUEST_WORDS[what]}"


REMOTE_ARGS = {"stop": ("stop",), "terminate": ("stop", "--now"), "save": ("save",), "evaluate": ("evaluate",)}
REMOTE_SECONDS = 600.0  # a stop there waits for the run's checkpoint and end, as `tuitrain stop` does


def remote_request(app: Any, host: str, run_id: str, what: str, title: str) -> None:
    """A request for a run of another workstation, made there by its tuitrain as `tuitrain stop HOST:RUN` does
    (`cli.workstations.cmd_remote`: the verb over ssh, through `Workstation.tuitrain`); what it printed last, or
    why it failed, in one toast."""
    from tuitrain.remote.workstations import find, problem_line, run_on, workstations
    from tuitrain.user_config import UserConfigError

    verb, *flags = REMOTE_ARGS[what]
    app.notify(f"asking {host}:{run_id} to {REQUEST_WORDS[what]}…", title=title)
    try:
        station = find(host, workstations())
    except UserConfigError as exc:
        app.notify(str(exc), title=f"Cannot {what}", severity="warning")
        return
    done = run_on(station, [verb, run_id, *flags], REMOTE_SECONDS)
    problem = problem_line(station, done)
    if problem:
        app.notify(problem, title=f"Cannot {what}", severity="warning", timeout=15)
        return
    said = [line for line in done.stdout.splitlines() if line.strip()]
    app.notify(f"{host}: {said[-1] if said else f'{verb} {run_id} done'}", title=title)
    app.poke()


def resume_here(run_dir: Path, runs_root: Path, checkpoint: str, overrides: Sequence[str], cwd: Path
                ) -> tuple[Path | None, str]:
    """A new run of this machine from a run's `checkpoint` with the `--set` overrides, by the run's own backend as
    `tuitrain resume` does (a Slurm run is submitted again; a run on several machines starts on them), in a worker:
    (its folder, a note), or (None, why not: every problem, one a line)."""
    from tuitrain.backends.start import resume_run
    from tuitrain.errors import error_lines
    from tuitrain.rundir.layout import RunPaths

    try:
        resumed = resume_run(RunPaths(run_dir), runs_root, checkpoint, overrides, cwd=cwd)
    except (TuitrainError, OSError) as exc:
        return None, "\n".join(error_lines(exc))
    return resumed.paths.root, resumed.note


def resume_argv(run_id: str, checkpoint: str, overrides: Sequence[str]) -> list[str]:
    """`tuitrain resume` of a run of another workstation, as its box's tuitrain takes it: each option `--key=value`
    (so a value is never read as an option there), the run after `--`, as `tuitrain resume HOST:RUN` sends it."""
    return ["resume", f"--checkpoint={checkpoint}", "--detach", *(f"--set={o}" for o in overrides), "--", run_id]


def remote_resume(host: str, run_id: str, checkpoint: str, overrides: Sequence[str]) -> tuple[Path | None, str]:
    """A new run on the box of another workstation's run, from `checkpoint` (`latest`, or a path there) with the
    `--set` overrides, started there detached as `tuitrain resume HOST:RUN --detach` does and mirrored here until
    its record is (its monitor opens on that folder): (its folder here, a note), or (None, why not: the box's one
    line, naming the host)."""
    from tuitrain.remote.run_mirror import fetch
    from tuitrain.remote.workstations import find, problem_line, run_on, workstations
    from tuitrain.user_config import UserConfigError

    try:
        station = find(host, workstations())
    except UserConfigError as exc:
        return None, str(exc)
    done = run_on(station, resume_argv(run_id, checkpoint, overrides), REMOTE_SECONDS)
    said = done.stdout.strip().splitlines()
    problem = problem_line(station, done) or (None if said else f"{host}: `tuitrain resume` there printed no run id")
    if problem:
        return None, problem
    new_dir, problem = fetch(host, said[-1])
    return (None, problem) if problem else (new_dir, f"{host}:{said[-1]} started on {host}")
