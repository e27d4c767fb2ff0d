"""What a run's scheduler says of it, for every viewer: the one place viewers ask instead of testing the kind of run.

A run a scheduler holds (a Slurm job: tuitrain.slurm.state) has a job state beside tuitrain's own status, can end
without recording an end (cancelled, its time limit, never started: settled here, as runs.liveness.settle_lost
settles a run whose supervisor died), and may be supervised on a machine this one cannot look at. A run no
scheduler holds (local, several machines over SSH) gets nothing from here, and costs no query. A fourth backend
with a scheduler of its own answers here (and in rundir.kind.run_kind), and no viewer changes.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from tuitrain.rundir.kind import run_kind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord

JobLabel = dict[str, Any]  # {"job_id", "state", "reason", "label", "problem"}: what viewers show of a job


def job_states(records: Iterable[RunRecord]) -> dict[str, Any] | None:
    """The scheduler's word on every run of `records` it holds, read at once (one squeue, at most one sacct), to
    pass to `settle_job`; None when no run of them is a scheduler's."""
    held = [r for r in records if run_kind(r) == "slurm"]
    if not held:
        return None
    from tuitrain.slurm import state

    return dict(state.query(held))


def settle_job(paths: RunPaths, record: RunRecord,
               states: Mapping[str, Any] | None = None) -> tuple[RunRecord, JobLabel | None]:
    """The record settled from its job's state (a final state kept in it; the run's end recorded when the job ended
    without one), and the job's label; (record, None) for a run no scheduler holds. `states`: `job_states`'s answer
    for several runs (None: this run's job is asked about here)."""
    if run_kind(record) != "slurm":
        return record, None
    from tuitrain.slurm import state

    known = states if states is not None else state.query([record])
    job = known.get(state.job_id(record) or "")
    record = state.settle(paths, record, job)
    return record, state.label(record, job)


def refresh_job(paths: RunPaths, record: RunRecord) -> RunRecord:
    """For a viewer's loop (`logs --follow`): the record, settled from its job's state at most every few seconds, so
    a job that ended without its run recording an end ends the loop too; unchanged for a run no scheduler holds."""
    if run_kind(record) != "slurm":
        return record
    from tuitrain.slurm.state import refresh

    return refresh(paths, record)


def job_words(record: RunRecord) -> str | None:
    """The run's job as a refusal names it ("Slurm job 42"); None for a run no scheduler holds."""
    if run_kind(record) != "slurm":
        return None
    return f"Slurm job {(record.get('slurm') or {}).get('job_id')}"


def supervised_elsewhere(record: RunRecord) -> bool:
    """A run whose supervisor runs on another machine (a Slurm job's compute node): its processes cannot be looked
    at from here; the job's state says whether it lives."""
    host = record.get("slurm", {}).get("host")
    return bool(host) and host != os.uname().nodename
