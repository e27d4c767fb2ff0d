"""Issue 26: the NCCL flight recorder's dumps are named in the digest (tuitrain.runs.view.nccl_trace).

No GPU here: the dumps are written by the test in the format PyTorch writes (a protocol-2 pickle of plain data, as
torch.distributed.flight_recorder's loader reads it), and one is written by PyTorch itself, whose CPU build records
gloo's collectives the same way (`torch._C._distributed_c10d._dump_fr_trace`)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from conftest import cli
from test_tui_fixtures import FAILED, make_runs
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.view.nccl_trace import LABEL, behind, read_traces, trace_lines
from tuitrain.runs.view.stacks import write_digest


def entry(record_id: int, seq: int, op: str = "all_reduce", state: str = "completed") -> dict[str, Any]:
    """One entry as PyTorch records it (torch 2.13's fields)."""
    return {"record_id": record_id, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "p2p_seq_id": 0, "op_id": seq, "profiling_name": f"nccl:{op}", "time_created_ns": 1_795_679_197_570_189_210,
            "duration_ms": None, "input_sizes": [[1024]], "input_dtypes": ["Float"], "output_sizes": [[1024]],
            "output_dtypes": ["Float"], "state": state, "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
            "thread_id": "140246895418240", "thread_name": "python",
            "frames": [{"name": op, "filename": "/venv/torch/distributed/distributed_c10d.py", "line": 2801},
                       {"name": "main", "filename": "/home/me/train.py", "line": 90}]}


def dump(entries: list[dict[str, Any]]) -> bytes:
    last = max(e["collective_seq_id"] for e in entries)
    return pickle.dumps({"version": "2.10", "comm_lib_version": "2.21.5",
                         "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
                         "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": last,
                                             "last_completed_collective": last - 1}},
                         "entries": entries}, protocol=2)


def write_dumps(run_dir: Path, dumps: dict[int, bytes]) -> None:
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    for rank, data in dumps.items():
        (run_dir / "logs" / f"nccl-trace-rank-{rank}").write_bytes(data)


def hung_world() -> dict[int, bytes]:
    """Ranks 0 and 2 wait in all_reduce #42; rank 1 completed #41 and never entered #42; rank 3 did not dump."""
    waiting = dump([entry(0, 40), entry(1, 41), entry(2, 42, state="started")])
    return {0: waiting, 1: dump([entry(0, 40), entry(1, 41)]), 2: waiting}


def test_the_digest_says_which_ranks_dumped_their_last_collective_and_which_rank_is_behind(tmp_path):
    paths = RunPaths(tmp_path / "run")
    write_dumps(paths.root, hung_world())
    traces = read_traces(paths)
    assert [(t.rank, t.op, t.seq, t.state) for t in traces.values()] == [
        (0, "all_reduce", 42, "started"), (1, "all_reduce", 41, "completed"), (2, "all_reduce", 42, "started")]
    assert behind(traces) == [1]
    assert trace_lines(traces, world_size=4) == [
        f"{LABEL} (logs/nccl-trace-rank-K): ranks 0, 1, 2 dumped; rank 3 did not; rank 1 behind",
        f"{LABEL}, rank 1: last collective all_reduce #41, completed (behind)",
        f"{LABEL}, ranks 0, 2: last collective all_reduce #42, started",
    ]
    assert trace_lines({}) == []


def test_the_hang_digest_carries_them(tmp_path):
    paths = RunPaths(tmp_path / "run")
    write_dumps(paths.root, hung_world())
    data = write_digest(paths, {})
    assert data["lines"][1] == f"{LABEL}, rank 1: last collective all_reduce #41, completed (behind)", data["lines"]
    kept = json.loads(paths.stacks_digest.read_text())
    assert kept["flight_recorder"]["behind"] == [1]
    assert kept["flight_recorder"]["ranks"]["2"] == {"op": "all_reduce", "seq": 42, "state": "started",
                                                     "group": "0", "problem": ""}


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_file_that_is_no_plain_data_is_refused_not_run(tmp_path):
    paths = RunPaths(tmp_path / "run")
    marker = tmp_path / "ran"
    evil = pickle.dumps({"version": "2.10", "entries": [Payload(marker)]}, protocol=2)
    write_dumps(paths.root, {0: evil, 1: dump([entry(0, 7)])[:40], 2: pickle.dumps([1, 2])})
    traces = read_traces(paths)
    assert not marker.exists()
    assert "no plain data" in traces[0].problem and "system" in traces[0].problem, traces[0]
    assert traces[1].problem.startswith("not a readable pickle"), traces[1]  # half written
    assert traces[2].problem == "no flight recorder dump (no list of entries)"
    lines = trace_lines(traces)
    assert lines[0] == f"{LABEL} (logs/nccl-trace-rank-K): ranks 0, 1, 2 dumped"
    assert all("dump unreadable" in line for line in lines[1:]), lines


def test_what_pytorch_itself_writes_is_read(tmp_path):
    """One gloo rank on the CPU, two collectives, its flight recorder dumped by PyTorch into the file."""
    paths = RunPaths(tmp_path / "run")
    (paths.root / "logs").mkdir(parents=True)
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["TORCH_FR_BUFFER_SIZE"] = "100"
        import torch, torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
        t = torch.ones(3)
        dist.all_reduce(t)
        dist.broadcast(t, 0)
        from torch._C._distributed_c10d import _dump_fr_trace
        open(sys.argv[1], "wb").write(_dump_fr_trace(True, True, False))
        dist.destroy_process_group()
    """)
    done = subprocess.run([sys.executable, "-c", script, str(paths.logs / "nccl-trace-rank-0")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    traces = read_traces(paths)
    assert [(t.op, t.seq, t.problem) for t in traces.values()] == [("broadcast", 2, "")], traces


def test_stacks_of_a_run_an_nccl_timeout_ended_shows_what_its_ranks_dumped(tmp_path):
    made = make_runs(tmp_path / "runs")
    write_dumps(made[FAILED], hung_world())
    shown = cli("stacks", FAILED, runs_dir=tmp_path / "runs")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    digest = lines[lines.index("digest") + 1:]
    assert digest[0] == f"  {LABEL} (logs/nccl-trace-rank-K): ranks 0, 1, 2 dumped; rank 1 behind", shown.stdout
    assert digest[1] == f"  {LABEL}, rank 1: last collective all_reduce #41, completed (behind)", shown.stdout
    assert not (made[FAILED] / "stacks" / "digest.json").exists()
    # without dumps an ended run still has no stacks to take
    os.remove(made[FAILED] / "logs" / "nccl-trace-rank-0")
    os.remove(made[FAILED] / "logs" / "nccl-trace-rank-1")
    os.remove(made[FAILED] / "logs" / "nccl-trace-rank-2")
    refused = cli("stacks", FAILED, runs_dir=tmp_path / "runs")
    assert refused.returncode != 0 and "only a live run has stacks" in refused.stderr, refused.stderr


def test_status_of_a_run_an_nccl_timeout_ended_says_what_its_ranks_dumped(tmp_path):
    """`tuitrain status` of the failed run says it too, not only `tuitrain stacks`: the user asks status first."""
    made = make_runs(tmp_path / "runs")
    write_dumps(made[FAILED], hung_world())
    shown = cli("status", FAILED, runs_dir=tmp_path / "runs")
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("stacks ")]
    assert f"{LABEL}, rank 1: last collective all_reduce #41, completed (behind)" in line, shown.stdout
    data = json.loads(cli("status", FAILED, "--json", runs_dir=tmp_path / "runs").stdout)
    assert data["stacks_digest"][0].startswith(f"{LABEL} (logs/nccl-trace-rank-K): ranks 0, 1, 2 dumped")
