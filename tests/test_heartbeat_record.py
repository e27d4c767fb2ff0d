"""What a rank's heartbeat says (issue 26): `beat` only notes the moment on the training thread; the record the hang
judge reads (tuitrain.rundir.heartbeat.beat_from) is made from those notes when it is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tuitrain.atomic import read_json
from tuitrain.engine import rank_io
from tuitrain.engine.rank_io import Heartbeat
from tuitrain.rundir.heartbeat import Beat, beat_from
from tuitrain.rundir.layout import PHASE_BETWEEN, PHASE_EVALUATING, PHASE_STARTING, PHASE_STEP, RunPaths


def test_the_record_says_step_phase_since_and_the_step_between_and_slow_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(rank_io.time, "time", lambda: clock[0])
    heartbeat = Heartbeat(RunPaths(tmp_path), 3, interval=3600.0)  # written here by flush only
    assert heartbeat.record() is None
    for at, phase, step in [(0.0, PHASE_STARTING, None), (10.0, PHASE_STEP, 1), (11.0, PHASE_BETWEEN, 1),
                            (11.5, PHASE_STEP, 2), (13.0, PHASE_BETWEEN, 2), (13.25, PHASE_STEP, 3),
                            (15.0, PHASE_BETWEEN, 3), (15.0, PHASE_EVALUATING, 3), (45.0, PHASE_BETWEEN, 3),
                            (45.75, PHASE_STEP, 4)]:
        clock[0] = at
        heartbeat.beat(phase, step)
    heartbeat.flush()
    said = beat_from(read_json(RunPaths(tmp_path).heartbeat(3)))
    # the time across the evaluation is no step time
    assert said == Beat(rank=3, phase=PHASE_STEP, time=45.75, since=45.75, step=4, step_seconds=2.0,
                        between_seconds=0.5, slow_seconds={PHASE_STARTING: 10.0, PHASE_EVALUATING: 30.0},
                        pid=os.getpid())
