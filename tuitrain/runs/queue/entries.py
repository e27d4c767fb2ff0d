"""This machine's queue of runs: one folder every user of the machine can see ($TUITRAIN_QUEUE_DIR, else
/tmp/tuitrain-queue), one JSON entry per queued run, read and written only under one lock (`flock` on `.lock`).

An entry is the run's place in the line (its file name starts with the time it was queued) and, once the run
started, its claim on its GPUs: it stays until the run's supervisor removes it at the run's end, or is ignored
once that supervisor is gone. What an entry waits for is `runs.queue.rule.verdict`'s to say. Its file holds
`EntryFile`, checked when read: one that does not check is a `DamagedEntry`, its reason one line naming the key."""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, Literal, Mapping, TypedDict

from tuitrain.atomic import write_text_atomic
from tuitrain.rundir.json_shape import Matching, Within, checked
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import Count, ProcessIdentity, RunRecord, RunRecordError, Time, has_ended, read_record
from tuitrain.rundir.run import Fields, Run

QUEUE_DIR_ENV = "TUITRAIN_QUEUE_DIR"
SHARED_QUEUE_DIR = Path("/tmp/tuitrain-queue")  # not $TMPDIR: that may be each user's own
ENTRY_MODE = 0o644  # every user of the machine reads every claim, whatever their umask
ANNOUNCE_GRACE = 60.0  # an entry whose supervisor has not written itself in yet counts as alive this long
State = Literal["waiting", "started"]  # started: it holds its GPUs until its supervisor removes it
Name = Annotated[str, Matching("(?s).+", "a name")]


class DependencyFile(TypedDict):
    run: Name
    run_dir: Name
    ok: bool


class _EntryNeeded(TypedDict):
    run: Name
    run_dir: Name
    uid: Annotated[int, Within(0, 2**32 - 1, "a user id")]
    queued: Time


class EntryFile(_EntryNeeded, total=False):
    """An entry's file as `Entry.to_json` writes it; the keys an older version may lack are optional."""

    user: str
    gpus: list[Annotated[int, Within(0, 2**20, "a GPU index")]]
    after: list[DependencyFile]
    count: Count
    min_free: Annotated[int, Within(0, 2**62, "a size in bytes")] | None
    state: State
    supervisor: ProcessIdentity | None
    started: Time | None


@dataclass(frozen=True)
class Dependency:
    """A run this one waits for: any end (`--after`), or only `finished` (`ok`, `--after-ok`)."""

    run: str
    run_dir: str
    ok: bool = False


@dataclass(frozen=True)
class Entry:
    name: str  # the file's name: "<queued ns>-<uid>-<run id>.json", so names sort in queue order
    run: str
    run_dir: str
    uid: int
    user: str
    queued: float
    gpus: tuple[int, ...] = ()  # physical (NVML) indices; () for a run on the CPU, or one that waits for `count`
    after: tuple[Dependency, ...] = ()
    count: int = 0  # `hardware.gpus = N`: any N free GPUs, chosen at its start (then in `gpus`)
    min_free: int | None = None  # `hardware.min_free_memory` in bytes: it shares a GPU that has this much free
    state: State = "waiting"
    supervisor: ProcessIdentity | None = None  # once the supervisor wrote itself in
    started: float | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("name")
        return data


def entry_from(name: str, held: EntryFile) -> Entry:
    """An entry as its file holds it (checked: `scan_entries`)."""
    return Entry(name=name, run=held["run"], run_dir=held["run_dir"], uid=held["uid"],
                 user=held.get("user") or str(held["uid"]), queued=held["queued"], gpus=tuple(held.get("gpus", ())),
                 after=tuple(Dependency(d["run"], d["run_dir"], d["ok"]) for d in held.get("after", ())),
                 count=held.get("count", 0), min_free=held.get("min_free"), state=held.get("state", "waiting"),
                 supervisor=held.get("supervisor"), started=held.get("started"))


def queue_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    configured = environ.get(QUEUE_DIR_ENV)
    return Path(configured).expanduser() if configured else SHARED_QUEUE_DIR


def folder_of(run: Run) -> Path:
    """The queue folder a run was queued in: its record's, else this user's (`queue_dir`)."""
    folder = run.queue.get("dir")
    return Path(folder) if folder else queue_dir()


def ensure_queue_dir(folder: Path) -> Path:
    """The queue folder, made writable by every user (sticky, as /tmp: each removes only their own entries)."""
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(folder, 0o1777)
        except OSError:
            pass
    return folder


@contextmanager
def locked(folder: Path) -> Iterator[Path]:
    """The queue folder under its lock: every read and write of entries happens inside one."""
    ensure_queue_dir(folder)
    lock = folder / ".lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            os.fchmod(fd, 0o666)  # the umask took its share off: the next user must open it too
        except OSError:
            pass  # another user's lock file: we only need to open it
    except PermissionError:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)  # flock needs no write access
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield folder
    finally:
        os.close(fd)


@dataclass(frozen=True)
class DamagedEntry:
    """An entry that cannot be read as one (truncated, not JSON, a field of the wrong type): no claim we can honour.
    Its owner sets it aside (renamed to end in DAMAGED_SUFFIX), `tuitrain queue` names it, and the run it stood for
    ends with that cause (`runs.queue.wait.wait_turn`)."""

    name: str  # the file's name now (set aside: ending in DAMAGED_SUFFIX)
    run: str  # the run id its name gives ("" when the name is no entry's)
    uid: int  # the file's owner
    reason: str

    @property
    def set_aside(self) -> bool:
        return self.name.endswith(DAMAGED_SUFFIX)


DAMAGED_SUFFIX = ".damaged"
DAMAGED_KEEP_SECONDS = 7 * 24 * 3600.0  # a set-aside entry whose run never came to end it is removed after this


def _run_of_name(name: str) -> str:
    """The run id an entry's file name gives ("<queued ns>-<uid>-<run id>.json"), or ""."""
    parts = name.removesuffix(DAMAGED_SUFFIX).removesuffix(".json").split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0].isdecimal() and parts[1].isdecimal() else ""


def scan_entries(folder: Path) -> tuple[list[Entry], list[DamagedEntry]]:
    """Every readable entry, in queue order, and every damaged one (call under `locked`)."""
    entries: list[Entry] = []
    damaged: list[DamagedEntry] = []
    try:
        names = sorted(n for n in os.listdir(folder)
                       if n.endswith((".json", ".json" + DAMAGED_SUFFIX)) and not n.startswith("."))
    except FileNotFoundError:
        return [], []
    for name in names:
        path = folder / name
        try:
            held, reason = checked(path.read_bytes(), EntryFile)
        except FileNotFoundError:
            continue  # removed since the listing (another user's, outside our lock: theirs is the same lock)
        except OSError as exc:
            held, reason = None, f"unreadable ({exc.strerror or exc})"
        if reason is None and not name.endswith(DAMAGED_SUFFIX):
            entries.append(entry_from(name, held))
            continue
        try:
            uid = path.stat().st_uid
        except OSError:
            continue
        damaged.append(DamagedEntry(name, _run_of_name(name), uid, reason or "set aside as damaged"))
    return entries, damaged


def read_entries(folder: Path) -> list[Entry]:
    """Every readable entry, in queue order (call under `locked`)."""
    return scan_entries(folder)[0]


def set_aside_damaged(folder: Path, damaged: list[DamagedEntry], now: float | None = None) -> list[DamagedEntry]:
    """This user's damaged entries renamed out of the line (call under `locked`); set-aside ones older than
    DAMAGED_KEEP_SECONDS removed. Returns the damaged entries as they now are (another user's stay as found)."""
    now = time.time() if now is None else now
    kept = []
    for found in damaged:
        if found.uid != os.getuid():
            kept.append(found)
            continue
        path = folder / found.name
        try:
            if not found.set_aside:
                os.rename(path, folder / (found.name + DAMAGED_SUFFIX))
                found = replace(found, name=found.name + DAMAGED_SUFFIX)
            elif now - path.stat().st_mtime > DAMAGED_KEEP_SECONDS:
                path.unlink()
                continue
        except OSError:
            pass
        kept.append(found)
    return kept


def damaged_entries(folder: Path) -> list[DamagedEntry]:
    """The queue folder's damaged entries, this user's set aside first (for `tuitrain queue`)."""
    with locked(folder):
        return set_aside_damaged(folder, scan_entries(folder)[1])


def damaged_entry_of(folder: Path, run_id: str) -> DamagedEntry | None:
    """A run's own entry, found damaged and set aside (call under `locked`)."""
    return next((d for d in set_aside_damaged(folder, scan_entries(folder)[1]) if d.run == run_id), None)


def write_entry(folder: Path, entry: Entry) -> None:
    write_text_atomic(folder / entry.name, json.dumps(entry.to_json(), indent=1) + "\n", mode=ENTRY_MODE)


def remove_entry(folder: Path, entry: Entry) -> None:
    try:
        (folder / entry.name).unlink()
    except FileNotFoundError:
        pass
    except PermissionError:
        pass  # another user's, in the sticky folder: ignored once dead (entry_alive)


def entry_of(run_dir: Path | str, entries: list[Entry]) -> Entry | None:
    return next((e for e in entries if e.run_dir == str(run_dir)), None)


def run_record(entry: Entry) -> RunRecord | None:
    """The entry's run.json, or None when it cannot be read (removed, or another user's that we may not read)."""
    try:
        return read_record(RunPaths(Path(entry.run_dir)))
    except (RunRecordError, OSError):
        return None


def entry_alive(entry: Entry, now: float | None = None) -> bool:
    """Whether the entry still stands for a queued or running run: its supervisor lives (or has had no time yet to
    write itself in) and its record, where readable, has not ended."""
    try:
        os.stat(entry.run_dir)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        pass  # another user's runs root we may not look into: its supervisor tells
    record = run_record(entry)
    if record is not None and has_ended(record):
        return False
    from tuitrain.rundir.process_tree import find_recorded  # psutil

    if entry.supervisor is None:
        return (now if now is not None else time.time()) - entry.queued < ANNOUNCE_GRACE
    return find_recorded(entry.supervisor) is not None


def supervisor_lost(entry: Entry) -> bool:
    """A dead entry whose run has not ended: its supervisor was killed (the run is `lost`)."""
    record = run_record(entry)
    return entry.supervisor is not None and record is not None and not has_ended(record)


def live_entries(folder: Path, now: float | None = None) -> list[Entry]:
    """The entries that still stand, in queue order; the dead are removed where we may (call under `locked`),
    and word goes out of a run of ours whose supervisor was killed (`runs.lost_word`)."""
    live = []
    for entry in read_entries(folder):
        if entry_alive(entry, now):
            live.append(entry)
            continue
        if entry.uid == os.getuid() and supervisor_lost(entry):
            from tuitrain.runs.lost_word import send_lost_word

            send_lost_word(entry.run_dir)
        remove_entry(folder, entry)
    return live


def gpu_wants(paths: RunPaths) -> tuple[int, int | None]:
    """(any N GPUs, min free bytes) of a run's frozen profile: `hardware.gpus = N` (0 when it lists its GPUs or
    runs off CUDA) and `hardware.min_free_memory`."""
    from tuitrain.profile.memory_size import parse_memory_size
    from tuitrain.runs.keeper.manifest import read_frozen_profile

    try:
        accelerator = Fields(read_record(paths)).accelerator
    except (RunRecordError, OSError):
        return 0, None
    if accelerator != "cuda":
        return 0, None
    hardware = read_frozen_profile(paths).get("hardware") or {}
    gpus = hardware.get("gpus")
    count = gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else 0
    return count, parse_memory_size(hardware.get("min_free_memory"))


def enqueue(folder: Path, paths: RunPaths, gpus: tuple[int, ...], after: tuple[Dependency, ...], user: str) -> Entry:
    """Add a run at the end of the line (what GPUs it wants beyond `gpus` is read from its profile: `gpu_wants`)."""
    count, min_free = gpu_wants(paths)
    with locked(folder):
        queued = time.time_ns()
        entry = Entry(name=f"{queued:020d}-{os.getuid()}-{paths.id}.json", run=paths.id, run_dir=str(paths.root),
                      uid=os.getuid(), user=user, queued=queued / 1e9, gpus=() if count else gpus, after=after,
                      count=count, min_free=min_free)
        write_entry(folder, entry)
    return entry


def update_entry(folder: Path, entry: Entry, **fields: Any) -> Entry:
    """The entry with `fields` changed, written (call under `locked`)."""
    changed = replace(entry, **fields)
    write_entry(folder, changed)
    return changed


def drop(folder: Path, run_dir: Path) -> None:
    """Remove a run's entry (its end: its GPUs are free for the next)."""
    with locked(folder):
        found = entry_of(run_dir, read_entries(folder))
        if found is not None:
            remove_entry(folder, found)


def queue_fields(folder: Path, gpus: tuple[int, ...], after: tuple[Dependency, ...],
                 sweep: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What run.json keeps of its queueing (`queue`): the folder, what it waits for, and the sweep it belongs to
    (`id`, its `index` of `of`, its `label`)."""
    fields: dict[str, Any] = {"dir": str(folder), "gpus": list(gpus), "after": [asdict(d) for d in after]}
    if sweep:
        fields["sweep"] = dict(sweep)
    return {"queue": fields}


def sweep_fields(record: RunRecord) -> dict[str, Any] | None:
    """The sweep a run was queued in, as its record keeps it (`id`, `index`, `of`, `label`), or None."""
    sweep = Fields(record).queue.get("sweep")
    return None if sweep is None else dict(sweep)


def sweep_of(record: RunRecord) -> str | None:
    """The id of the sweep a run was queued in, or None."""
    sweep = sweep_fields(record)
    return str(sweep["id"]) if sweep and sweep.get("id") else None


@dataclass(frozen=True)
class QueueRequest:
    """What `tuitrain run --queue/--after/--after-ok` asks: the runs to wait for (resolved, existing)."""

    after: tuple[RunPaths, ...] = ()
    after_ok: tuple[RunPaths, ...] = ()
    folder: Path = field(default_factory=queue_dir)
    gpus_for: Callable[[str], tuple[int, ...]] | None = None  # the physical GPUs a run on this accelerator takes
    sweep: Mapping[str, Any] | None = None  # `run --sweep`: {id, index, of, label} (queue_fields)
    hold: bool = False  # created held (control/hold): it waits until the starter lets go (a sweep, queued whole)

    def dependencies(self) -> tuple[Dependency, ...]:
        return (*(Dependency(p.id, str(p.root), False) for p in self.after),
                *(Dependency(p.id, str(p.root), True) for p in self.after_ok))
