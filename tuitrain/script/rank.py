"""This rank's part in a script-mode run: which run, which rank, and what the script has used of
tuitrain so far (a Trainer, the report API). Set by `boot`; None outside a run."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.rundir.layout import RunPaths


@dataclass
class RankState:
    paths: RunPaths
    rank: int
    world_size: int
    run_id: str = ""  # the run's id (on another machine the folder is machine-K, the id is in run.json)
    trainer_seen: bool = False  # tuitrain's callbacks were added to a Trainer
    reported: bool = False  # the script called tuitrain.report or tuitrain.saved
    began: bool = False  # train_begin written (report API)
    stop_requested: bool = False  # tuitrain stop reached this rank: a SIGTERM then ends the script cleanly
    stop_seen: bool = False  # the stop request's control event is written
    exit_code: int = 0
    output_dir: str | None = None
    _events: Any = field(default=None, repr=False)

    def event_log(self) -> Any:
        """events.jsonl, written by rank 0 only (None elsewhere)."""
        if self.rank != 0:
            return None
        if self._events is None:
            from tuitrain.engine.events import EventLog

            self._events = EventLog(self.paths.events)
        return self._events

    def record_fields(self) -> dict[str, Any]:
        """What this rank's record adds to the engine's (ranks/rank-K.json)."""
        return {"output_dir": self.output_dir} if self.output_dir else {}

    def note_output_dir(self, folder: Path) -> None:
        """Rank 0 names where the script's checkpoints go, as its Trainer (or tuitrain.saved) says: in its rank
        record, which the supervisor reads (and a multi-machine run mirrors home) into run.json."""
        text = str(folder)
        if self.rank != 0 or text == self.output_dir:
            return
        from tuitrain.engine.rank_io import write_rank_record

        self.output_dir = text
        try:
            write_rank_record(self.paths, self.rank, None, **self.record_fields())
        except OSError as exc:
            print(f"[tuitrain] could not record the output folder {text}: {exc}", flush=True)


_current: RankState | None = None


def current() -> RankState | None:
    return _current


def start(run_dir: Path, rank: int) -> RankState:
    global _current
    paths = RunPaths(run_dir)
    _current = RankState(paths, rank, int(os.environ.get("WORLD_SIZE", "1")), run_id=run_id_of(paths))
    return _current


def run_id_of(paths: RunPaths) -> str:
    from tuitrain.atomic import read_json

    try:
        return str(read_json(paths.record)["id"])
    except (OSError, ValueError, KeyError, TypeError):
        return paths.id
