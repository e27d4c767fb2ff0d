"""A Slurm run's job state beside tuitrain's own status, for every viewer.

The job's state is read live (squeue, then sacct) while it can still change; once it is final it is kept in
run.json (`slurm.state`), so an old run costs no query. A job that ended without its run recording an end (cancelled,
killed at its time limit, its node lost) is recorded here, by the first viewer that sees it, as
`settle_lost` does for a local run whose supervisor died.
"""

from __future__ import annotations

import time
from typing import Any, Iterable

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord, RunRecordError, SlurmRecord, Status, has_ended, read_record, record_end, update_record
from tuitrain.rundir.run import Fields
from tuitrain.slurm.commands import JobState, job_states

FORGET_AFTER = 600.0  # a run ended this long ago whose final job state was never seen is not asked about again

_ENDS: dict[str, tuple[Status, str]] = {  # a job that ended without its run recording an end: (status, what happened)
    "CANCELLED": ("killed", "was cancelled (scancel)"),
    "TIMEOUT": ("failed", "reached its time limit before the run saved and stopped"),
    "PREEMPTED": ("failed", "was preempted"),
    "NODE_FAIL": ("failed", "lost a node"),
    "OUT_OF_MEMORY": ("failed", "ran out of memory"),
    "BOOT_FAIL": ("failed", "could not boot its nodes"),
    "DEADLINE": ("failed", "passed its deadline"),
}


def job_id(record: RunRecord) -> str | None:
    value = Fields(record).slurm.get("job_id")
    return str(value) if value else None


def needs_query(record: RunRecord) -> bool:
    """Whether the job's state must be asked for: it may still change, or its final state is not kept yet."""
    if job_id(record) is None:
        return False
    if not has_ended(record):
        return True
    if Fields(record).slurm.get("state"):
        return False
    return time.time() - (Fields(record).ended or 0) < FORGET_AFTER


ASK_SECONDS = 1.0  # a process asks Slurm about a job at most this often (the app's runs table, `logs --follow`)
_asked: dict[str, tuple[float, JobState]] = {}  # job id -> (when it was asked, monotonic; what Slurm said)


def query(records: Iterable[RunRecord]) -> dict[str, JobState]:
    """One squeue (and at most one sacct) for every run that needs it, but a job asked about less than ASK_SECONDS
    ago: what Slurm said then."""
    now = time.monotonic()
    wanted = list(dict.fromkeys(i for r in records if needs_query(r) and (i := job_id(r))))
    known = {i: _asked[i][1] for i in wanted if i in _asked and now - _asked[i][0] < ASK_SECONDS}
    missing = [i for i in wanted if i not in known]
    asked = job_states(missing) if missing else {}
    _asked.update((i, (now, job)) for i, job in asked.items())
    return {**known, **asked}


def _see_slurm_out(paths: RunPaths, job: str) -> str:
    """" (see logs/slurm-N.out)" where Slurm wrote that file, else nothing (a job cancelled while pending has none)."""
    name = f"logs/slurm-{job}.out"
    return f" (see {name})" if (paths.root / name).exists() else ""


def settle(paths: RunPaths, record: RunRecord, state: JobState | None) -> RunRecord:
    """The record, with a final job state kept in it, and the run's end recorded when the job ended without one."""
    job = job_id(record)
    if job is None or state is None or not state.final:
        return record
    if has_ended(record) and Fields(record).slurm.get("state") == state.state:
        return record  # kept already (a viewer's states may be older than its record): nothing to write
    try:
        record = read_record(paths)  # the job ends after its run records an end: look again before deciding
    except (RunRecordError, OSError):
        pass
    slurm: SlurmRecord = {**Fields(record).slurm, "state": state.state}
    if has_ended(record):
        try:
            return update_record(paths, slurm=slurm)
        except OSError:
            return {**record, "slurm": slurm}
    status, what = _ENDS.get(str(state.state), ("failed", f"ended {state.state}"))
    if Fields(record).status == "planned":
        what += " before tuitrain started on its nodes"
        if state.state == "CANCELLED":
            status = "cancelled"  # it never started: nothing of it ran, as a queued run cancelled here
    end: RunRecord = {"status": status, "ended": time.time(), "slurm": slurm,
           "error": f"Slurm job {job} {what}{_see_slurm_out(paths, job)}"}
    if state.state == "COMPLETED":
        end["status"] = "lost"
        end["error"] = f"Slurm job {job} completed but the run recorded no end{_see_slurm_out(paths, job)}"
    try:
        return record_end(paths, **end)
    except OSError:  # another user's run, a read-only disk: show what would be recorded
        return {**record, **end}


def label(record: RunRecord, state: JobState | None) -> dict[str, Any] | None:
    """What viewers show of the job: {"job_id", "state", "reason", "label", "problem"}, and "partition" where the job
    names one; None for a local run."""
    job = job_id(record)
    if job is None:
        return None
    slurm = Fields(record).slurm
    kept = slurm.get("state")
    shown = state if state is not None and (state.state or state.problem) else JobState(job, kept) if kept else JobState(job)
    partition = slurm.get("partition")
    return {**shown.to_dict(), **({"partition": partition} if partition else {})}
