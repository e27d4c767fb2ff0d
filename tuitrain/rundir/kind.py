"""Which kind of run a run directory holds: the one answer every reader of a run record asks.

A run is started by one backend (tuitrain.backends): on this machine, on the machines a profile lists (over SSH), or
as a Slurm job. The record says which by the keys that backend writes; this module is the only place that reads
them for that purpose, so a fourth kind changes this function and nothing that asks it.
"""

from __future__ import annotations

import os
from typing import Literal

from tuitrain.rundir.record import RunRecord

RunKind = Literal["local", "machines", "slurm"]


def run_kind(record: RunRecord) -> RunKind:
    """`slurm` for a submitted job (its record keeps the job), `machines` for a run on several machines over SSH
    (its record lists them), else `local`."""
    if record.get("slurm"):
        return "slurm"
    if record.get("machines"):
        return "machines"
    return "local"


def supervised_elsewhere(record: RunRecord) -> bool:
    """A run whose supervisor runs on another machine than the one that started it (a Slurm job's first node): its
    processes cannot be looked at from here; its scheduler says whether it lives."""
    host = record.get("slurm", {}).get("host")
    return bool(host) and host != os.uname().nodename
