"""Moving a queued run to the front of its user's runs in this machine's queue (`tuitrain queue move RUN --top`).
An entry's place is its file name (`runs.queue.entries`: names sort in queue order), so a move renames the user's own
entries, under the queue's lock. Only the user who queued it may (in the sticky queue folder only they can rename
their entries, as only they can cancel them: `runs.queue.cancel.cancel_refusal`); and it never jumps another
user's run on a shared machine."""

from __future__ import annotations

import os
from pathlib import Path

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import read_record
from tuitrain.rundir.run import Run
from tuitrain.runs.control import ControlError
from tuitrain.runs.queue.cancel import cancel_refusal
from tuitrain.runs.queue.entries import Entry, entry_of, folder_of, live_entries, locked


def slot(entry: Entry) -> str:
    """The part of an entry's name that gives its place ("<queued ns>")."""
    return entry.name.split("-", 1)[0]


def renamed_to_top(mine: Entry, waiting: list[Entry]) -> dict[str, str]:
    """old name → new name, for a move of `mine` to the front of its user's own waiting entries: it takes the place of
    the first of them, and each of them the next one's, up to `mine`'s, as Slurm's `scontrol top` takes priority
    from the same user's other jobs. Other users' entries keep their places: a move never jumps them."""
    own = [e for e in waiting[:waiting.index(mine) + 1] if e.uid == mine.uid]
    places = [slot(e) for e in own]
    moved = [mine, *own[:-1]]
    renames = {e.name: f"{place}-{e.uid}-{e.run}.json" for e, place in zip(moved, places, strict=True)}
    return {old: new for old, new in renames.items() if old != new}


def move_to_top(paths: RunPaths, folder: Path | None = None) -> tuple[int, int]:
    """Put the run first among its user's waiting entries of the queue: (its place before, its place after; 1 = first)."""
    record = read_record(paths)
    refusal = cancel_refusal(paths, record, verb="move")
    if refusal:
        raise ControlError(refusal)
    folder = folder or folder_of(Run(paths, record))
    with locked(folder):
        waiting = [e for e in live_entries(folder) if e.state == "waiting"]
        mine = entry_of(paths.root, waiting)
        if mine is None:
            raise ControlError(f"run {paths.id} is not in the queue folder {folder} (its supervisor is gone, or it "
                               "is starting now)")
        # No new name is an old one (each pairs another entry's place with its own run), so a move cut short
        # leaves every entry there once, in some order of the user's own runs.
        for old, new in renamed_to_top(mine, waiting).items():
            os.rename(folder / old, folder / new)
        before = waiting.index(mine) + 1
        after = next(i for i, e in enumerate(waiting, 1) if e.uid == mine.uid)
    return before, after
