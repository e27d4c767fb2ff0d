"""The runs root: list every run, find one by id (or a unique prefix), suggest the nearest."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from tuitrain.runs.layout import RunPaths
from tuitrain.runs.record import RunRecordError, read_record


class RunNotFound(Exception):
    pass


def list_runs(root: Path) -> list[tuple[RunPaths, dict[str, Any]]]:
    if not root.is_dir():
        return []
    runs = []
    for child in root.iterdir():
        if (child / "run.json").is_file():
            paths = RunPaths(child)
            try:
                runs.append((paths, read_record(paths)))
            except RunRecordError:
                continue
    return sorted(runs, key=lambda item: item[1].get("created") or 0)


def find_run(root: Path, ref: str) -> RunPaths:
    """`ref` is a run id, a unique prefix of one, `latest`, or a path to a run directory."""
    as_path = Path(ref)
    if (as_path / "run.json").is_file():
        return RunPaths(as_path.resolve())
    runs = list_runs(root)
    if ref == "latest" and runs:
        return runs[-1][0]
    ids = [paths.id for paths, _ in runs]
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
