"""One run directory as read: its paths, its record checked (`record.parse_record`) or why it cannot be used, and the
answers readers ask of it, typed. The keys of run.json are read by name here and in `record`, nowhere else (outside
`rundir/`, `tests/test_record_reads.py` counts what is left to move)."""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass
from typing import Final, Generic, Literal, Mapping, TypeVar, cast, get_type_hints, overload

from tuitrain.rundir.kind import RunKind, run_kind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import (
    FINAL_STATUSES,
    MachineEntry,
    ProcessIdentity,
    QueueRecord,
    RestartRecord,
    RunPids,
    RunRecord,
    SlurmRecord,
    Status,
    has_ended,
)

UNREADABLE: Final = "unreadable"
Shown = Status | Literal["unreadable"]  # what a list says of a run: its status, or that its record cannot be used
DECLARED = frozenset(get_type_hints(RunRecord))
T = TypeVar("T")


class Field(Generic[T]):
    """One field of a run's record, read by its name (the attribute's): its value, or a copy of `empty` where the
    record lacks it, holds null or cannot be used."""

    def __init__(self, empty: T, key: str | None = None) -> None:
        self.empty = empty
        self.key = key or ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = self.key or name

    @overload
    def __get__(self, run: None, owner: type) -> Field[T]: ...

    @overload
    def __get__(self, run: RecordFields, owner: type | None = None) -> T: ...

    def __get__(self, run: RecordFields | None, owner: type | None = None) -> Field[T] | T:
        if run is None:
            return self
        fields: Mapping[str, object] = run.record or {}
        value = fields.get(self.key)
        return copy(self.empty) if value is None else cast(T, value)


class RecordFields:
    """A run's record as typed fields, each read by its name here (`Field`; what each holds: `RunRecord`): None, or
    empty, where the record lacks it or cannot be used (`record` None). tests/test_run_fields.py holds each one's
    type to RunRecord's. A reader with a run directory asks a `Run`; one handed a record alone, `Fields(record)`."""

    record: RunRecord | None

    @property
    def status(self) -> Shown:
        return UNREADABLE if self.record is None else self.record["status"]

    @property
    def final(self) -> bool:
        """It has ended (`record.has_ended`); an unreadable run's end is not known."""
        return self.record is not None and has_ended(self.record)

    @property
    def kind(self) -> RunKind:
        return run_kind(self.record or {})

    record_id = Field[str | None](None, key="id")  # the run's id (a machine's or a node's own record: its run's)
    profile = Field[str | None](None)
    profile_path = Field[str | None](None)
    started = Field[float | None](None)
    ended = Field[float | None](None)
    error = Field[str | None](None)
    failed_rank = Field[int | None](None)
    parent = Field[str | None](None)
    resume_from = Field[str | None](None)
    output_dir = Field[str | None](None)
    output_removed = Field[float | None](None)
    max_steps = Field[int | None](None)
    accelerator = Field[str | None](None)
    accelerator_why = Field[str | None](None)
    cwd = Field[str | None](None)
    argv = Field[list[str]]([])
    env = Field[dict[str, str]]({})
    main_process_port = Field[int | None](None)
    pids = Field[RunPids]({})
    exit_codes = Field[dict[str, int | str | None]]({})
    processes = Field[dict[str, ProcessIdentity | None]]({})
    machines = Field[list[MachineEntry]]([])
    ssh_config = Field[str | None](None)
    queue = Field[QueueRecord]({})
    slurm = Field[SlurmRecord]({})
    restarts = Field[list[RestartRecord]]([])
    restarts_allowed = Field[int | None](None)
    not_restarted = Field[str | None](None)
    attempt = Field[int](1)
    machine_rank = Field[int](0)

    @property
    def num_processes(self) -> int:
        """Its ranks in all (at least 1)."""
        return max(1, self._fields.get("num_processes") or 1)

    @property
    def num_machines(self) -> int:
        return max(1, self._fields.get("num_machines") or 1)

    @property
    def _fields(self) -> RunRecord:
        return self.record or {}


@dataclass(frozen=True)
class Fields(RecordFields):
    """A record alone as typed fields: one that was read, so its status is a `Status`."""

    record: RunRecord

    @property
    def status(self) -> Status:
        return self.record["status"]


@dataclass(frozen=True)
class Run(RecordFields):
    """A run directory: `record` checked, or None with `reason` (a few words: "empty file", "pids.supervisor: -1 is
    not a process id") and `message` (the whole line for the user)."""

    paths: RunPaths
    record: RunRecord | None
    reason: str | None = None
    message: str | None = None

    @property
    def id(self) -> str:
        return self.paths.id

    @property
    def name(self) -> str:
        """The run's id as its record says it (a machine's or a node's own record names its run's), else its folder's."""
        return self.record_id or self.paths.id

    @property
    def created(self) -> float:
        """When it was made: the record's time, else its folder's (an unreadable run sorts where it was made)."""
        if self.record is not None and self.record.get("created"):
            return self.record["created"]
        try:
            return self.paths.root.stat().st_mtime
        except OSError:
            return 0.0

    @property
    def extra(self) -> dict[str, object]:
        """The keys no version of `RunRecord` here declares (a newer tuitrain's): kept, never read."""
        return {k: v for k, v in (self.record or {}).items() if k not in DECLARED}


def elapsed(record: RunRecord, now: float, shown: str | None = None) -> float | None:
    """Seconds it has run (`seconds_run`); `shown`: its status as a viewer judged it (a running record found lost
    has ended), default its record's."""
    return seconds_run(record.get("started"), record.get("ended"), shown or record["status"], now)


def seconds_run(started: float | None, ended: float | None, status: str, now: float) -> float | None:
    """From its start to its end, or to `now` while it has not ended; None before it started, or for an end that
    recorded no time (a duration that grows is wrong). The one rule of status's duration, the monitor's elapsed
    and Home's TIME column."""
    if not started:
        return None
    end = ended or (now if status not in FINAL_STATUSES else None)
    return end - started if end else None


def recorded_processes(record: RunRecord) -> dict[str, ProcessIdentity | int | None]:
    """role ("supervisor", "launcher", "rank 0", …) → recorded identity. Records written before start times were
    kept have only `pids`; their bare pids stand in."""
    processes: dict[str, ProcessIdentity | int | None] = dict(record.get("processes") or {})
    pids: RunPids = record.get("pids") or {}
    for role, pid in (("supervisor", pids.get("supervisor")), ("launcher", pids.get("launcher"))):
        if role not in processes and pid:
            processes[role] = pid
    for rank, pid in pids.get("ranks", {}).items():
        processes.setdefault(f"rank {rank}", pid)
    return processes
