"""Stopping a Slurm run: the same graceful stop as locally, then scancel if the job does not end.

The stop request is the run's control file, on the shared filesystem: the supervisor of node 0 sees it as a local
one does and rank 0 has every rank save a checkpoint and stop. A job still pending has nothing to save: it is
cancelled at once. tuitrain keeps no daemon, so `tuitrain stop` itself waits for the end and cancels the job when
it has not come within the timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tuitrain.rundir.layout import CONTROL_STOP, CONTROL_TERMINATE, RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, RunRecord, has_ended, read_record, record_end
from tuitrain.rundir.run import Fields
from tuitrain.runs.control import ControlError
from tuitrain.runs.run_owner import others_run_refusal
from tuitrain.slurm.commands import JobState, job_states, scancel
from tuitrain.slurm.state import job_id, settle

STOP_TIMEOUT = 120.0  # a graceful stop may take this long (the step ends, the checkpoint is written)
NOW_TIMEOUT = 15.0  # `stop --now`: the supervisor ends every process; then Slurm is asked to
POLL_SECONDS = 0.5


def _state(job: str) -> JobState:
    return job_states([job])[job]


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return True


def stop_job(paths: RunPaths, now: bool, timeout: float | None, say: Callable[[str], None],
             pause: Callable[[float], bool] = _sleep) -> RunRecord:
    """Stop a Slurm run (graceful, or `now`); returns its record once it has ended. `pause(seconds)` waits
    between looks; when it returns False (the app is closing) the wait is given up and the record returned as it
    is: the stop request stays, only the scancel after the timeout is left undone."""
    refusal = others_run_refusal(paths, "stop")
    if refusal:
        raise ControlError(refusal)
    record = read_record(paths)
    job = job_id(record)
    if job is None:
        raise ControlError(f"run {paths.id} has no Slurm job id (sbatch did not answer?); nothing to stop")
    state = _state(job)
    record = settle(paths, record, state)
    if has_ended(record):
        raise ControlError(f"run {paths.id} has already ended ({Fields(record).status}, Slurm job {job} "
                           f"{state.label()}); nothing to stop")
    if state.state == "PENDING":
        scancel(job)
        say(f"Slurm job {job} was still pending: cancelled (nothing had run)")
        return record_end(paths, status="cancelled", ended=time.time(),
                          error=f"cancelled while pending in Slurm (job {job}): nothing had run")
    paths.control.mkdir(exist_ok=True)
    paths.control_request(CONTROL_TERMINATE if now else CONTROL_STOP).touch()
    wait = timeout if timeout is not None else (NOW_TIMEOUT if now else STOP_TIMEOUT)
    if now:
        say(f"ending every process of run {paths.id} (Slurm job {job}) now; scancel after {wait:.0f} s")
    else:
        say(f"asked run {paths.id} (Slurm job {job}) to save a checkpoint and stop; scancel if it has not "
            f"ended within {wait:.0f} s")
    ended = _wait_for_end(paths, job, wait, pause)
    if ended is not None:
        return ended
    if not pause(0):
        return read_record(paths)
    say(f"run {paths.id} has not ended within {wait:.0f} s: ending its processes and cancelling Slurm job {job}")
    paths.control_request(CONTROL_TERMINATE).touch()  # its supervisor ends every process and records it
    _wait_for_end(paths, job, NOW_TIMEOUT, pause)
    if not _state(job).final:
        scancel(job)
    ended = _wait_for_end(paths, job, NOW_TIMEOUT, pause) or read_record(paths)
    if not now and ended["status"] in FINAL_STATUSES:
        ended = record_end(paths, error=f"`tuitrain stop` did not end it within {wait:.0f} s: its processes were "
                                        f"ended and Slurm job {job} cancelled (nothing more was saved)")
    return ended


def _wait_for_end(paths: RunPaths, job: str, timeout: float,
                  pause: Callable[[float], bool] = _sleep) -> RunRecord | None:
    """The record once the run has ended (recorded by its supervisor, or from the job's final state); None when
    it has not within `timeout`, or `pause` gave up."""
    deadline = time.monotonic() + timeout
    while True:
        record = read_record(paths)
        if has_ended(record):
            return record
        state = _state(job)
        if state.final:
            return settle(paths, record, state)
        if time.monotonic() >= deadline or not pause(POLL_SECONDS):
            return None
