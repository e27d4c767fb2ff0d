"""One run of another workstation mirrored into a cache folder here, so the app's monitor reads it as a local run.

There, `tuitrain workstations --mirror RUN` (`serve`) reads the run's folder (`FolderFiles`) and writes `wire`
lines: `hello` (its tuitrain version) once, then `append` (what an append-only file grew by, from the offset home
already has: home says those offsets first, in a `setup` line) and `file` (a small file's whole new content, when
it changed), looked at every POLL_SECONDS, and `beat` when it has said nothing for BEAT_SECONDS. It ends when its
stdin closes or home falls silent (as `runs_stream.serve`): nothing stays running there.

Here, `RunMirror` holds that one ssh connection (a `RunsStream`'s: the same beats, silence and retries) and
writes what comes into `cache_dir(host, run)` (`apply`); it calls back on every change, and with why when the box
cannot be reached or falls silent for SILENCE_SECONDS. The cache is a viewer's copy: a run's requests (stop, save,
…) go to the box (`mirrored_run` says which), never to the cache. It is also only a copy to remove: an ended run's
when its monitor closes (`RunMirror.stop_and_forget`), and at the app's start any not written for PRUNE_SECONDS
(`prune_cache`); `remove_cache` removes only a folder under `cache_root()`, never a run folder of any machine.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tuitrain.remote import wire
from tuitrain.remote.runs_stream import HOME_SILENCE_SECONDS, HostNews, RunsStream, listen_for_home
from tuitrain.remote.workstations import Workstation

MIRROR_ARG = "--mirror"  # tuitrain workstations --mirror RUN: the box's side
POLL_SECONDS = 0.25  # how often the box looks at the run's files (a log line's way to the screen: well under 1 s)
BEAT_SECONDS = 2.0  # the box says something at least this often
WHOLE_LIMIT = 4 * 1024 * 1024  # a whole file bigger than this is not sent (a viewer needs none that big)
# what of a run's folder a viewer reads (rundir.layout's names), relative to it: appended files travel as they grow
APPENDED = ("events.jsonl", "logs/*.log", "logs/*.times")
WHOLE = ("profile.toml", "ranks/*.json", "heartbeats/*.json", "stacks/*.txt", "stacks/*.json",
         "machines/*.json")
RECORD = "run.json"  # made there for a viewer elsewhere: its status as the box judges it, no process ids (the
# cache's processes are no processes of this machine)
CHECKPOINTS = ".mirror/checkpoints.json"  # the box's own look at the run's checkpoints (the cache holds no weights)
PRUNE_SECONDS = 7 * 24 * 3600.0  # a mirror not written for this long is removed at the app's start
FORGET_WAIT_SECONDS = 30.0  # how long a closed mirror's thread may take to end before its folder is removed


def mirrored(relative: str) -> bool:
    """Whether a path (relative to a run's folder) is one the mirror carries; anything else is refused here."""
    if relative.startswith("/") or ".." in relative.split("/"):
        return False
    return relative in (RECORD, CHECKPOINTS) or any(fnmatch.fnmatchcase(relative, p) for p in (*APPENDED, *WHOLE))


def cache_root() -> Path:
    """Where other workstations' runs are mirrored: `$XDG_CACHE_HOME/tuitrain/workstations` (never the runs root,
    whose folders are this machine's runs)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tuitrain" / "workstations"


def cache_dir(host: str, run_id: str) -> Path:
    return cache_root() / host / run_id


def mirrored_run(run_dir: Path) -> tuple[str, str] | None:
    """(host, run id) when `run_dir` is another workstation's run mirrored here; None for a run of this machine."""
    folder = Path(run_dir).absolute()
    return (folder.parent.name, folder.name) if folder.parent.parent == cache_root().absolute() else None


def remove_cache(run_dir: Path) -> bool:
    """Remove a mirrored run's cache folder; only one `mirrored_run` names (under `cache_root()`, not a link), so a
    run folder of this machine or of the box is never touched. Whether it was removed."""
    folder = Path(run_dir)
    if mirrored_run(folder) is None or folder.is_symlink() or not folder.is_dir():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


def last_written(folder: Path) -> float:
    """When anything in a cache folder was last written (its own mtime when it holds nothing)."""
    newest = 0.0
    for root, _dirs, files in os.walk(folder):
        for name in (".", *files):
            try:
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
            except OSError:
                continue
    return newest


def prune_cache(older_than: float = PRUNE_SECONDS, keep: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the mirrors not written for `older_than` seconds (but `keep`, a run a monitor opens on), and a host's
    folder left empty; the folders removed."""
    root = cache_root()
    now = time.time() if now is None else now
    removed: list[Path] = []
    kept = Path(keep).absolute() if keep is not None else None
    try:
        hosts = [h for h in root.iterdir() if h.is_dir() and not h.is_symlink()]
    except OSError:
        return removed
    for host in hosts:
        try:
            runs = [r for r in host.iterdir() if r.is_dir()]
        except OSError:
            continue
        for run in runs:
            if run.absolute() != kept and now - last_written(run) > older_than and remove_cache(run):
                removed.append(run)
        try:
            host.rmdir()  # only when empty
        except OSError:
            pass
    return removed


# -- there ----------------------------------------------------------------------------------------------------


@dataclass
class FolderFiles:
    """What of a run's folder has been sent so far, and what is new since (`changes`)."""

    root: Path
    extra: Callable[[], dict[str, bytes]] | None = None  # files made for home (CHECKPOINTS), sent when they change
    offsets: dict[str, int] = field(default_factory=dict)  # relative path → bytes sent (appended files)
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)  # relative path → (mtime_ns, size) sent
    made: dict[str, bytes] = field(default_factory=dict)  # extra's content sent last

    def _found(self, patterns: tuple[str, ...]) -> list[tuple[Path, str]]:
        return [(p, str(p.relative_to(self.root))) for pattern in patterns for p in sorted(self.root.glob(pattern))]

    def changes(self, limit: int = 64) -> list[bytes]:
        """Messages for what is new (at most about `limit`; call again for the rest)."""
        out: list[bytes] = []
        for relative, data in (self.extra() if self.extra is not None else {}).items():  # first: a monitor opens on
            if self.made.get(relative) != data:  # the record, before a long log has come
                self.made[relative] = data
                out.append(wire.encode_bytes("file", relative, data))
        for local, relative in self._found(APPENDED):
            while len(out) < limit:
                chunk = self._read_new(local, relative)
                if not chunk:
                    break
                out.append(wire.encode_bytes("append", relative, chunk))
        for local, relative in self._found(WHOLE):
            if len(out) >= limit:
                break
            try:
                info = local.stat()
                stamp = (info.st_mtime_ns, info.st_size)
                if self.stamps.get(relative) == stamp or info.st_size > WHOLE_LIMIT:
                    continue
                out.append(wire.encode_bytes("file", relative, local.read_bytes()))
            except OSError:
                continue  # not there yet, or being replaced: the next call sends it
            self.stamps[relative] = stamp
        return out

    def _read_new(self, local: Path, relative: str) -> bytes:
        offset = self.offsets.get(relative, 0)
        try:
            with open(local, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(wire.CHUNK)
        except OSError:
            return b""
        self.offsets[relative] = offset + len(chunk)
        return chunk


def serve(files: FolderFiles, version: str, out: IO[bytes], inp: IO[bytes], poll_seconds: float = POLL_SECONDS,
          home_silence: float | None = HOME_SILENCE_SECONDS) -> int:
    """Send `files`' changes to `out` until `inp` closes, home falls silent (`home_silence`, None: never) or `out`
    is gone. Home's first line (`setup`) says the offsets it has of each appended file. Returns the exit status."""
    try:
        first = wire.decode(inp.readline())
    except wire.WireError:
        first = {}
    offsets = first.get("offsets") if first.get("t") == "setup" else None
    if isinstance(offsets, dict):
        files.offsets.update({str(k): int(v) for k, v in offsets.items() if mirrored(str(k)) and isinstance(v, int)})
    heard, closed = listen_for_home(inp)
    if not wire.send(out, wire.encode("hello", version=version)):
        return 0
    said = time.monotonic()
    while not closed.is_set():
        now = time.monotonic()
        messages = files.changes()
        if not messages and now - said >= BEAT_SECONDS:
            messages = [wire.encode("beat")]
        if messages:
            if not wire.send(out, b"".join(messages)):
                return 0
            said = now
        if home_silence is not None and now - heard[0] > home_silence:
            return 0
        if len(messages) < 64:  # more to send: at once
            closed.wait(poll_seconds)
    return 0


# -- here -----------------------------------------------------------------------------------------------------


def apply(cache: Path, message: dict[str, Any]) -> bool:
    """Write one `append` or `file` message into the cache folder; False for a path the mirror does not carry."""
    relative = str(message.get("path", ""))
    if not mirrored(relative):
        return False
    wire.write_into(cache / relative, message)
    return True


def held_offsets(cache: Path) -> dict[str, int]:
    """What the cache already has of each appended file (a new connection goes on from there)."""
    offsets: dict[str, int] = {}
    for pattern in APPENDED:
        for path in cache.glob(pattern):
            try:
                offsets[str(path.relative_to(cache))] = path.stat().st_size
            except OSError:
                continue
    return offsets


@dataclass(frozen=True)
class MirrorNews:
    """What the mirror of a run says: its files changed (`problem` None), or why the box is not heard."""

    host: str
    run_id: str
    problem: str | None = None


class RunMirror(RunsStream):
    """Another workstation's run, mirrored into `cache`: `start()`, then `on_news` is called (from the mirror's own
    thread) after each batch of changes and on each failure; `stop()` ends it there and here. A RunsStream's
    connection (its beats, silence and retries), with the mirror's verb and messages."""

    def __init__(self, station: Workstation, version: str, run_id: str, cache: Path,
                 on_news: Callable[[MirrorNews], None], **timing: Any) -> None:
        super().__init__(station, version, self._failed, **timing)
        self.run_id = run_id
        self.cache = Path(cache)
        self.on_mirror = on_news
        self.problem: str | None = None
        self._thread.name = f"mirror {station.host}:{run_id}"

    def stop_and_forget(self, wait: float = FORGET_WAIT_SECONDS) -> None:
        """End the mirror, then remove its cache folder once its thread has stopped writing there (an ended run's:
        a viewer opening it again fetches it anew). The wait is a thread's of its own: returns at once."""
        self.stop()

        def forget() -> None:
            if self._thread.ident is not None:  # started
                self._thread.join(wait)
            if not self._thread.is_alive():
                remove_cache(self.cache)

        threading.Thread(target=forget, daemon=True, name=f"forget {self.station.host}:{self.run_id}").start()

    def _failed(self, news: HostNews) -> None:
        self.problem = news.problem or f"{self.station.host}: no answer"
        self.on_mirror(MirrorNews(self.station.host, self.run_id, self.problem))

    def _argv(self) -> list[str]:
        return self.station.tuitrain(["workstations", MIRROR_ARG, self.run_id])

    def _opened(self, stdin: IO[bytes]) -> None:
        """The sizes the cache holds, so the box sends only what is new."""
        self.cache.mkdir(parents=True, exist_ok=True)
        wire.send(stdin, wire.encode("setup", offsets=held_offsets(self.cache)))

    def _act(self, message: dict[str, Any]) -> str | None:
        kind = message["t"]
        if kind in ("append", "file"):
            try:
                apply(self.cache, message)
            except OSError as exc:
                return f"{self.station.host}: cannot write its run into {self.cache} ({exc.strerror})"
        if kind != "beat" or self.problem is not None:
            self.problem = None  # heard again
            self.on_mirror(MirrorNews(self.station.host, self.run_id))
        return None


def mirror_of(run_dir: Path, on_news: Callable[[MirrorNews], None]) -> tuple[RunMirror | None, str | None]:
    """The mirror that keeps `run_dir` fresh when it is another workstation's run (not started), or why there is
    none (a host no longer in the settings); (None, None) for a run of this machine."""
    from tuitrain import __version__
    from tuitrain.remote.workstations import find, workstations
    from tuitrain.user_config import UserConfigError

    found = mirrored_run(run_dir)
    if found is None:
        return None, None
    host, run_id = found
    try:
        station = find(host, workstations())
    except UserConfigError as exc:
        return None, str(exc)
    return RunMirror(station, __version__, run_id, Path(run_dir), on_news), None


def fetch(host: str, run_id: str, timeout: float = 40.0) -> tuple[Path, str | None]:
    """Another workstation's run mirrored here until its record is (a monitor opens on it; its own mirror goes on
    from there): its cache folder, and why not (one line) when it cannot be. At once when the cache has it."""
    cache = cache_dir(host, run_id)
    if (cache / RECORD).is_file():
        return cache, None
    done = threading.Event()
    said: list[str] = []

    def heard(news: MirrorNews) -> None:
        if news.problem:
            said.append(news.problem)
        if news.problem or (cache / RECORD).is_file():
            done.set()

    mirror, problem = mirror_of(cache, heard)
    if mirror is None:
        return cache, problem or f"{host}: not a workstation of the settings"
    mirror.start()
    try:
        done.wait(timeout)
    finally:
        mirror.stop()
    if (cache / RECORD).is_file():
        return cache, None
    return cache, said[0] if said else f"{host}: sent nothing of {run_id} in {timeout:g} s; check `ssh {host} true`"


def read_checkpoints(run_dir: Path) -> object:
    """The checkpoints of another workstation's run as the box last saw them, as JSON (`rundir.checkpoints`' to_dict
    each, read by `checkpoints_from_json`); None where there are none yet or they do not read."""
    import json

    try:
        return json.loads((Path(run_dir) / CHECKPOINTS).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
