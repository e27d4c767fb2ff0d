"""The installed transformers' TrainingArguments fields (and model types), known without importing
transformers here, and without making the user wait for it.

(Near 600 lines on purpose: the table's one rule — cache, shipped snapshot, background probe and the
lock — reads best in one place; each part is small and the callers need all of them.)

`python -m tuitrain.engine.training_args_probe` imports transformers in a child interpreter and
prints a JSON table (seconds: up to ~15 s on a GPU box). The table is cached per transformers install
(its version and folder) under ``$XDG_CACHE_HOME/tuitrain/`` (default ``~/.cache/tuitrain/``) and
in-process; a new version is a new file (the older versions of the same folder are then removed).

Until that file exists (the first command after installing or upgrading transformers), the table
shipped with tuitrain (`SNAPSHOT`, one transformers version's) stands in for it, and the probe runs
in the background (`python -m tuitrain.profile.training_args_fill`: detached, niced, one at a time
under a lock, the file written atomically). The rule, in one place: **the snapshot may only accept**.
Whatever it cannot vouch for with the installed version - a [training] key or a model type it lacks,
a choice it does not list, the whole list of keys - is asked of the installed table, waiting for the
probe (announced to the reporter the CLI or the app sets, `report_reading_to`). Where the installed
version is the snapshot's, the snapshot is its table. A probe that failed is kept, in one line, for
the profile's problems (`training_args_failure`) instead of silently meaning "no table".

The table of renamed / retired [training] keys is `profile.training_migrations`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from tuitrain.atomic import write_text_atomic
from tuitrain.installed import distribution_version

PROBE_MODULE = "tuitrain.engine.training_args_probe"
FILL_MODULE = "tuitrain.profile.training_args_fill"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # the folder that holds tuitrain/
SNAPSHOT = Path(__file__).with_name("training_args_snapshot.json")  # python -m tuitrain.profile.training_args_fill --snapshot
LOCK_NAME = ".training-args.lock"  # in cache_dir(): one probe at a time, for every process


class TrainingArgsProbeError(Exception):
    """The child interpreter could not give the TrainingArguments table; the message says why, in one line."""


@dataclass(frozen=True)
class FieldSpec:
    """One TrainingArguments field in simple form.

    `type` is "bool" | "int" | "float" | "str" | "list" | "dict" | "any", prefixed "optional-" when
    None is allowed; a union of several kinds (e.g. ``str | list[str]``) has type "any" and lists
    them in `accepts`. `choices` holds enum / literal values (for lists: allowed elements).
    """

    name: str
    type: str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    accepts: tuple[str, ...] = ()
    help: str = ""

    @property
    def base_type(self) -> str:
        return self.type.removeprefix("optional-")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tuitrain"


def transformers_version() -> str | None:
    return distribution_version("transformers")


def transformers_location() -> str | None:
    """The folder `import transformers` would load from (found without importing it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("transformers")
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return str(Path(origin).resolve().parent) if origin else None


def _digest(location: str | None) -> str:
    return hashlib.sha256((location or "").encode("utf-8", "surrogateescape")).hexdigest()[:12]


def cache_path(version: str, location: str | None = None) -> Path:
    """The cached table of one transformers install: its version and a digest of its folder (two
    environments with the same version, e.g. one patched, keep a table each)."""
    return cache_dir() / f"training-args-{version}-{_digest(location)}.json"


def failure_path(version: str, location: str | None = None) -> Path:
    """Where a failed probe of that install leaves its one line (removed when a probe succeeds)."""
    return cache_path(version, location).with_suffix(".failed")


# Who hears about a wait for the table (the CLI prints to stderr, the app shows a note); None: nobody.
_reporter: Callable[[str], None] | None = None
_failure: str | None = None


def report_reading_to(reporter: Callable[[str], None] | None) -> None:
    """Announce each wait for the installed table (seconds, once per transformers install) to `reporter`."""
    global _reporter
    _reporter = reporter


def _report(line: str) -> None:
    if _reporter is not None:
        _reporter(line)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _child_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), str(PACKAGE_ROOT)) if p)
    return {**os.environ, "PYTHONPATH": path, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}


def introspect_training_args(python: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
    """Run the probe in a child interpreter and return its JSON table; TrainingArgsProbeError (one
    line naming what failed) when it cannot."""
    argv = [python or sys.executable, "-m", PROBE_MODULE]
    shown = f"python -m {PROBE_MODULE}"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_child_env())
    except subprocess.TimeoutExpired:
        raise TrainingArgsProbeError(f"{shown} took more than {timeout:g} s") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise TrainingArgsProbeError(f"{shown} could not start: {exc}") from None
    if done.returncode != 0:
        why = _last_line(done.stderr) or "no message"
        raise TrainingArgsProbeError(f"{shown} failed (exit {done.returncode}): {why}")
    try:
        table = json.loads(_last_line(done.stdout))
    except ValueError:
        table = None
    if not usable_table(table):
        raise TrainingArgsProbeError(f"{shown} printed no table: {_last_line(done.stdout)[:120]!r}")
    return table


def usable_table(table: Any) -> bool:
    """A table as the probe prints it (the cache and the snapshot hold the same)."""
    return isinstance(table, dict) and isinstance(table.get("fields"), dict) and "model_types" in table


def _read_table(path: Path) -> dict[str, Any] | None:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return table if usable_table(table) else None


# --------------------------------------------------------------------------- filling the cache

@contextlib.contextmanager
def _probe_lock(folder: Path) -> Iterator[None]:
    """One probe at a time (the others wait, then find the table written); where the folder cannot
    hold a lock, no lock: each write is atomic anyway."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _keep(version: str, location: str | None, table: dict[str, Any]) -> None:
    """Write the table (atomically: a reader never sees half of it), forget an earlier failure, and
    remove the tables of other versions once installed in the same folder (an upgrade)."""
    path = cache_path(version, location)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(table, indent=1, sort_keys=True))
    stale = [failure_path(version, location)]
    stale += [p for p in path.parent.glob(f"training-args-*-{_digest(location)}.*")
              if p.name != path.name and p.suffix in (".json", ".failed")]
    for old in stale:
        with contextlib.suppress(OSError):
            old.unlink()


def fill_cache(version: str, location: str | None, timeout: float = 120.0) -> dict[str, Any]:
    """The installed table, from the cache or else from the probe (then cached). One probe at a time:
    a second caller waits for the first and reads what it wrote. TrainingArgsProbeError when the
    probe fails or takes longer than `timeout` (its line is kept beside the cache for the next commands,
    `failure_path`)."""
    path = cache_path(version, location)
    with _probe_lock(path.parent):
        table = _read_table(path)
        if table is not None:
            return table
        try:
            table = introspect_training_args(timeout=timeout)
            if table.get("version") != version:
                raise TrainingArgsProbeError(f"python -m {PROBE_MODULE} found transformers {table.get('version')}, "
                                             f"not {version}")
        except TrainingArgsProbeError as exc:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(failure_path(version, location), str(exc) + "\n")
            raise
        try:
            _keep(version, location, table)
        except OSError as exc:
            _report(f"could not keep the TrainingArguments table in {path.parent} ({exc.strerror or exc}): "
                    "the next run reads it again")
        return table


# What this process knows; guarded by _lock. Exact tables are kept; a cold cache is looked at again on
# each call (a long-lived app sees the background probe's table as soon as it is written).
_lock = threading.Lock()
_tables: dict[tuple[str, str | None], dict[str, Any]] = {}
_specs: dict[tuple[str, str | None], dict[str, FieldSpec]] = {}
_failed: dict[tuple[str, str | None], str] = {}
_background: dict[tuple[str, str | None], subprocess.Popen[bytes] | None] = {}
_waiting = threading.Lock()  # one wait for the probe per process


def _installed() -> tuple[str, str | None] | None:
    version = transformers_version()
    return None if version is None else (version, transformers_location())


def _cached(key: tuple[str, str | None]) -> dict[str, Any] | None:
    with _lock:
        if key in _tables:
            return _tables[key]
    table = _read_table(cache_path(*key))
    if table is not None:
        with _lock:
            _tables[key] = table
    return table


def _installed_table(key: tuple[str, str | None]) -> dict[str, Any] | None:
    """The installed table, waiting for the probe when it is not cached yet (announced); None when the
    probe failed (training_args_failure says why)."""
    global _failure
    table = _cached(key)
    if table is not None or key in _failed:
        return table
    with _waiting:
        table = _cached(key)
        if table is not None or key in _failed:
            return table
        version, location = key
        _report(f"reading TrainingArguments from transformers {version} (once per install)…")
        try:
            table = fill_cache(version, location)
        except TrainingArgsProbeError as exc:
            with _lock:
                _failed[key] = _failure = f"TrainingArguments of transformers {version} could not be read: {exc}"
            return None
        with _lock:
            _tables[key] = table
        return table


def _recorded_failure(key: tuple[str, str | None]) -> str | None:
    """An earlier probe's failure for this install (in this process, or kept beside the cache)."""
    global _failure
    with _lock:
        if key in _failed:
            _failure = _failed[key]
            return _failure
    try:
        why = _last_line(failure_path(*key).read_text(encoding="utf-8"))
    except OSError:
        return None
    _failure = f"TrainingArguments of transformers {key[0]} could not be read: {why}" if why else None
    return _failure


def _fill_in_background(key: tuple[str, str | None]) -> None:
    """Start the probe detached (own session, niced, output discarded), once per process and
    install, where the cache folder can be written; it outlives this command."""
    with _lock:
        if key in _background:
            return
        _background[key] = None
    version, location = key
    folder = cache_path(version, location).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            return  # nothing could be kept: a miss asks the probe itself
        child = subprocess.Popen([sys.executable, "-m", FILL_MODULE, "--version", version, "--location", location or ""],
                                 env=_child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        return
    with _lock:
        _background[key] = child
    # reaped as soon as it ends: a long-lived app (or a test looking for zombies under it) keeps none
    threading.Thread(target=child.wait, name=f"reap {FILL_MODULE} {child.pid}", daemon=True).start()


def _specs_from_table(table: dict[str, Any]) -> dict[str, FieldSpec]:
    specs: dict[str, FieldSpec] = {}
    for name, raw in table["fields"].items():
        kinds = [k for k in raw.get("kinds") or ["any"] if k]
        accepts: tuple[str, ...]
        if "any" in kinds or not kinds:
            simple, accepts = "any", ()
        elif len(kinds) == 1:
            simple, accepts = kinds[0], (kinds[0],)
        else:
            simple, accepts = "any", tuple(kinds)
        if raw.get("optional") and simple != "any":
            simple = "optional-" + simple
        choices = raw.get("choices")
        specs[name] = FieldSpec(
            name=name,
            type=simple,
            default=raw.get("default"),
            choices=tuple(choices) if choices else None,
            accepts=accepts,
            help=raw.get("help") or "",
        )
    return specs


_SNAPSHOT_KEY = ("snapshot", None)
_snapshot_table: dict[str, Any] | None = None


def snapshot_table() -> dict[str, Any] | None:
    """The table shipped with tuitrain (one transformers version's, `SNAPSHOT`); None if it is missing or damaged."""
    global _snapshot_table
    if _snapshot_table is None:
        table = _read_table(SNAPSHOT)
        good = table is not None and isinstance(table.get("version"), str) and _specs_of(_SNAPSHOT_KEY, table) is not None
        _snapshot_table = table if good and table is not None else {}
    return _snapshot_table or None


def _specs_of(key: tuple[str, str | None], table: dict[str, Any]) -> dict[str, FieldSpec] | None:
    """The FieldSpecs of a table (made once per table); None when the table is not as expected."""
    global _failure
    with _lock:
        if key in _specs:
            return _specs[key]
    try:
        specs = _specs_from_table(table)
    except (KeyError, TypeError, AttributeError) as exc:
        if key != _SNAPSHOT_KEY:
            _failure = f"the TrainingArguments table of transformers {key[0]} is not as expected ({exc!r}): " \
                       f"delete {cache_path(*key)} to read it again"
        return None
    with _lock:
        _specs[key] = specs
    return specs


def _model_types_of(table: Mapping[str, Any]) -> frozenset[str] | None:
    names = table.get("model_types")
    if not isinstance(names, list):
        return None
    return frozenset(n for n in names if isinstance(n, str))


# --------------------------------------------------------------------------- the snapshot, standing in

class _Resolver:
    """The installed table of one install, asked for (waiting for the probe) at most once per process,
    and only when the snapshot cannot answer."""

    def __init__(self, key: tuple[str, str | None]) -> None:
        self.key = key
        self.done = False
        self.fields: dict[str, FieldSpec] | None = None
        self.names: frozenset[str] | None = None

    def resolve(self) -> bool:
        """True when the installed table is known (else the snapshot goes on answering)."""
        if not self.done:
            table = _installed_table(self.key)
            if table is not None:
                self.fields = _specs_of(self.key, table)
                self.names = _model_types_of(table)
            self.done = True
        return self.fields is not None


class _Choices(tuple[Any, ...]):
    """A field's choices as the snapshot lists them. A value it does not list is asked of the installed
    table, whose choices answer from then on (membership, listing, indexing)."""

    _field: str
    _resolver: _Resolver

    def __new__(cls, values: tuple[Any, ...], field: str, resolver: _Resolver) -> _Choices:
        self = super().__new__(cls, values)
        self._field, self._resolver = field, resolver
        return self

    def _installed(self) -> tuple[Any, ...] | None:
        """The installed field's choices once known; None before (or where it has none)."""
        fields = self._resolver.fields if self._resolver.done else None
        spec = fields.get(self._field) if fields is not None else None
        return spec.choices if spec is not None else None

    def __contains__(self, value: object) -> bool:
        if not self._resolver.done and tuple.__contains__(self, value):
            return True
        if not self._resolver.resolve():
            return tuple.__contains__(self, value)  # the installed table could not be read: the snapshot's word stands
        installed = self._installed()
        return installed is None or value in installed  # None: the installed field takes any value

    def __iter__(self) -> Iterator[Any]:
        installed = self._installed()
        return iter(installed) if installed is not None else tuple.__iter__(self)

    def __len__(self) -> int:
        installed = self._installed()
        return len(installed) if installed is not None else tuple.__len__(self)

    def __getitem__(self, index: Any) -> Any:
        installed = self._installed()
        return installed[index] if installed is not None else tuple.__getitem__(self, index)


class _SnapshotFields(dict[str, FieldSpec]):
    """The snapshot's fields standing in for the installed TrainingArguments of another version. A key
    it lacks, or the list of keys, is asked of the installed table; once that is known (asked here or
    by a choice), this dict's content becomes it. Its length (truthiness) does not ask."""

    def __init__(self, specs: Mapping[str, FieldSpec], resolver: _Resolver) -> None:
        super().__init__({name: replace(spec, choices=_Choices(spec.choices, name, resolver)) if spec.choices else spec
                          for name, spec in specs.items()})
        self._resolver = resolver
        self._exact = False

    def _sync(self, ask: bool) -> None:
        """Become the installed table once it is known; `ask`: ask for it now."""
        if self._exact:
            return
        if ask:
            self._resolver.resolve()
        if self._resolver.done:
            if self._resolver.fields is not None:
                dict.clear(self)
                dict.update(self, self._resolver.fields)
            self._exact = True

    def __contains__(self, key: object) -> bool:
        self._sync(ask=False)
        if not dict.__contains__(self, key):
            self._sync(ask=True)
        return dict.__contains__(self, key)

    def __getitem__(self, key: str) -> FieldSpec:
        self._sync(ask=not dict.__contains__(self, key))
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __len__(self) -> int:
        self._sync(ask=False)
        return dict.__len__(self)

    def __iter__(self) -> Iterator[str]:
        self._sync(ask=True)
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._sync(ask=True)
        return dict.keys(self)

    def items(self) -> Any:
        self._sync(ask=True)
        return dict.items(self)

    def values(self) -> Any:
        self._sync(ask=True)
        return dict.values(self)


class _SnapshotNames(frozenset[str]):
    """The snapshot's model types standing in for the installed ones: a name it lacks, or the list,
    is asked of the installed table. Its length does not ask."""

    _resolver: _Resolver

    def __new__(cls, names: frozenset[str], resolver: _Resolver) -> _SnapshotNames:
        self = super().__new__(cls, names)
        self._resolver = resolver
        return self

    def _installed(self, ask: bool) -> frozenset[str] | None:
        if ask:
            self._resolver.resolve()
        return self._resolver.names if self._resolver.done else None

    def __contains__(self, name: object) -> bool:
        installed = self._installed(ask=False)
        if installed is None and frozenset.__contains__(self, name):
            return True
        installed = self._installed(ask=True)
        return name in installed if installed is not None else frozenset.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        installed = self._installed(ask=True)
        return iter(installed) if installed is not None else frozenset.__iter__(self)

    def __len__(self) -> int:
        installed = self._installed(ask=False)
        return len(installed) if installed is not None else frozenset.__len__(self)


_resolvers: dict[tuple[str, str | None], _Resolver] = {}


def _answering(key: tuple[str, str | None]) -> tuple[dict[str, Any] | None, tuple[str, str | None], _Resolver | None]:
    """The table that answers for this install now, its key among the tables this process knows, and
    - when it is the snapshot of another version - the resolver that asks the installed table for
    what the snapshot cannot answer. A table of None: it could not be read (training_args_failure)."""
    table = _cached(key)
    if table is not None:
        return table, key, None
    failure = _recorded_failure(key)
    _fill_in_background(key)
    if failure is not None:
        return None, key, None
    snapshot = snapshot_table()
    if snapshot is None:  # no snapshot shipped (a damaged install): wait, as before
        return _installed_table(key), key, None
    if snapshot.get("version") == key[0]:
        return snapshot, _SNAPSHOT_KEY, None  # the same version: the snapshot is its table
    with _lock:
        resolver = _resolvers.setdefault(key, _Resolver(key))
    return snapshot, _SNAPSHOT_KEY, resolver


# --------------------------------------------------------------------------- what the profile checks ask

def training_args_fields() -> dict[str, FieldSpec] | None:
    """Name -> FieldSpec for the installed TrainingArguments (a copy); None when transformers is
    missing or its table could not be read (training_args_failure says why). Never waits for the
    probe unless the snapshot cannot answer (see the module's docstring)."""
    key = _installed()
    if key is None:
        return None
    table, table_key, resolver = _answering(key)
    specs = _specs_of(table_key, table) if table is not None else None
    if specs is None:
        return None
    return _SnapshotFields(specs, resolver) if resolver is not None else dict(specs)


def installed_model_types() -> frozenset[str] | None:
    """The model_type names the installed transformers knows (its CONFIG_MAPPING); None when unknown."""
    key = _installed()
    if key is None:
        return None
    table, _, resolver = _answering(key)
    names = _model_types_of(table) if table is not None else None
    return _SnapshotNames(names, resolver) if names is not None and resolver is not None else names


def training_args_failure() -> str | None:
    """Why the installed transformers' TrainingArguments could not be read, in one line (None:
    they were, or are being read, or transformers is not installed)."""
    key = _installed()
    if key is None:
        return None
    if _cached(key) is None:
        _recorded_failure(key)
    return _failure
