"""The runs root: list every run, find one by id (or a unique prefix), suggest the nearest.

A run directory whose run.json cannot be read (empty, corrupt, another user's) is still a run:
it is listed as unreadable with the reason, and asking for it says what is wrong with it."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

from tuitrain.errors import TuitrainError
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RecordDamaged, RunRecord, RunRecordError, parse_record
from tuitrain.rundir.run import Run
from tuitrain.runs.run_owner import user_name


class RunNotFound(TuitrainError):
    pass


class RunsRootError(TuitrainError):
    """A runs root that is not a folder, or that cannot be listed."""


def permission_message(path: Path, doing: str = "read") -> str:
    """One line for a permission error: the path, whose it is, and what would fix it.
    `doing`: "read", "list" or "write to"."""
    try:
        st = os.stat(path)
        whose = f" (owner {user_name(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):o})"
    except OSError:
        whose = ""
    if doing in ("read", "list"):
        fix = f"ask its owner to open it to others (chmod a+rX {path}), or use a runs root of your own with --runs-dir DIR"
    else:
        fix = "ask its owner for write access, or use a runs root of your own with --runs-dir DIR"
    return f"cannot {doing} {path}: permission denied{whose}; {fix}"


def read_run(paths: RunPaths) -> Run:
    """The run, its record checked or why it cannot be used (never raises for a file problem)."""
    try:
        data = paths.record.read_bytes()
    except FileNotFoundError:
        return Run(paths, None, "no run.json", f"{paths.root}: not a run directory (no run.json)")
    except PermissionError:
        return Run(paths, None, "permission denied", permission_message(paths.record))
    except OSError as exc:
        why = exc.strerror or str(exc)
        return Run(paths, None, why, f"cannot read {paths.record}: {why}")
    try:
        return Run(paths, parse_record(paths, data))
    except RecordDamaged as exc:
        return Run(paths, None, exc.reason, str(exc))


def load_record(paths: RunPaths) -> RunRecord:
    """run.json, checked: a RunRecordError says in one line why it cannot be used."""
    entry = read_run(paths)
    if entry.record is None:
        raise RunRecordError(entry.message)
    return entry.record


def _is_run_dir(child: os.DirEntry) -> bool:
    """A folder with a run.json (one we may not be allowed to look into counts too)."""
    try:
        if not child.is_dir(follow_symlinks=False):
            return False
        os.stat(os.path.join(child.path, "run.json"))
        return True
    except PermissionError:
        return True
    except OSError:
        return False


RUNS_ROOT_FIX = "give a folder with --runs-dir DIR or TUITRAIN_RUNS_DIR"


def runs_root_problem(root: Path) -> str | None:
    """Why `root` cannot be a runs root (a file, or under one), with the fix; None when it can."""
    shape = runs_root_shape(root)
    return f"{shape}; {RUNS_ROOT_FIX}" if shape else None


def runs_root_shape(root: Path) -> str | None:
    """`root` is a file, or under one (what no reader or writer can use); None when it can be a folder."""
    for folder in [root, *root.parents]:
        try:
            st = os.stat(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None  # nothing more to say here; using it will
        if stat.S_ISDIR(st.st_mode):
            return None
        return f"the runs root {root} is a file" if folder == root else f"the runs root {root} is under a file ({folder})"
    return None


def scan_runs(root: Path) -> list[Run]:
    """Every run directory under `root`, oldest first; unreadable ones included."""
    problem = runs_root_problem(root)
    if problem:
        raise RunsRootError(problem)
    try:
        children = [c for c in os.scandir(root) if _is_run_dir(c)]
    except FileNotFoundError:
        return []
    except PermissionError:
        raise RunsRootError(permission_message(root, "list")) from None
    except OSError as exc:
        raise RunsRootError(f"cannot list the runs root {root}: {exc.strerror or exc}") from None
    entries = [read_run(RunPaths(Path(c.path))) for c in children]
    return sorted(entries, key=lambda e: (e.created, e.paths.id))


def list_runs(root: Path) -> list[tuple[RunPaths, RunRecord]]:
    """The runs whose record can be read, oldest first (none when the root cannot be listed)."""
    try:
        entries = scan_runs(root)
    except RunsRootError:
        return []
    return [(e.paths, e.record) for e in entries if e.record is not None]


def find_run(root: Path, ref: str) -> RunPaths:
    """`ref` is a run id, a unique prefix of one, `latest`, or a path to a run directory."""
    if not ref.strip():
        raise RunNotFound("give a run id, a unique prefix of one, or `latest`; `tuitrain runs` lists them")
    as_path = Path(ref)
    if RunPaths(as_path).record.is_file():
        return RunPaths(as_path.resolve())
    entries = scan_runs(root)
    readable = [e for e in entries if e.record is not None]
    if ref == "latest" and readable:
        return readable[-1].paths
    ids = [e.paths.id for e in entries]
    if ref in ids:
        return RunPaths(root / ref)
    prefixed = [i for i in ids if i.startswith(ref)]
    if len(prefixed) == 1:
        return RunPaths(root / prefixed[0])
    if len(prefixed) > 1:
        raise RunNotFound(f"run {ref!r} is ambiguous under {root}: {', '.join(prefixed[:5])}")
    near = difflib.get_close_matches(ref, ids, n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]!r}?" if near else ("; `tuitrain runs` lists them" if ids else f"; there are no runs under {root}")
    raise RunNotFound(f"no run {ref!r} under {root}{hint}")
