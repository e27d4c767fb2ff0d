"""Watching runs as they go: events read incrementally, the runs root polled cheaply.

`EventsTail` reads only the lines appended to events.jsonl since its last poll and folds them
into the same progress summary as `events.progress`, plus what a live view needs: the series of
each metric against step, a training rate and the run's best checkpoint so far (`rundir.best`).

`RunsWatcher` polls a runs root: run.json is re-read only when it changed, events.jsonl only
from where it was left; it reports the changes a viewer announces (finished, failed, stopped,
checkpoint written) for runs it saw before they ended. A queued run's row and watch also hold its place in this
machine's queue and what it waits for (`runs.queue.look`), read only while a run is queued.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tuitrain.rundir.best import BestRule, best_of, best_rule, profile_best_rule
from tuitrain.rundir.events import Figure, Progress, empty_progress, fold_progress, parse_event
from tuitrain.rundir.exits import end_cause
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, Rank, RecordDamaged, RunRecord, RunRecordError, Time, read_record
from tuitrain.rundir.run import UNREADABLE, Run
from tuitrain.rundir.tail import read_new_lines
from tuitrain.runs.catalog import load_record
from tuitrain.runs.liveness import effective_status
from tuitrain.runs.queue.entries import sweep_of
from tuitrain.runs.queue.look import QueueLook, QueuePlace, run_key
from tuitrain.runs.view.attempts import attempt_label, attempt_line

# each run as its backend says it stands, and its job's label (tuitrain.backends.settle_runs: one query for them all)
Settle = Callable[[Sequence[tuple[RunPaths, RunRecord]]], list[tuple[RunRecord, "dict[str, Any] | None"]]]
SERIES_KEYS = ("loss", "learning_rate", "grad_norm")
NOT_METRICS = ("runtime", "per_second", "epoch")


def is_metric(key: str) -> bool:
    return key.startswith("eval_") and not key.endswith(NOT_METRICS)


class Series:
    """(step, value) pairs in two flat arrays: 16 bytes a point."""

    __slots__ = ("steps", "values")

    def __init__(self) -> None:
        self.steps = array("d")
        self.values = array("d")

    def add(self, step: float, value: float) -> None:
        self.steps.append(step)
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.values)

    def cut(self, step: float) -> None:
        """Only the points up to `step` kept: a restart goes on from that step's checkpoint."""
        kept = sum(1 for at in self.steps if at <= step)
        del self.steps[kept:]
        del self.values[kept:]

    @property
    def last(self) -> float | None:
        return self.values[-1] if self.values else None


@dataclass
class EventsTail:
    """events.jsonl followed from its last offset."""

    path: Path
    rule: BestRule = field(default_factory=best_rule)
    offset: int = 0
    progress: Progress = field(default_factory=empty_progress)
    series: dict[str, Series] = field(default_factory=dict)
    best: float | None = None  # the best checkpoint's score and step (rundir.best: one rule)
    best_step: int | None = None
    scores: dict[int, float] = field(default_factory=dict)  # step -> the metric at an evaluation there
    saved_steps: set[int] = field(default_factory=set)
    begin_time: float | None = None
    save_times: dict[str, float] = field(default_factory=dict)
    _rate_points: list[tuple[float, int]] = field(default_factory=list)

    def poll(self) -> list[dict[str, Any]]:
        """The events appended since the last poll (complete lines only), folded in."""
        new = []
        for line in read_new_lines(self.path, self.offset):
            self.offset += len(line)
            event = parse_event(line)
            if event is not None:
                self.fold(event)
                new.append(event)
        return new

    def fold(self, event: dict[str, Any]) -> None:
        """The progress summary (`events.fold_progress`, the one rule), then what a live view adds."""
        fold_progress(self.progress, event)
        kind = event.get("event")
        when = event.get("time")
        step = event.get("step")
        if kind == "train_begin":
            self.begin_time = when
            self._rate_points = []
        elif kind == "restart" and isinstance(step, int):  # what the attempt before trained past its checkpoint goes
            for series in self.series.values():
                series.cut(step)
            self.scores = {at: score for at, score in self.scores.items() if at <= step}
            self.saved_steps = {at for at in self.saved_steps if at <= step}
            if self.best_step is not None and self.best_step > step:
                self.best_step, self.best = None, None
                for at in sorted(self.saved_steps):
                    self._candidate(at)
        elif kind == "log":
            if step is not None:
                for key in SERIES_KEYS:
                    if isinstance(event.get(key), (int, float)):
                        self.series.setdefault(key, Series()).add(step, float(event[key]))
                if when is not None and "loss" in event:
                    self._rate_points.append((float(when), int(step)))
                    del self._rate_points[:-20]
        elif kind == "evaluate":
            if step is not None:
                for key, value in event.items():
                    if is_metric(key) and isinstance(value, (int, float)):
                        self.series.setdefault(key, Series()).add(step, float(value))
            score = self.rule.score(event)
            if isinstance(step, int) and score is not None:
                self.scores[step] = score
                self._candidate(step)
        elif kind == "save":
            if when is not None:
                self.save_times[Path(str(event.get("checkpoint"))).name] = float(when)
            if isinstance(step, int):
                self.saved_steps.add(step)
                self._candidate(step)

    @property
    def metric(self) -> str:
        return self.rule.metric

    def _candidate(self, step: int) -> None:
        """A checkpoint at `step` with an evaluation there (in either order) competes for the best."""
        if step not in self.saved_steps or step not in self.scores:
            return
        held = [(self.best_step, self.best)] if self.best_step is not None else []
        found = best_of([*held, (step, self.scores[step])], self.rule)
        if found is not None:
            self.best_step, self.best = found

    @property
    def steps_per_second(self) -> float | None:
        points = self._rate_points
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            return None
        return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


@dataclass(frozen=True)
class RunRow:
    """What a list of runs shows of one run (a snapshot; no clock inside). Another workstation streams it as JSON: its
    annotations are the check it is read back with (tui.run_table.run_rows)."""

    id: str
    run_dir: str
    profile: str
    status: str  # the record's status, or "lost" when its supervisor is gone without an end
    step: int
    max_steps: int | None
    loss: Figure  # a number, or the word the run wrote ("nan")
    best_metric: str
    best: float | None
    created: Time | None
    started: Time | None
    ended: Time | None
    failed_rank: Rank | None
    checkpoints: int
    parent: str | None = None
    job: str | None = None  # a Slurm run's job state as viewers show it: "RUNNING", "PENDING (Resources)", "?"
    queue: QueuePlace | None = None  # a queued run's place in this machine's queue and what it waits for
    sweep: str | None = None  # the id of the sweep it was queued in (`run --sweep`)
    attempt: str | None = None  # a restarted run's "attempt 2/3" (runs.view.attempts)
    restarted: str | None = None  # and its latest restart in one line: when, from where, after what

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES


@dataclass(frozen=True)
class Change:
    """Something a viewer announces: kind is finished | failed | stopped | lost | checkpoint."""

    kind: str
    run_id: str
    detail: str = ""
    rank: int | None = None
    path: str | None = None  # a checkpoint's folder, as its run's events name it


class _Watched:
    def __init__(self, paths: RunPaths) -> None:
        self.paths = paths
        self.record_mtime: int | None = None
        self.record: RunRecord | None = None
        self.damaged: str | None = None  # why its run.json, as it is now, cannot be used (listed as unreadable)
        self.events = EventsTail(paths.events, rule=profile_best_rule(paths.profile))
        self.final_when_seen: bool | None = None
        self.status: str | None = None
        self.saves = 0
        self.job: str | None = None  # a Slurm run's job state label


class RunsWatcher:
    """Polls a runs root; `poll()` -> (rows newest first, changes since the last poll).

    Each poll, every run is settled by `settle` (its backend's word, as `tuitrain runs` reads it: a Slurm job's state,
    and a job that ended without its run recording an end recorded here as there)."""

    def __init__(self, root: Path, settle: Settle) -> None:
        self.root = Path(root)
        self._runs: dict[str, _Watched] = {}
        self._first = True
        self.settle = settle
        self._queue = QueueLook()
        self._places: dict[str, QueuePlace] = {}

    def poll(self) -> tuple[list[RunRow], list[Change]]:
        changes: list[Change] = []
        try:
            names = [e.name for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False)]
        except OSError:
            names = []
        seen = set()
        for name in names:
            paths = RunPaths(self.root / name)
            try:
                mtime = os.stat(paths.record).st_mtime_ns
            except OSError:
                continue
            watched = self._runs.get(name)
            if watched is None:
                watched = self._runs[name] = _Watched(paths)
            seen.add(name)
            if watched.record_mtime != mtime:
                try:
                    watched.record, watched.damaged = load_record(paths), None
                    watched.record_mtime = mtime
                except RecordDamaged as exc:  # listed as unreadable, not hidden, until run.json changes
                    watched.record, watched.damaged = None, exc.reason
                    watched.record_mtime = mtime
                except RunRecordError as exc:  # cannot be read (a permission): the last record read stands
                    if watched.record is None:
                        watched.damaged = str(exc)
            watched.events.poll()
        for gone in set(self._runs) - seen:
            del self._runs[gone]
        self._settle_jobs()
        queued = any((w.record or {}).get("status") == "queued" for w in self._runs.values())
        self._places = self._queue.read() if queued else {}
        for watched in self._runs.values():
            changes.extend(self._changes(watched))
        self._first = False
        rows = [self._row(w) for w in self._runs.values() if w.record is not None or w.damaged is not None]
        rows.sort(key=lambda r: (r.created or 0, r.id), reverse=True)
        return rows, changes

    def _settle_jobs(self) -> None:
        """Each run as its backend settles it (settle's write changes run.json's mtime: the record is read again at
        the next poll, as any change is)."""
        watched = [w for w in self._runs.values() if w.record]
        settled = self.settle([(w.paths, w.record) for w in watched if w.record is not None])
        for one, (record, shown) in zip(watched, settled, strict=True):
            one.record, one.job = record, (shown["label"] if shown else None)

    def _status(self, watched: _Watched) -> str:
        """The status a list shows: `hung?` for a live run whose ranks stopped moving (`runs.view.hang`, as `tuitrain runs`)."""
        if watched.record is None:
            return UNREADABLE
        status = effective_status(watched.record)
        if status in ("running", "stopping"):
            from tuitrain.runs.view.hang import HUNG_LABEL, run_hang

            verdict = run_hang(watched.paths, watched.record)
            if verdict is not None and verdict.hung:
                return HUNG_LABEL
        return status

    def _changes(self, watched: _Watched) -> list[Change]:
        status = self._status(watched)
        saves = len(watched.events.progress["checkpoints"])
        out: list[Change] = []
        if watched.final_when_seen is None:
            watched.final_when_seen = status in FINAL_STATUSES or status == "lost"
        elif not watched.final_when_seen:
            rid = watched.paths.id
            if saves > watched.saves:
                for path in watched.events.progress["checkpoints"][watched.saves:]:
                    out.append(Change("checkpoint", rid, Path(str(path)).name, path=str(path)))
            if status != watched.status and (status in FINAL_STATUSES or status == "lost"):
                record = watched.record
                detail = end_cause(record, status) if record is not None and status in ("failed", "lost") else ""
                out.append(Change(status, rid, detail, Run(watched.paths, record).failed_rank))
                watched.final_when_seen = True
        watched.saves = saves
        watched.status = status
        return out

    def _row(self, watched: _Watched) -> RunRow:
        record = watched.record or {}
        run = Run(watched.paths, watched.record)
        p = watched.events.progress
        return RunRow(
            id=watched.paths.id,
            run_dir=str(watched.paths.root),
            profile=run.profile or "?",
            status=self._status(watched) if watched.status is None else watched.status,
            step=int(p["step"]),
            max_steps=p.get("max_steps") or run.max_steps,
            loss=p.get("loss"),
            best_metric=watched.events.metric,
            best=watched.events.best,
            created=run.created if watched.record is not None else None,
            started=run.started,
            ended=run.ended,
            failed_rank=run.failed_rank,
            checkpoints=len(p["checkpoints"]),
            parent=run.parent,
            job=watched.job,
            queue=self._places.get(run_key(watched.paths.root)) if self._places else None,
            sweep=sweep_of(record),
            attempt=attempt_label(run),
            restarted=attempt_line(run),
        )


class RunWatch:
    """One run followed closely (a monitor's model): its record, every rank's log, the launcher's
    log, a merged view of the ranks, its events and its checkpoints. `poll()` is for one worker
    thread; what it fills in may be read from another (indexes and series only grow)."""

    CHECKPOINT_EVERY = 5.0

    def __init__(self, run_dir: Path) -> None:
        from tuitrain.runs.view.logfile import LogFile
        from tuitrain.runs.view.merged_log import FoldedLog, MergedLog

        self.paths = RunPaths(Path(run_dir))
        self.record: RunRecord = read_record(self.paths)
        self._record_mtime: int | None = None
        self.num_ranks = self.run.num_processes
        self.ranks = [LogFile(self.paths.rank_log(r)) for r in range(self.num_ranks)]
        self.launcher = LogFile(self.paths.launcher_log)
        self.merged = MergedLog(self.ranks)
        self.folded = FoldedLog(self.merged)
        self.events = EventsTail(self.paths.events, rule=profile_best_rule(self.paths.profile))
        self.checkpoints: list[Any] = []
        self.checkpoint_times: dict[str, float] = {}  # folder name -> when written (events, else mtime)
        self._checkpoints_at = 0.0
        self._saves_seen = -1
        self.status: str = self.run.status
        self.damaged: str | None = None  # why run.json, as it is now, cannot be used (RecordDamaged.reason)
        self.polls = 0
        self.queue: QueuePlace | None = None  # while queued: its place and what it waits for
        self._queue = QueueLook()

    @property
    def run(self) -> Run:
        """Its record as last read, as typed fields (`rundir.run.Run`)."""
        return Run(self.paths, self.record)

    @property
    def output_dir(self) -> Path | None:
        out = self.run.output_dir
        return Path(out) if out else None

    def poll(self, now: float | None = None) -> bool:
        """Read what changed; True when anything did."""
        import time as _time

        from tuitrain.rundir.checkpoints import run_checkpoints

        now = _time.monotonic() if now is None else now
        changed = self.polls == 0
        self.polls += 1
        try:
            mtime = os.stat(self.paths.record).st_mtime_ns
            if mtime != self._record_mtime:
                self._record_mtime = mtime
                changed = True
                self.record, self.damaged = read_record(self.paths), None
        except RecordDamaged as exc:  # its logs and events stay shown; its state is not known until run.json is whole
            self.damaged = exc.reason
        except (OSError, RunRecordError):
            pass
        status = UNREADABLE if self.damaged is not None else effective_status(self.record)
        if status != self.status:
            self.status = status
            changed = True
        wall = _time.time()  # before reading the logs: lines written later wait a poll (MergedLog.sync)
        for log in [*self.ranks, self.launcher]:
            before = log.size
            changed |= log.update() != 0 or log.size != before
        self.merged.sync(wall)
        if self.num_ranks > 1:
            before = len(self.folded.first)
            self.folded.sync()
            changed |= len(self.folded.first) != before
        if self.events.poll():
            changed = True
            self.checkpoint_times.update(self.events.save_times)
        place = self._queue.place(self.paths.root) if status == "queued" else None
        if place != self.queue:
            self.queue = place
            changed = True
        saves = len(self.events.progress["checkpoints"])
        running = status not in FINAL_STATUSES
        if self.output_dir is not None and (saves != self._saves_seen or
                                            (running and now - self._checkpoints_at > self.CHECKPOINT_EVERY)):
            found = run_checkpoints(self.record)
            self._saves_seen = saves
            self._checkpoints_at = now
            if [(c.step, c.complete, c.size_bytes) for c in found] != [(c.step, c.complete, c.size_bytes) for c in self.checkpoints]:
                for c in found:
                    if c.path.name not in self.checkpoint_times:
                        try:
                            self.checkpoint_times[c.path.name] = os.stat(c.path).st_mtime
                        except OSError:
                            pass
                self.checkpoints = found
                changed = True
        return changed

    def close(self) -> None:
        for log in [*self.ranks, self.launcher]:
            log.close()
