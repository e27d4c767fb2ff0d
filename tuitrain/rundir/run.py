"""One run directory as read: its paths, its record checked (`record.parse_record`) or why it cannot be used, and the
answers readers ask of it, typed. The keys of run.json are read by name here and in `record`, nowhere else (outside
`rundir/`, `tests/test_record_reads.py` counts what is left to move)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, get_type_hints

from tuitrain.rundir.kind import RunKind, run_kind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, ProcessIdentity, QueueRecord, RunPids, RunRecord, Status, has_ended

UNREADABLE: Final = "unreadable"
Shown = Status | Literal["unreadable"]  # what a list says of a run: its status, or that its record cannot be used
DECLARED = frozenset(get_type_hints(RunRecord))


@dataclass(frozen=True)
class Run:
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
        return self._fields.get("id") or self.paths.id

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

    @property
    def created(self) -> float:
        """When it was made: the record's time, else its folder's (an unreadable run sorts where it was made)."""
        if self.record is not None and self.record.get("created"):
            return self.record["created"]
        try:
            return self.paths.root.stat().st_mtime
        except OSError:
            return 0.0

    # The record's fields as readers ask them: None (or empty) where a record lacks one or cannot be used.
    @property
    def profile(self) -> str | None:
        return self._fields.get("profile")

    @property
    def profile_path(self) -> str | None:
        return self._fields.get("profile_path")

    @property
    def started(self) -> float | None:
        return self._fields.get("started")

    @property
    def ended(self) -> float | None:
        return self._fields.get("ended")

    @property
    def error(self) -> str | None:
        """Why it ended, in one line, when it did not finish."""
        return self._fields.get("error")

    @property
    def failed_rank(self) -> int | None:
        return self._fields.get("failed_rank")

    @property
    def parent(self) -> str | None:
        """The run it resumes."""
        return self._fields.get("parent")

    @property
    def output_dir(self) -> str | None:
        return self._fields.get("output_dir")

    @property
    def max_steps(self) -> int | None:
        return self._fields.get("max_steps")

    @property
    def num_processes(self) -> int:
        """Its ranks in all (at least 1)."""
        return max(1, self._fields.get("num_processes") or 1)

    @property
    def accelerator(self) -> str | None:
        return self._fields.get("accelerator")

    @property
    def env(self) -> dict[str, str]:
        """What was added to its launcher's environment."""
        return self._fields.get("env") or {}

    @property
    def not_restarted(self) -> str | None:
        """Why a run that ended badly was not started again, in one line."""
        return self._fields.get("not_restarted")

    @property
    def queue(self) -> QueueRecord:
        """What it keeps of its queueing (empty for a run never queued)."""
        return self._fields.get("queue") or {}

    @property
    def queue_folder(self) -> Path | None:
        """The queue folder it was queued in; None for a run that names none (the user's default then)."""
        folder = self.queue.get("dir")
        return Path(folder) if folder else None

    @property
    def _fields(self) -> RunRecord:
        return self.record or {}

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
