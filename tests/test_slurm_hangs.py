"""Issue 26 under Slurm: a job's nodes keep their heartbeats and stacks in their own folders of the shared run
directory (node 0 the run's own, node M > 0 nodes/machine-M/), so the viewers at home judge every node's ranks, and
`tuitrain stacks` asks each node's supervisor through that directory (control/stacks in its folder) for its own
ranks' stacks: a signal from the login node reaches no rank.

The real job is tests/test_hangs.py's script on the namespace hosts node1 and node2 (one rank each): rank 1, on node
2, sleeps for ever at the end of step 5 while rank 0 goes on into tuitrain's control broadcast."""

from __future__ import annotations

import json
from pathlib import Path

from tuitrain.runs.hang import run_hang
from tuitrain.runs.layout import PHASE_STEP, RunPaths

# -- a run directory made here --------------------------------------------------------------------------------------


def heartbeat(folder: Path, rank: int, moved: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "phase": PHASE_STEP, "time": moved,
                                                          "since": moved, "step": 5, "step_seconds": 0.1}))


def test_a_slurm_node_s_heartbeats_are_judged_at_home(tmp_path: Path) -> None:
    """Rank 1 beats in node 2's folder and stopped moving 100 s ago; rank 0, in the run's own, moves."""
    paths = RunPaths(tmp_path / "run")
    heartbeat(paths.heartbeats, 0, 1000.0)
    heartbeat(paths.node(1).heartbeats, 1, 900.0)
    verdict = run_hang(paths, {"status": "running"}, now=1000.0, states={})
    assert verdict is not None and verdict.hung, verdict
    assert [(s.rank, s.since) for s in verdict.stalled] == [(1, 900.0)]
    assert list(paths.nodes()) == [0, 1] and paths.node(1).nodes() == {0: paths.node(1)}
