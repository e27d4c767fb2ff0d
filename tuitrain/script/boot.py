"""A script-mode rank at interpreter start (called by site/sitecustomize.py): the rank's log and
record, the supervisor watch, how the script ended, a clean end on `tuitrain stop`, and the
Trainer hook. Cheap: a few small modules of tuitrain, never torch or transformers."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any, Sequence

from tuitrain.rundir.script_env import HOOKED_ENV, RUN_DIR_ENV, SCRIPT_ENV
from tuitrain.script.rank import RankState, start

# what `accelerate launch` and torchrun run as: these interpreters start the ranks, they are not ranks
LAUNCHER_MODULES = ("accelerate.commands.launch", "accelerate.commands.accelerate_cli", "torch.distributed.run")
LAUNCHER_PROGRAMS = ("accelerate", "torchrun")
STOP_CHECK_SECONDS = 1.0


def program(argv: Sequence[str]) -> str:
    """What an interpreter's command line runs: "-m NAME", "-c", or the script path."""
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg in ("-W", "-X"):
            args = args[1:]
        elif arg == "-m":
            return f"-m {args[0]}" if args else "-m"
        elif arg == "-c" or not arg.startswith("-"):
            return arg
    return ""


def is_launcher(argv: Sequence[str]) -> bool:
    run = program(argv)
    if run.startswith("-m "):
        return run[3:] in LAUNCHER_MODULES
    return Path(run).name in LAUNCHER_PROGRAMS


def is_rank(environ: dict[str, str] | os._Environ[str], argv: Sequence[str]) -> bool:
    """A rank of a script-mode run: the run's variables are set, no hooked rank is this process's
    ancestor (a DataLoader worker or a helper the script starts), and it is not the launcher."""
    if not environ.get(SCRIPT_ENV) or not environ.get(RUN_DIR_ENV) or environ.get(HOOKED_ENV):
        return False
    return not is_launcher(argv)


def one_line(exc: BaseException, tb: TracebackType | None, *folders: str) -> str:
    """`train.py line 3: ValueError: boom`: the error, and where in the user's own code (under one of
    `folders`: the workdir, the script's folder) it was raised."""
    text = str(exc).strip()
    said = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
    roots = [os.path.join(os.path.abspath(f), "") for f in folders if f]
    for frame in reversed(traceback.extract_tb(tb)):
        root = next((r for r in roots if frame.filename.startswith(r)), None)
        if root is not None and "site-packages" not in frame.filename:
            return f"{os.path.relpath(frame.filename, root)} line {frame.lineno}: {said}"[:300]
    return said[:300]


def exit_status(code: Any) -> int:
    """The process exit status of sys.exit(code)."""
    if code is None:
        return 0
    if isinstance(code, bool) or not isinstance(code, int):
        return 1
    return code & 0xFF


def _report_error(state: RankState, message: str) -> None:
    from tuitrain.engine.events import EventLog

    events = EventLog(state.paths.events)
    events.write("error", None, rank=state.rank, message=message)
    events.close()


def record_exit(state: RankState) -> None:
    """The rank record gets the script's exit status (the supervisor tells a clean end from a death
    by it), and an uncaught exception becomes the run's one-line error."""
    from tuitrain.engine.rank_io import write_rank_record

    workdir = os.getcwd()
    script = os.environ.get(SCRIPT_ENV, "")
    script_dir = os.path.dirname(os.path.abspath(script)) if os.sep in script else ""  # a module name has none
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        previous(kind, exc, tb)  # the traceback, into the rank log
        sys.stderr.flush()
        state.exit_code = 130 if issubclass(kind, KeyboardInterrupt) else 1
        try:
            _report_error(state, one_line(exc, tb, workdir, script_dir))
        except OSError:
            pass

    real_exit = sys.exit

    def exit(code: Any = None) -> None:
        state.exit_code = exit_status(code)
        real_exit(code)

    def at_exit() -> None:
        try:
            write_rank_record(state.paths, state.rank, state.exit_code, **state.record_fields())
        except OSError:
            pass

    sys.excepthook = excepthook
    sys.exit = exit  # type: ignore[assignment]
    atexit.register(at_exit)


def stop_by_sigterm(state: RankState) -> None:
    """A script with neither a Trainer nor tuitrain.report learns of `tuitrain stop` by SIGTERM.
    Left to the default, SIGTERM would kill it mid-step and the run would read as failed; so a
    SIGTERM that follows a stop request ends it as sys.exit(0) would (finally blocks, atexit),
    and any other SIGTERM still kills it at once. A handler of the script's own replaces this one."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        if state.stop_requested:
            state.exit_code = 0
            raise SystemExit(0)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)

    def watch() -> None:
        from tuitrain.rundir.layout import CONTROL_STOP

        request = state.paths.control_request(CONTROL_STOP)
        while not (state.trainer_seen or state.reported):  # a Trainer's callbacks or the API hear it then
            time.sleep(STOP_CHECK_SECONDS)
            if request.exists() and not (state.trainer_seen or state.reported):
                state.stop_requested = True
                print(f"[tuitrain] rank {state.rank}: stop requested; the script uses neither a Trainer nor "
                      "tuitrain.report, so it gets SIGTERM", file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="tuitrain-stop-watch", daemon=True).start()


def boot() -> RankState | None:
    """Make this interpreter a rank of the run named in its environment (no-op elsewhere)."""
    if not is_rank(os.environ, getattr(sys, "orig_argv", sys.argv)):
        return None
    os.environ[HOOKED_ENV] = str(os.getpid())
    from tuitrain.engine.rank_io import redirect_output_to_rank_log, register_stacks_dump
    from tuitrain.engine.watchdog import watch_supervisor
    from tuitrain.script.trainer_hook import install

    run_dir = Path(os.environ[RUN_DIR_ENV])
    rank = redirect_output_to_rank_log(run_dir)
    watch_supervisor(run_dir, rank)
    register_stacks_dump(run_dir, rank)  # no heartbeat yet: only a Trainer or tuitrain.report shows progress
    state = start(run_dir, rank)
    record_exit(state)
    from tuitrain.rundir import preemption

    preemption.restore_term()
    stop_by_sigterm(state)
    preemption.install(run_dir, rank, stopping=lambda: state.stop_requested)  # Slurm's SIGTERM: save, stop
    install()
    print(f"[tuitrain] rank {rank}/{state.world_size} pid {os.getpid()} run {state.run_id} "
          f"script {os.environ[SCRIPT_ENV]}", flush=True)
    return state
