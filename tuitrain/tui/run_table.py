"""How Home shows its runs (htop-style): a sort column cycled by a key (or picked by a click on its header),
reversed by another, a filter text matched against each run's id, profile and status, a sweep's runs kept together,
each run's short label (what tells it from the others) and the checkpoints written lately (a mark on their runs'
rows, a count). Functions of rows only, so the order survives every refresh."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from tuitrain.rundir.events import figure_key

if TYPE_CHECKING:
    from tuitrain.runs.view.live import Change, RunRow

SORTS = ("started", "status", "profile", "loss", "best", "step", "time")
# the sort a click on a column's header picks (the RUN label starts with when the run started)
COLUMN_SORTS = {"RUN": "started", "STATUS": "status", "STEP": "step", "LOSS": "loss", "BEST": "best", "TIME": "time"}
# what needs looking at first: going, then ended badly, then ended well
STATUS_ORDER = ("hung?", "running", "starting", "planned", "queued", "stopping", "failed", "lost", "unreadable", "killed",
                "stopped", "finished")


@dataclass(frozen=True)
class RunOrder:
    sort: str = "started"
    reverse: bool = False
    filter: str = ""

    @property
    def default(self) -> bool:
        return self == RunOrder()

    def arrow(self) -> str:
        """The direction a user reads: newest first is ↓ for started, the best first ↓ for best, a–z / lowest first
        ↑ for the others."""
        down = (self.sort in ("started", "best")) != self.reverse
        return "↓" if down else "↑"

    def column(self) -> str | None:
        """The column whose header says this sort (None for the profile, which has none of its own)."""
        return next((name for name, sort in COLUMN_SORTS.items() if sort == self.sort), None)

    def clicked(self, column: str) -> RunOrder | None:
        """The order after a click on `column`'s header: sorted by it, or reversed when it already is (None: a
        column that sorts nothing, HOST)."""
        sort = COLUMN_SORTS.get(column)
        if sort is None:
            return None
        if sort == self.sort:
            return replace(self, reverse=not self.reverse)
        return replace(self, sort=sort, reverse=False)


def _best_first(row: RunRow) -> float:
    """The row's best value, turned so that the best sorts first (runs.best's rule of its metric's name)."""
    from tuitrain.rundir.best import best_rule

    value = row.best or 0.0
    return -value if best_rule(row.best_metric).greater_is_better else value


def _key(row: RunRow, sort: str, now: float) -> tuple[Any, ...]:
    # each key sorts "first" ascending; the sort is stable, so ties keep the watcher's order (newest first)
    if sort == "status":
        return (STATUS_ORDER.index(row.status) if row.status in STATUS_ORDER else len(STATUS_ORDER),)
    if sort == "profile":
        return (row.profile.lower(),)
    if sort == "loss":
        return figure_key(row.loss)
    if sort == "best":
        return (row.best is None, _best_first(row) if row.best is not None else 0.0)
    if sort == "step":
        return (row.step,)
    if sort == "time":  # as TIME shows it: a live run's so far
        end = row.ended or (now if not row.final else None)
        return (not (row.started and end), (end or 0.0) - (row.started or 0.0))
    return (-(row.created or row.started or 0.0),)


# what runs.start.new_run.make_run_dir names a run: YYYYMMDD-HHMMSS-<slug>[-n], in local time
_RUN_ID = re.compile(r"^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})-(.+)$")


def _id_parts(run_id: str) -> tuple[tuple[str, ...], str] | None:
    """((year, month, day, hour, minute, second), name) of a run id as tuitrain names runs; None otherwise."""
    found = _RUN_ID.match(run_id)
    return (found.groups()[:6], found.group(7)) if found else None


def run_label(run_id: str, now: float, seconds: bool = False) -> str:
    """The part of a run's id that tells it from the others: when it started and its name ('18:30 demo'),
    with the date when that is not the day of `now` ('11-24 18:30 demo'; another year: '2025-11-24 …').
    An id not named as tuitrain names runs is shown whole."""
    parts = _id_parts(run_id)
    if parts is None:
        return run_id
    (year, month, day, hour, minute, second), name = parts
    today = time.strftime("%Y%m%d", time.localtime(now))
    clock = f"{hour}:{minute}:{second}" if seconds else f"{hour}:{minute}"
    if today == f"{year}{month}{day}":
        return f"{clock} {name}"
    if today[:4] == year:
        return f"{month}-{day} {clock} {name}"
    return f"{year}-{month}-{day} {clock} {name}"


def run_labels(run_ids: Iterable[str], now: float, names: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each run's label (`run_label`); runs that would read alike (same minute, same name) get their seconds.
    `names`: a run's name to show in place of its id's (a sweep's run: its name with its values whole, which its
    id has folder-safe and cut to 40 characters)."""
    ids = list(run_ids)
    names = names or {}

    def label(run_id: str, seconds: bool = False) -> str:
        said = run_label(run_id, now, seconds)
        name = names.get(run_id)
        parts = _id_parts(run_id)
        return said if not name or parts is None else said[:len(said) - len(parts[1])] + name

    short = {i: label(i) for i in ids}
    seen: dict[str, int] = {}
    for said in short.values():
        seen[said] = seen.get(said, 0) + 1
    return {i: label(i, seconds=True) if seen[said] > 1 else said for i, said in short.items()}


# a label's time (run_label): '18:30 ', '11-24 18:30:05 ', '2025-11-24 18:30 '
_LABEL_TIME = re.compile(r"^(?:\d{4}-)?(?:\d{2}-\d{2} )?\d{2}:\d{2}(?::\d{2})? ")


def cut_label(label: str, width: int) -> str:
    """`label` in at most `width` cells: its time whole, then its name cut in the middle (the name's start and its
    end, where a sweep's values and a run's -2 are, kept), '18:30 bert-b…ned-mrpc'."""
    if len(label) <= width:
        return label
    found = _LABEL_TIME.match(label)
    time_part = found.group(0) if found and len(found.group(0)) < width - 2 else ""
    name, room = label[len(time_part):], width - len(time_part) - 1
    if room < 1:
        return label[:max(0, width - 1)] + "…"
    head = room // 3
    return f"{time_part}{name[:head]}…{name[len(name) - (room - head):]}"


def matches(row: RunRow, text: str, host: str = "") -> bool:
    """Every word of `text` is in the run's id, profile or status, or a Slurm run's job state, or the date
    and time its label shows ('18:30', '11-24'), or its workstation's host (case-insensitive)."""
    parts = _id_parts(row.id)
    when = ""
    if parts is not None:
        year, month, day, hour, minute, second = parts[0]
        when = f"{year}-{month}-{day} {hour}:{minute}:{second}"
    haystack = f"{row.id} {row.profile} {row.status} {row.job or ''} {when} {host}".lower()
    return all(word in haystack for word in text.lower().split())


def arrange(rows: Sequence[RunRow], order: RunOrder, host: str = "", now: float | None = None) -> list[RunRow]:
    """The rows the table shows, in the order it shows them: a sweep's runs together, where its first run sorts
    (in the order among themselves)."""
    kept = [r for r in rows if matches(r, order.filter, host)] if order.filter.strip() else list(rows)
    clock = time.time() if now is None else now
    kept.sort(key=lambda r: _key(r, order.sort, clock))
    if order.reverse:  # the whole order turned over, ties too (as the eye reads it)
        kept.reverse()
    return together(kept)


def together(rows: Sequence[RunRow]) -> list[RunRow]:
    """`rows` with each sweep's runs moved up to its first one's place, in their order."""
    groups: dict[str, list[RunRow]] = {}
    for row in rows:
        if row.sweep is not None:
            groups.setdefault(row.sweep, []).append(row)
    out: list[RunRow] = []
    for row in rows:
        if row.sweep is None:
            out.append(row)
        elif groups[row.sweep] and groups[row.sweep][0] is row:
            out += groups.pop(row.sweep)
            groups[row.sweep] = []
    return out


def branches(rows: Sequence[RunRow]) -> list[str]:
    """Each row's place in its sweep's group as the RUN column draws it: '┌', '├', '└' for the runs of a sweep shown
    together (two or more), '' for any other."""
    out = []
    for i, row in enumerate(rows):
        same_before = i > 0 and row.sweep is not None and rows[i - 1].sweep == row.sweep
        same_after = i + 1 < len(rows) and row.sweep is not None and rows[i + 1].sweep == row.sweep
        out.append("├" if same_before and same_after else "└" if same_before else "┌" if same_after else "")
    return out


@dataclass(frozen=True)
class HostRuns:
    """What Home knows of one workstation: its runs once it answered, or why it cannot be watched."""

    rows: tuple[RunRow, ...] = ()
    problem: str | None = None
    answered: bool = False


@dataclass(frozen=True)
class Entry:
    """One line of Home's runs table: a run of this machine (host None) or of another workstation, or (row
    None) a workstation's own line while it is asked or when it cannot be watched (`note`: why)."""

    host: str | None
    row: RunRow | None
    note: str = ""
    branch: str = ""  # its place in its sweep's group (`branches`)

    @property
    def key(self) -> str:
        """The run's id here; HOST:ID on another workstation, as the CLI names it; the host alone for its line."""
        if self.row is None:
            return str(self.host)
        return self.row.id if self.host is None else f"{self.host}:{self.row.id}"


def host_entries(local: Sequence[RunRow], remote: dict[str, HostRuns], order: RunOrder,
                 now: float | None = None) -> list[Entry]:
    """Every line of the table: this machine's runs first, then each workstation's in the settings' order,
    each in `order`; a workstation that has not answered, or cannot be watched, is one line."""
    def lines(host: str | None, rows: Sequence[RunRow]) -> list[Entry]:
        shown = arrange(rows, order, host or "", now)
        return [Entry(host, row, branch=branch) for row, branch in zip(shown, branches(shown), strict=True)]

    entries = lines(None, local)
    for host, state in remote.items():
        if state.problem is not None:
            entries.append(Entry(host, None, state.problem.removeprefix(f"{host}: ")))
        elif not state.answered:
            entries.append(Entry(host, None))
        else:
            entries += lines(host, state.rows)
    return entries


def run_rows(found: Sequence[dict[str, Any]]) -> tuple[RunRow, ...]:
    """Another workstation's rows (`runs.view.live.RunRow` as dicts, from its stream) as rows again, each checked
    against RunRow's own annotations first (a host's words are data, never trusted as typed): a row that does not
    check is left out (the stream's hello already refused another version)."""
    import dataclasses

    from tuitrain.rundir.json_shape import problem
    from tuitrain.runs.queue.look import QueuePlace
    from tuitrain.runs.view.live import RunRow

    names = {f.name for f in dataclasses.fields(RunRow)}
    rows = []
    for item in found:
        if problem(item, RunRow) is None:
            fields = {k: v for k, v in item.items() if k in names}
            place = fields.get("queue")
            if place is not None:  # its queue place, as JSON made it
                fields["queue"] = QueuePlace(place["position"], place["length"], tuple(place["waits"]))
            rows.append(RunRow(**fields))
    return tuple(rows)


def queue_line(label: str, row: RunRow) -> str:
    """What Home says under its table of a highlighted queued run: its place and the first thing it waits for, as
    `tuitrain queue` says them (`runs.queue.look`), and the keys that act on it; '' for any other run."""
    if row.queue is None:
        return ""
    place, waits = row.queue.words()[0], row.queue.words()[1:]
    more = f" (and {len(waits) - 1} more: enter shows them)" if len(waits) > 1 else ""  # its monitor says each
    return " · ".join([label, place, *waits[:1]]) + more + " · t: first · x: cancel"


def restart_line(label: str, row: RunRow) -> str:
    """What Home says under its table of a highlighted run that restarted: its attempt and its latest restart, as
    `tuitrain status` says them (runs.view.attempts); '' for any other run."""
    return f"{label} · {row.restarted}" if row.restarted else ""


def describe(order: RunOrder) -> str:
    """The runs pane's title beyond its count: ' · /fail · by loss ↑' (nothing for the default)."""
    parts = []
    if order.filter.strip():
        parts.append(f"/{order.filter.strip()}")
    if order.sort != "started" or order.reverse:
        parts.append(f"by {order.sort} {order.arrow()}")
    return "".join(f" · {p}" for p in parts)


NEWS_SECONDS = 60.0  # how long a checkpoint is news: its run's row keeps a mark, the runs pane counts it


def checkpoint_step(folder: str) -> str:
    """'40' for 'checkpoint-40' (what the Trainer names a checkpoint's folder); any other name whole."""
    head, _, step = folder.rpartition("-")
    return step if head and step.isdecimal() else folder


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def checkpoints_written(folders: Sequence[str]) -> str:
    """A run's checkpoints of one poll, said once: 'checkpoint-40 written', '3 checkpoints written (the
    newest checkpoint-40)'."""
    if len(folders) == 1:
        return f"{folders[0]} written"
    return f"{plural(len(folders), 'checkpoint')} written (the newest {folders[-1]})"


@dataclass
class CheckpointNews:
    """The checkpoints the app heard of lately (runs it saw live): each is news for NEWS_SECONDS, which
    Home shows as a mark on its run's row and a count ('3 checkpoints of 2 runs'), not as a toast on
    whatever screen is open. A checkpoint counts once, and only while its folder is there: one that rotation
    (save_total_limit) has deleted is no news (Home said 'new: 4 checkpoints' when 3 were left)."""

    heard: list[tuple[float, str, str, str | None]] = field(default_factory=list)  # (when, run id, folder, its path)

    def add(self, changes: Iterable[Change], now: float) -> None:
        self.heard = [h for h in self.heard if now - h[0] < NEWS_SECONDS]
        known = {(h[1], h[2]) for h in self.heard}
        for change in changes:
            if change.kind == "checkpoint" and (change.run_id, change.detail) not in known:
                known.add((change.run_id, change.detail))
                self.heard.append((now, change.run_id, change.detail, change.path))

    def fresh(self, now: float) -> list[tuple[str, str]]:
        """(run id, checkpoint folder) of each checkpoint still news and still there, oldest first (a stat of each:
        a handful a minute)."""
        return [(run_id, folder) for when, run_id, folder, path in self.heard
                if now - when < NEWS_SECONDS and (path is None or os.path.isdir(path))]

    def marks(self, now: float) -> dict[str, str]:
        """Run id → the newest of its checkpoints still news."""
        return dict(self.fresh(now))

    def summary(self, now: float) -> str:
        """'checkpoint-40 of 18:30 demo', '3 checkpoints of 2 runs'; '' when there is no news."""
        fresh = self.fresh(now)
        if not fresh:
            return ""
        runs = {run_id for run_id, _ in fresh}
        if len(fresh) == 1:
            run_id, folder = fresh[0]
            return f"{folder} of {run_label(run_id, now)}"
        return f"{plural(len(fresh), 'checkpoint')} of {plural(len(runs), 'run')}"
