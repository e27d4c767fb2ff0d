"""What a rank's heartbeat says (issue 26): `beat` only notes the moment on the training thread; the record the hang
judge reads (tuitrain.rundir.heartbeat.beat_from) is made from those notes when it is written."""

from __future__ import annotations

import os
import threading
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
                        pid=os.getpid(), waited_seconds=0.75, stepped_seconds=4.0)


def test_a_slow_write_of_an_older_beat_never_lands_after_the_last_words(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread may be inside its write of an older beat when the rank flushes its last one (a loaded
    machine): the file must end with the last one, as the hang judge and `tuitrain status` read it."""
    heartbeat = Heartbeat(RunPaths(tmp_path), 0, interval=3600.0)  # the writer thread sleeps; _write is called here
    real_write, writing, release = rank_io.write_json_atomic, threading.Event(), threading.Event()

    def slow_first_write(path: Path, record: dict[str, object]) -> None:
        if record["phase"] == PHASE_STEP:
            writing.set()
            assert release.wait(60)
        real_write(path, record)

    monkeypatch.setattr(rank_io, "write_json_atomic", slow_first_write)
    heartbeat.beat(PHASE_STEP, 1)
    older = threading.Thread(target=heartbeat._write)
    older.start()
    assert writing.wait(60)
    heartbeat.beat(PHASE_BETWEEN, 1)
    last = threading.Thread(target=heartbeat.flush)
    last.start()
    release.set()
    older.join(60)
    last.join(60)
    assert beat_from(read_json(RunPaths(tmp_path).heartbeat(0))).phase == PHASE_BETWEEN
