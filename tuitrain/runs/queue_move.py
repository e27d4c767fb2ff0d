"""Moving a queued run to the front of this machine's queue (`tuitrain queue move RUN --top`). An entry's place
is its file name (`runs.queue`: names sort in queue order), so a move renames it, under the queue's lock, to sort
before every other waiting entry. Only the user who queued it may (in the sticky queue folder only they can
rename it, as only they can cancel it: `runs.queue_cancel.cancel_refusal`)."""

from __future__ import annotations

import os
from pathlib import Path

from tuitrain.runs.control import ControlError
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.queue import Entry, entry_of, live_entries, locked, queue_dir
from tuitrain.runs.queue_cancel import cancel_refusal
from tuitrain.runs.record import read_record


def top_name(entry: Entry, ahead: list[Entry]) -> str:
    """A name for `entry` that sorts before every entry in `ahead` (each "<queued ns>-<uid>-<run>.json")."""
    first = min(int(e.name.split("-", 1)[0]) for e in ahead)
    return f"{max(first - 1, 0):020d}-{entry.uid}-{entry.run}.json"


def move_to_top(paths: RunPaths, folder: Path | None = None) -> int:
    """Put the run first among the queue's waiting entries; its place before the move (1 = it was first)."""
    record = read_record(paths)
    refusal = cancel_refusal(paths, record, os.getuid(), verb="move")
    if refusal:
        raise ControlError(refusal)
    folder = folder or Path((record.get("queue") or {}).get("dir") or queue_dir())
    with locked(folder):
        waiting = [e for e in live_entries(folder) if e.state == "waiting"]
        mine = entry_of(paths.root, waiting)
        if mine is None:
            raise ControlError(f"run {paths.id} is not in the queue folder {folder} (its supervisor is gone, or it "
                               "is starting now)")
        place = waiting.index(mine) + 1
        ahead = waiting[:place - 1]
        if ahead:
            os.rename(folder / mine.name, folder / top_name(mine, ahead))
    return place
