"""The ranks' own records (ranks/rank-K.json): pid, host, node and exit code of each global rank."""

from __future__ import annotations

from typing import Any

from tuitrain.atomic import read_json
from tuitrain.rundir.layout import RunPaths


def read_rank_records(paths: RunPaths) -> dict[int, dict[str, Any]]:
    records: dict[int, dict[str, Any]] = {}
    if not paths.ranks.is_dir():
        return records
    for file in paths.ranks.glob("rank-*.json"):
        try:
            data = read_json(file)
        except (OSError, ValueError):
            continue  # being written: atomic renames make this rare; next poll reads it
        records[int(data["rank"])] = data
    return records
