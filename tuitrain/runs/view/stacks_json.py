"""`tuitrain stacks RUN --json`'s form, written and read in one place: the CLI prints it, and the app reads it back
from another workstation's box (`tui.screens.stacks.take_there`), so the two cannot drift."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from tuitrain.rundir.json_shape import answered
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RankKey
from tuitrain.runs.view.stacks import Digest, Frame, RankStacks, Thread


class _ThreadNeeded(TypedDict):
    name: str
    frames: list[tuple[str, int, str]]  # [file, line, function], the innermost first


class ThreadJson(_ThreadNeeded, total=False):
    current: bool  # it took the signal


class RankJson(TypedDict, total=False):
    pid: int | None
    how: str
    state: str | None
    where: str
    file: str | None  # where its stacks are kept on the box that took them
    threads: list[ThreadJson]


class StacksJson(TypedDict):
    run: str
    digest: list[str]
    ranks: dict[RankKey, RankJson]


def read_stacks_json(data: object) -> StacksJson:
    """`stacks_json`'s form as another box printed it, checked; ValueError naming the key where it does not fit."""
    answer: StacksJson
    answer, why = answered(data, StacksJson)  # a file's or a function's name may hold bytes that are not UTF-8
    if why is not None:
        raise ValueError(why)
    return answer


def stacks_json(paths: RunPaths, taken: Mapping[int, RankStacks], summary: Digest) -> StacksJson:
    """The run's digest and each rank's stacks (`taken`, with `summary` from runs.view.stacks.gather) as plain data."""
    return {"run": paths.id, "digest": summary["lines"],
            "ranks": {str(r): {"pid": s.pid, "how": s.how, "state": s.state, "where": summary["ranks"][str(r)],
                               "file": str(paths.rank_stacks(r)) if s.how else None,
                               "threads": [{"name": t.name, "current": t.current,
                                            "frames": [(f.file, f.line, f.func) for f in t.frames]}
                                           for t in s.threads]}
                      for r, s in taken.items()}}


def ranks_from_json(ranks: Mapping[str, RankJson]) -> tuple[dict[int, RankStacks], dict[int, str]]:
    """Each rank's stacks and where it is, from the checked `ranks` of `stacks_json` (which thread took the signal
    too: it picks the main thread when several could be)."""
    taken: dict[int, RankStacks] = {}
    where: dict[int, str] = {}
    for key, entry in sorted(ranks.items(), key=lambda item: int(item[0])):
        threads = tuple(Thread(t["name"], tuple(Frame(*f) for f in t["frames"]), t.get("current", False))
                        for t in entry.get("threads", ()))
        taken[int(key)] = RankStacks(int(key), entry.get("pid"), entry.get("how", ""), state=entry.get("state"),
                                     threads=threads)
        where[int(key)] = entry.get("where", "")
    return taken, where
