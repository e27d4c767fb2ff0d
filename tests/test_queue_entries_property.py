"""Queue entries as the world leaves them (another version's, an editor's, a write cut short by a full disk): generated
entries — every field of a real one dropped, or given a value of any JSON type, or the file's text cut anywhere — fed
to every reader of the queue folder (`scan_entries`, `live_entries`, `damaged_entries`, `queue_rows`, and
`tuitrain queue` with and without --json). None raises: an entry is read whole, or named damaged."""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from tuitrain.cli import main
from tuitrain.runs.queue.entries import damaged_entries, live_entries, locked, scan_entries
from tuitrain.runs.queue.look import queue_rows

set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "tuitrain-hypothesis")
EXAMPLES = int(os.environ.get("TUITRAIN_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)


def real_entry(run_dir: Path) -> dict[str, Any]:
    """An entry as `runs.queue.entries.enqueue` writes it, of a run whose supervisor is this test (alive)."""
    import psutil

    return {"run": run_dir.name, "run_dir": str(run_dir), "uid": os.getuid(), "user": "me", "queued": time.time(),
            "gpus": [0], "after": [{"run": "before", "run_dir": str(run_dir.parent / "before"), "ok": True}],
            "count": 0, "min_free": None, "state": "waiting",
            "supervisor": {"pid": os.getpid(), "started": psutil.Process().create_time()}, "started": None}


@st.composite
def entry_texts(draw: st.DrawFn, run_dir: Path) -> str:
    entry = real_entry(run_dir)
    for key in draw(st.lists(st.sampled_from(sorted(entry)), max_size=4, unique=True)):
        if draw(st.booleans()):
            del entry[key]
        else:
            entry[key] = draw(JSON)
    text = json.dumps(entry)
    cut = draw(st.integers(0, 4)) == 0, draw(st.floats(0, 1))  # a fifth cut short, anywhere
    return text[:int(len(text) * cut[1])] if cut[0] else text


def read_everything(folder: Path) -> None:
    scan_entries(folder)
    with locked(folder):
        live_entries(folder)
    damaged_entries(folder)
    queue_rows()
    for argv in (["queue"], ["queue", "--json"]):
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            assert main(argv) == 0


@FUZZ
@given(data=st.data())
def test_no_generated_entry_makes_a_reader_raise(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "queue"
        run_dir = Path(tmp) / "runs" / "20261128-000000-demo"
        run_dir.mkdir(parents=True)
        monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(folder))
        folder.mkdir()
        for n in range(data.draw(st.integers(1, 3))):
            (folder / f"{time.time_ns() + n:020d}-{os.getuid()}-{run_dir.name}-{n}.json").write_text(
                data.draw(entry_texts(run_dir)))
        read_everything(folder)


DROP = object()  # a key the entry lacks


@pytest.mark.parametrize(("change", "said"), [
    ({"supervisor": {"pid": -1, "started": 1.0}}, "supervisor.pid: -1 is not a process id"),
    ({"supervisor": {"pid": "12", "started": 1.0}}, "supervisor.pid: '12' is not a whole number"),
    ({"supervisor": {"pid": 2**70, "started": 1.0}}, "supervisor.pid: 1180591620717411303424 is not a process id"),
    ({"gpus": ["a"]}, "gpus[0]: 'a' is not a whole number"), ({"gpus": [-1]}, "gpus[0]: -1 is not a GPU index"),
    ({"gpus": "0,1"}, "gpus: '0,1' is not a list"), ({"after": [1]}, "after[0]: 1 is not an object"),
    ({"queued": "1795000000"}, "queued: '1795000000' is not a number"), ({"uid": -3}, "uid: -3 is not a user id"),
    ({"state": "running"}, "state: 'running' is not one of waiting, started"), ({"count": 1e300}, "count: 1e+300 is not a count"),
    ({"min_free": 2**70}, "min_free: 1180591620717411303424 is not a size in bytes"), ({"run_dir": DROP}, "no run_dir"),
])
def test_the_fields_users_have_seen_damaged_are_named_not_trusted(change: dict[str, Any], said: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry that does not check is named damaged with its reason, in one line; the entry beside it is read as ever."""
    folder = tmp_path / "queue"
    folder.mkdir()
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(folder))
    run_dir, other = tmp_path / "runs" / "20261128-000000-demo", tmp_path / "runs" / "20261128-000100-other"
    for each in (run_dir, other):
        each.mkdir(parents=True)
    (folder / f"{time.time_ns():020d}-{os.getuid()}-{other.name}.json").write_text(json.dumps(real_entry(other)))
    bad = {k: v for k, v in {**real_entry(run_dir), **change}.items() if v is not DROP}
    (folder / f"{time.time_ns():020d}-{os.getuid()}-{run_dir.name}.json").write_text(json.dumps(bad))
    read_everything(folder)
    assert [(d.run, d.reason) for d in damaged_entries(folder)] == [(run_dir.name, said)]
    assert [e.run for e in scan_entries(folder)[0]] == [other.name]
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["queue"]) == 0
    assert other.name in out.getvalue(), out.getvalue()
    assert [line for line in out.getvalue().splitlines() if "damaged entry" in line][0].split("): ")[1].startswith(said + "; ")
