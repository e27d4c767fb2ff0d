"""ranks/rank-K.json as it may be found: written by a rank of this version or an older one, mirrored from another
machine, or damaged. `rundir.ranks.read_rank_records` checks each where it reads it; one that does not check is left
out (its rank is not known yet), so the keeper and the viewers never meet a bad value. (Before, a record without a
pid, or with a rank that was text, raised KeyError or ValueError in the keeper's look at its ranks, at the end of a
run, and in the monitor of a run on several machines.)"""

from __future__ import annotations

import json
import os
import time
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_run_record_property import FUZZ, JSON, records
from tuitrain.rundir.json_shape import problem
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.ranks import RankRecord, read_rank_records
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.runs.view.hang import live_beats, process_names
from tuitrain.tui.machines import run_machines

GOOD = {"rank": 0, "local_rank": 0, "node_rank": 0, "machine_rank": 0, "world_size": 2, "host": "box",
        "pid": os.getpid(), "started": time.time() - 60, "exit_code": None, "time": time.time()}
RECORD: RunRecord = {"id": "r1", "status": "running", "num_processes": 2}
MACHINES: list[MachineEntry] = [
    {"host": host, "machine_rank": index, "num_processes": 1, "env": {}, "accelerator": None}
    for index, host in enumerate(("box", "node1"))]


def _run(tmp: Path, rank0: bytes) -> RunPaths:
    paths = RunPaths(tmp)
    paths.ranks.mkdir(parents=True)
    paths.rank_record(0).write_bytes(rank0)
    paths.rank_record(1).write_text(json.dumps({**GOOD, "rank": 1, "machine_rank": 1, "host": "node1"}))
    return paths


@pytest.mark.parametrize("text", ["{}", '{"rank": 0}', '{"rank": "0", "pid": 5}', '{"rank": 0, "pid": 5, "exit_code": "1"}',
                                  "[]", '{"rank": 0, "pid": 5', '{"rank": 1, "pid": 5}', '{"rank": 0, "pid": 0}'])
def test_a_damaged_rank_record_is_left_out_and_the_others_read(tmp_path: Path, text: str) -> None:
    paths = _run(tmp_path, text.encode())
    assert sorted(read_rank_records(paths)) == [1]
    assert process_names(paths, RECORD) == {1: f"pid {os.getpid()} on node1"}


def test_a_newer_versions_key_and_an_older_versions_missing_ones_are_read(tmp_path: Path) -> None:
    paths = _run(tmp_path, json.dumps({"rank": 0, "pid": 7, "gpu_uuid": "GPU-1"}).encode())  # no machine_rank, host
    assert read_rank_records(paths)[0] == {"rank": 0, "pid": 7, "gpu_uuid": "GPU-1"}


@FUZZ
@given(rank0=records(GOOD, typing.get_type_hints(RankRecord, include_extras=True)) | JSON,
       raw=st.binary(max_size=40), broken=st.booleans())
def test_a_rank_record_as_it_is_found_is_read_as_one_or_left_out(tmp_path_factory: Any, rank0: Any, raw: bytes,
                                                                 broken: bool) -> None:
    paths = _run(tmp_path_factory.mktemp("run"), raw if broken else json.dumps(rank0).encode())
    found = read_rank_records(paths)
    assert 1 in found and all(problem(rec, RankRecord) is None and rec["rank"] == r for r, rec in found.items())
    process_names(paths, RECORD)
    live_beats(paths, RECORD)
    assert [m.ranks for m in run_machines(MACHINES, RECORD, found, hostname="box")] in ([(0,), (1,)], [(), (0, 1)])
