"""Slurm's SIGTERM, made graceful: a rank of a Slurm job saves a checkpoint at the next step end, then stops.

Slurm ends a job (preemption, `scontrol requeue`, `scancel`, its time limit) by sending SIGTERM to every process of
it, then SIGKILL KillWait seconds later (for preemption: the partition's GraceTime). Left to the default, SIGTERM
kills every rank mid-step. So, under Slurm:

- the agent's supervisor starts `accelerate launch` with SIGTERM ignored (`LAUNCHER_IGNORES_TERM` in its
  environment says so, and torch's elastic launcher, which several ranks go through, is told not to handle it), so
  the launcher neither dies nor tears the ranks down;
- each rank (the engine's, and script mode's) takes SIGTERM as a stop request: it writes the run's `control/stop`,
  which rank 0 honours for every rank at the next step end (a checkpoint, then the end), as `tuitrain stop` does;
- tuitrain's own ending of processes (`stop --now`, a teardown after a rank died) is told apart by one rule: the
  supervisor writes `control/ending` before it signals anything, and a rank that finds it there ends at once.

Only the standard library: it runs in every rank before anything heavy is imported.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from tuitrain.rundir.layout import CONTROL_ENDING, CONTROL_STOP, RunPaths

LAUNCHER_IGNORES_TERM = "TUITRAIN_SLURM_TERM_IGNORED"  # set in the launcher's environment by the Slurm agent


def under_slurm(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return bool(env.get("SLURM_JOB_ID"))


def launcher_env() -> dict[str, str]:
    """What the launcher's environment gets under Slurm (its SIGTERM is ignored: see the module's note).

    torch's elastic launcher takes the signals it handles from its `--signals_to_handle` option, whose default is
    PET_SIGNALS_TO_HANDLE (SIGTERM included when unset), and writes them over TORCHELASTIC_SIGNALS_TO_HANDLE before
    it reads that; older torch reads only the latter. Both leave SIGTERM out."""
    handled = "SIGINT,SIGHUP,SIGQUIT"
    return {LAUNCHER_IGNORES_TERM: "1", "PET_SIGNALS_TO_HANDLE": handled, "TORCHELASTIC_SIGNALS_TO_HANDLE": handled}


def ignore_term() -> None:
    """A preexec_fn's part: the launcher (and, inherited, what it starts) ignores SIGTERM."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def restore_term() -> None:
    """In a rank: SIGTERM back to the default where the launcher's ignoring was inherited (before anything else
    looks at it: script mode keeps a handler the script itself set)."""
    if os.environ.get(LAUNCHER_IGNORES_TERM) and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def install(run_dir: Path, rank: int, stopping: Callable[[], bool] = lambda: False) -> bool:
    """Under Slurm, on the main thread: SIGTERM becomes a stop request (see the module's note); True when it did.

    A SIGTERM after `control/ending` (tuitrain's own), or when `stopping()` says the rank's own stop path sent it
    (script mode's SIGTERM to a plain script), goes to the handler there was before, or ends the rank at once."""
    if not under_slurm() or threading.current_thread() is not threading.main_thread():
        return False
    paths = RunPaths(run_dir)
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: Any) -> None:
        if paths.control_request(CONTROL_ENDING).exists() or stopping():
            if callable(previous):
                previous(signum, frame)
                return
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        try:
            paths.control.mkdir(exist_ok=True)
            paths.control_request(CONTROL_STOP).touch()
        except OSError as exc:
            print(f"[tuitrain] rank {rank}: could not write the stop request: {exc}", file=sys.stderr, flush=True)
        print(f"[tuitrain] rank {rank}: SIGTERM from Slurm (job {os.environ.get('SLURM_JOB_ID')}): saving a "
              "checkpoint at the next step end, then stopping", file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, on_sigterm)
    return True
