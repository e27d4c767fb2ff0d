"""`tuitrain stacks RUN --json`'s form, written and read in one place: the CLI prints it, and the app reads it back
from another workstation's box (`tui.screens.stacks.take_there`), so the two cannot drift."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.view.stacks import Frame, RankStacks, Thread


def stacks_json(paths: RunPaths, taken: Mapping[int, RankStacks], summary: Mapping[str, Any]) -> dict[str, Any]:
    """The run's digest and each rank's stacks (`taken`, with `summary` from runs.view.stacks.gather) as plain data."""
    return {"run": paths.id, "digest": summary["lines"],
            "ranks": {str(r): {"pid": s.pid, "how": s.how, "state": s.state, "where": summary["ranks"][str(r)],
                               "file": str(paths.rank_stacks(r)) if s.how else None,
                               "threads": [{"name": t.name, "current": t.current,
                                            "frames": [[f.file, f.line, f.func] for f in t.frames]}
                                           for t in s.threads]}
                      for r, s in taken.items()}}


def ranks_from_json(ranks: Mapping[str, Any]) -> tuple[dict[int, RankStacks], dict[int, str]]:
    """Each rank's stacks and where it is, from the `ranks` of `stacks_json` (which thread took the signal too: it
    picks the main thread when several could be)."""
    taken: dict[int, RankStacks] = {}
    where: dict[int, str] = {}
    for key, entry in sorted(ranks.items(), key=lambda item: int(item[0])):
        threads = tuple(Thread(str(t["name"]), tuple(Frame(str(f[0]), int(f[1]), str(f[2])) for f in t["frames"]),
                               bool(t.get("current")))
                        for t in entry.get("threads") or [])
        pid = entry.get("pid")
        taken[int(key)] = RankStacks(int(key), int(pid) if pid is not None else None, str(entry.get("how") or ""),
                                     state=entry.get("state"), threads=threads)
        where[int(key)] = str(entry.get("where") or "")
    return taken, where
