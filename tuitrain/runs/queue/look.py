"""This machine's queue as its viewers show it (`tuitrain queue`, `status`, Home, a queued run's monitor): each
waiting run's place in the line and what it waits for, as `runs.queue.rule.verdict` says it; and the one line a
move or a cancel ends with. Viewers ask here; none re-decides the order or the reasons."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields

QUEUE_LOOK_SECONDS = 2.0  # a viewer reads the queue again this often (GPU state has no events), or when it changes


@dataclass(frozen=True)
class QueuePlace:
    """A waiting run's place among this machine's waiting runs (1 = next) and what it waits for, one phrase each."""

    position: int
    length: int
    waits: tuple[str, ...]

    def words(self) -> list[str]:
        """What a viewer says of it: 'queued 2 of 3', then 'waits for ...' once for each reason."""
        return [f"queued {self.position} of {self.length} in this machine's queue",
                *(f"waits for {wait}" for wait in self.waits)]


def _progress_of(paths: RunPaths) -> str:
    from tuitrain.rundir.events import progress, read_events

    summary = progress(read_events(paths.events))
    if not summary["step"]:
        return ""
    return f", step {summary['step']}" + (f"/{summary['max_steps']}" if summary.get("max_steps") else "")


def queue_rows() -> list[dict[str, Any]]:
    """This machine's queue in order, each entry with what it waits for (`runs.queue.rule.verdict`); after the
    waiting ones, the started ones that still hold their GPUs (position None)."""
    from tuitrain.runs.queue.entries import live_entries, locked, queue_dir
    from tuitrain.runs.queue.rule import verdict
    from tuitrain.runs.queue.wait import gpu_reader

    folder = queue_dir()
    with locked(folder):
        entries = live_entries(folder)
    read = gpu_reader(lambda: [e.run_dir for e in entries])
    gpus: list[Any] = []

    def read_once() -> Any:
        if not gpus:
            gpus.append(read())
        return gpus[0]

    rows = []
    for position, entry in enumerate((e for e in entries if e.state == "waiting"), start=1):
        decided = verdict(entry, entries, read_once, _progress_of)
        waits = list(decided.waits) or ([f"nothing: it never starts ({decided.end[1]})"] if decided.end
                                        else ["nothing: starting now"])
        rows.append({"position": position, "run": entry.run, "run_dir": entry.run_dir, "user": entry.user,
                     "queued": entry.queued, "gpus": list(entry.gpus), "any_gpus": entry.count,
                     "min_free_memory": entry.min_free,
                     "after": [{"run": d.run, "ok": d.ok} for d in entry.after], "waits": waits})
    started = [{"run": e.run, "run_dir": e.run_dir, "user": e.user, "gpus": list(e.gpus), "started": e.started}
               for e in entries if e.state == "started"]
    return rows + [{**s, "position": None, "waits": []} for s in started]


def queue_report() -> dict[str, Any]:
    """`tuitrain queue --json`: the queue folder, its rows (`queue_rows`; a waiting run's sweep from its record), and
    its damaged entries, whose they are and whether they were set aside."""
    from tuitrain.runs.queue.entries import damaged_entries, queue_dir
    from tuitrain.runs.run_owner import user_name

    rows = [{**row, "sweep": _sweep(row)} if row["position"] is not None else row for row in queue_rows()]
    damaged = [{"file": str(queue_dir() / d.name), "run": d.run or None, "user": user_name(d.uid), "reason": d.reason,
                "set_aside": d.set_aside} for d in damaged_entries(queue_dir())]
    return {"queue_dir": str(queue_dir()), "runs": rows, "damaged": damaged}


def report_lines(report: dict[str, Any], expand: bool = False) -> list[str]:
    """`tuitrain queue`'s lines for a `queue_report`: each waiting run (a sweep's as one line, unless `expand`) and
    what it waits for, the started runs that hold GPUs, and each damaged entry."""
    waiting = [r for r in report["runs"] if r["position"] is not None]
    lines = [] if waiting else [f"no queued runs on this machine ({report['queue_dir']})"]
    lines += queue_lines(waiting, expand)
    lines += [f"  -  {row['run']}  {row['user']}  started, holds GPU {','.join(map(str, row['gpus']))}"
              for row in report["runs"] if row["position"] is None and row["gpus"]]
    for entry in report["damaged"]:
        whose = f"run {entry['run']} of {entry['user']}" if entry["run"] else f"a file of {entry['user']}"
        lines.append(f"  !  damaged entry {entry['file']} ({whose}): {entry['reason']}; "
                     + ("set aside, its run ends with this cause" if entry["set_aside"]
                        else f"only {entry['user']} can set it aside"))
    return lines


def _sweep(row: dict[str, Any]) -> dict[str, Any] | None:
    """The sweep a waiting run of the queue belongs to, from its record (None: of no sweep, or unreadable); read
    for `queue_report`, not in queue_rows, which the app polls."""
    from tuitrain.rundir.record import RunRecordError, read_record
    from tuitrain.runs.queue.entries import sweep_fields

    try:
        return sweep_fields(read_record(RunPaths(Path(row["run_dir"]))))
    except (OSError, RunRecordError):
        return None


def _gpus_word(row: dict[str, Any]) -> str:
    return (f"any {row['any_gpus']} GPU(s)" if row.get("any_gpus") else
            f"GPU {','.join(map(str, row['gpus']))}" if row["gpus"] else "CPU")


def queue_lines(waiting: list[dict[str, Any]], expand: bool = False) -> list[str]:
    """`tuitrain queue`'s lines for the waiting rows (in order): a run and what it waits for; the runs of a sweep
    as one line at its first run's place (the first one's waits under it), unless `expand`."""
    sweeps: dict[str, list[dict[str, Any]]] = {}
    for row in waiting:
        sweep = row.get("sweep") or {}
        if sweep.get("id") and not expand:
            sweeps.setdefault(str(sweep["id"]), []).append(row)
    lines: list[str] = []
    for row in waiting:
        sweep = row.get("sweep") or {}
        group = sweeps.get(str(sweep.get("id"))) if sweep.get("id") else None
        if group is None or len(group) < 2:
            lines.append(f"{row['position']:>3}  {row['run']}  {row['user']}  {_gpus_word(row)}")
        elif row is group[0]:
            labels = [str((r.get("sweep") or {}).get("label", r["run"])) for r in group]
            shown = ", ".join(labels) if len(labels) <= 3 else f"{labels[0]}, …, {labels[-1]}"
            lines.append(f"{row['position']:>3}  sweep {sweep['id']}  {row['user']}  {_gpus_word(row)}  "
                         f"{len(group)} of {sweep.get('of', len(group))} runs waiting ({shown}); "
                         "`tuitrain queue --expand` lists each")
        else:
            continue
        lines.extend(f"       {wait}" for wait in row["waits"])
    return lines


def run_key(run_dir: Path | str) -> str:
    """A run directory as `places` names it: the same folder reached by another path is the same run."""
    return os.path.realpath(run_dir)


def places(rows: list[dict[str, Any]]) -> dict[str, QueuePlace]:
    """Run directory (`run_key`) → its place, for each waiting run of `queue_rows`."""
    waiting = [r for r in rows if r["position"] is not None]
    return {run_key(r["run_dir"]): QueuePlace(r["position"], len(waiting), tuple(r["waits"])) for r in waiting}


class QueueLook:
    """The queue's places, read again when the queue folder changed (an entry added, moved, removed) or every
    `seconds` (what a run waits for changes without one: GPUs, a dependency's step), never more often than asked."""

    def __init__(self, seconds: float = QUEUE_LOOK_SECONDS) -> None:
        self.seconds = seconds
        self._stamp: int | None = None
        self._at: float | None = None
        self._places: dict[str, QueuePlace] = {}

    def read(self) -> dict[str, QueuePlace]:
        now = time.monotonic()
        if self._at is None or self._folder_stamp() != self._stamp or now - self._at >= self.seconds:
            self._places = places(queue_rows())
            self._stamp, self._at = self._folder_stamp(), now  # after the read: its own tidying is no change
        return self._places

    @staticmethod
    def _folder_stamp() -> int | None:
        from tuitrain.runs.queue.entries import queue_dir

        try:
            return os.stat(queue_dir()).st_mtime_ns
        except OSError:
            return None

    def place(self, run_dir: Path | str) -> QueuePlace | None:
        return self.read().get(run_key(run_dir))


def queue_action(paths: RunPaths, what: str) -> str:
    """Move a queued run to the front of the queue (`what` "top", as `tuitrain queue move RUN --top`) or cancel it
    ("cancel", as `tuitrain cancel RUN`, waiting for its end); the line it ends with. A refusal (not this user's
    run, not queued) is a ControlError in one line (`runs.queue.cancel.cancel_refusal`)."""
    if what == "top":
        from tuitrain.runs.queue.move import move_to_top

        return moved_words(paths.id, *move_to_top(paths))
    from tuitrain.runs.queue.cancel import cancel

    return cancelled_words(paths.id, cancel(paths))


def moved_words(run_id: str, before: int, after: int) -> str:
    """What a move to the front (`runs.queue.move.move_to_top`) ends with: its places before and after."""
    if after == 1:
        return f"run {run_id} is first in the queue" + (f" (it was {before})" if before > 1 else " (it was already)")
    return (f"run {run_id} is first of your runs in the queue, {after} in all (it was {before}): runs other users "
            "queued before yours stay ahead")


def cancelled_words(run_id: str, record: RunRecord) -> str:
    """What a cancel (`runs.queue.cancel.cancel`) ends with, from the run's final record."""
    run = Fields(record)
    return f"run {run_id} {run.status}: {run.error or ''}".rstrip(": ")
