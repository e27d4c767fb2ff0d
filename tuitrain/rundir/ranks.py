"""The ranks' own records (ranks/rank-K.json): pid, host, node and exit code of each global rank."""

from __future__ import annotations

from typing import TypedDict

from tuitrain.rundir.json_shape import checked
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import Count, Pid, Rank, Time


class _RankNeeded(TypedDict):
    rank: Rank
    pid: Pid


class RankRecord(_RankNeeded, total=False):
    """ranks/rank-K.json as a rank writes it (`engine.rank_io.write_rank_record`); keys a newer version adds are kept."""

    local_rank: Rank
    node_rank: Rank  # torch's GROUP_RANK: a c10d rendezvous may number it otherwise than the machines
    machine_rank: Rank  # the machine whose keeper started it
    world_size: Count
    host: str
    started: Time | None  # its process's start time (pid + start time name a process)
    exit_code: int | None  # None while it runs
    time: Time
    output_dir: object  # script mode, rank 0: its Trainer's folder (a path: any text its file system holds)


def read_rank_records(paths: RunPaths) -> dict[int, RankRecord]:
    """Each rank's record, by rank. One being written or damaged (no pid, a rank that is text, another rank's record
    under this rank's name) is left out until it reads as one: its rank is not known yet, for the keeper and for
    every viewer, and no reader meets a bad value."""
    records: dict[int, RankRecord] = {}
    if not paths.ranks.is_dir():
        return records
    for file in paths.ranks.glob("rank-*.json"):
        named = file.name.removeprefix("rank-").removesuffix(".json")
        if not named.isdecimal():
            continue
        try:
            value, why = checked(file.read_bytes(), RankRecord)
        except OSError:
            continue
        if why is None and value["rank"] == int(named):
            records[value["rank"]] = value
    return records
