"""Mirroring a node's files home (tuitrain/runs/keeper/mirror.py) and the wire between the two (tuitrain/remote/wire.py):
what a damaged or hostile message, a half-written line and bytes that are no UTF-8 do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuitrain.remote.wire import CHUNK, WireError, decode, encode, encode_bytes
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.keeper.mirror import MirrorError, NodeFiles, apply


def node_and_home(tmp_path: Path) -> tuple[RunPaths, RunPaths]:
    node, home = RunPaths(tmp_path / "node"), RunPaths(tmp_path / "home")
    for paths in (node, home):
        paths.logs.mkdir(parents=True)
    return node, home


def ship(files: NodeFiles, home: RunPaths) -> int:
    messages = files.changes()
    for line in messages:
        apply(home, decode(line))
    return len(messages)


def test_what_a_node_writes_arrives_home_byte_for_byte(tmp_path: Path) -> None:
    node, home = node_and_home(tmp_path)
    files = NodeFiles(node, machine_rank=1)
    raw = b"step 1\r\x1b[32mgreen\x1b[0m \xff\xfe not utf-8\n"
    node.rank_log(3).write_bytes(raw)
    node.launcher_log.write_bytes(b"[tuitrain supervisor] starting\n")
    ship(files, home)
    assert home.rank_log(3).read_bytes() == raw
    assert (home.logs / "machine-1.log").read_bytes() == b"[tuitrain supervisor] starting\n"
    with open(node.rank_log(3), "ab") as log:
        log.write(b"step 2\n")
    ship(files, home)
    assert home.rank_log(3).read_bytes() == raw + b"step 2\n"
    assert ship(files, home) == 0  # nothing new, nothing sent


def test_a_big_log_travels_in_bounded_chunks(tmp_path: Path) -> None:
    node, home = node_and_home(tmp_path)
    files = NodeFiles(node, 0)
    data = bytes(range(256)) * (3 * CHUNK // 256 + 7)
    node.rank_log(0).write_bytes(data)
    messages = files.changes()
    assert len(messages) >= 3 and all(len(m) < CHUNK * 2 for m in messages)
    for line in messages:
        apply(home, decode(line))
    assert home.rank_log(0).read_bytes() == data


def test_events_travel_as_whole_lines_only(tmp_path: Path) -> None:
    """Several machines append to the one events.jsonl at home: half a line would corrupt another's."""
    node, home = node_and_home(tmp_path)
    files = NodeFiles(node, 1)
    node.events.write_bytes(b'{"event": "log", "step": 1}\n{"event": "lo')
    ship(files, home)
    assert home.events.read_bytes() == b'{"event": "log", "step": 1}\n'
    with open(node.events, "ab") as events:
        events.write(b'g", "step": 2}\n')
    ship(files, home)
    assert home.events.read_bytes() == b'{"event": "log", "step": 1}\n{"event": "log", "step": 2}\n'


def test_a_rank_record_is_replaced_whole_when_it_changes(tmp_path: Path) -> None:
    node, home = node_and_home(tmp_path)
    files = NodeFiles(node, 0)
    node.ranks.mkdir()
    node.rank_record(2).write_text('{"rank": 2, "exit_code": null}')
    ship(files, home)
    assert home.rank_record(2).read_text() == '{"rank": 2, "exit_code": null}'
    node.rank_record(2).write_text('{"rank": 2, "exit_code": 0}\n')
    ship(files, home)
    assert home.rank_record(2).read_text() == '{"rank": 2, "exit_code": 0}\n'


def test_heartbeats_and_stacks_come_home_whole_so_home_judges_every_machines_ranks(tmp_path: Path) -> None:
    """Issue 26: hung? and the stacks' digest name the ranks of every machine (runs.view.hang reads heartbeats/ at home)."""
    from tuitrain.rundir.heartbeat import read_beats

    node, home = node_and_home(tmp_path)
    files = NodeFiles(node, 1)
    node.heartbeats.mkdir()
    node.stacks.mkdir()
    node.heartbeat(3).write_text('{"rank": 3, "phase": "step", "time": 100.0, "step": 5}')
    node.rank_stacks(3).write_text('Thread 0x1 (most recent call first):\n  File "train.py", line 8 in main\n')
    ship(files, home)
    assert read_beats(home)[3].step == 5
    assert home.rank_stacks(3).read_text().endswith('line 8 in main\n')
    node.heartbeat(3).write_text('{"rank": 3, "phase": "step", "time": 101.0, "step": 6}')
    ship(files, home)
    assert read_beats(home)[3].step == 6
    assert ship(files, home) == 0


def test_a_rank_stopped_on_a_node_is_known_stopped_at_home(tmp_path: Path) -> None:
    """Home cannot see another machine's processes: the node sends which of its ranks are stopped (SIGSTOP), and
    runs.view.hang at home says so of that rank (and `stop` names it, its pid and its host)."""
    import json
    import signal
    import subprocess
    import sys
    import time

    from conftest import wait_for
    from tuitrain.rundir.process_tree import identity
    from tuitrain.runs.view.hang import run_hang, stop_waits_for

    node, home = node_and_home(tmp_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        node.record.write_text(json.dumps({"status": "running", "processes": {"rank 3": identity(sleeper.pid)}}))
        home.record.write_text(json.dumps({"status": "running", "machines": [{"host": "b"}, {"host": "c"}]}))
        node.ranks.mkdir()
        node.rank_record(3).write_text(json.dumps({"rank": 3, "pid": sleeper.pid, "host": "c", "exit_code": None}))
        node.heartbeats.mkdir()
        node.heartbeat(3).write_text(json.dumps({"rank": 3, "pid": sleeper.pid, "phase": "step", "step": 5,
                                                 "time": time.time(), "step_seconds": 1.0}))
        files = NodeFiles(node, 1)
        ship(files, home)
        assert not run_hang(home, json.loads(home.record.read_text())).hung  # it moved a moment ago
        sleeper.send_signal(signal.SIGSTOP)

        def stopped() -> bool:
            files.states_at = 0.0  # look again now (a node looks every STATES_SECONDS)
            ship(files, home)
            verdict = run_hang(home, json.loads(home.record.read_text()))
            return verdict is not None and [(s.rank, s.state) for s in verdict.stalled] == [(3, "stopped")]

        wait_for(stopped, 30, "home to know rank 3 stopped")
        said = stop_waits_for(home, json.loads(home.record.read_text()))
        assert said[0] == f"rank 3 (pid {sleeper.pid} on c) is stopped (SIGSTOP): it cannot save or stop until it is " \
                          f"continued (kill -CONT {sleeper.pid} on c)", said
        sleeper.send_signal(signal.SIGCONT)
        wait_for(lambda: (setattr(files, "states_at", 0.0), ship(files, home)) and
                 json.loads((home.heartbeats / "machine-1-states.json").read_text()) == {}, 30, "continued")
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "run.json", "logs/../run.json",
                                  "logs/rank-1.log/../../x", "control/stop", "profile.toml", "stacks/digest.json",
                                  "heartbeats/../run.json", ""])
def test_a_node_cannot_write_outside_what_is_mirrored(tmp_path: Path, path: str) -> None:
    _, home = node_and_home(tmp_path)
    (home.root / "run.json").write_text("{}")
    with pytest.raises(MirrorError):
        apply(home, decode(encode_bytes("append", path, b"owned")))
    assert (home.root / "run.json").read_text() == "{}"
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("line", [b"Welcome to node2!\n", b"\n", b"[1, 2]\n", b'{"no": "type"}\n', b'{"t": 3}\n',
                                  b'{"t": "append", "path": "logs/rank-0.log", "da'])
def test_a_line_that_is_no_message_is_refused(line: bytes) -> None:
    with pytest.raises(WireError):
        decode(line)


def test_messages_round_trip() -> None:
    assert decode(encode("control", name="save-now")) == {"t": "control", "name": "save-now"}


def test_flight_recorder_dumps_come_home_and_workers_stacks_stay(tmp_path: Path) -> None:
    """A rank's NCCL dump (logs/nccl-trace-rank-K) travels as its log does, so home's digest names it; a data loader
    worker's stacks file (stacks/rank-K-worker-PID.txt, read on its machine) never breaks the mirror."""
    node, home = node_and_home(tmp_path)
    files = NodeFiles(node, 1)
    node.logs.mkdir(exist_ok=True)
    node.stacks.mkdir()
    dump = bytes(range(256)) * 4000  # a pickle of about 1 MiB: several chunks
    (node.logs / "nccl-trace-rank-3").write_bytes(dump)
    (node.stacks / "rank-3-worker-4242.txt").write_text("Thread 0x2:\n")
    (node.stacks / "rank-3-worker-4242.json").write_text('{"rank": 3}')
    node.rank_stacks(3).write_text("Thread 0x1:\n")
    ship(files, home)
    assert (home.logs / "nccl-trace-rank-3").read_bytes() == dump
    assert home.rank_stacks(3).read_text() == "Thread 0x1:\n"
    assert not list(home.stacks.glob("rank-3-worker-*"))
