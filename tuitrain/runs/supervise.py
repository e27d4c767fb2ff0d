"""`python -m tuitrain.runs.supervise RUN_DIR`: the detached process that watches one run (started by
tuitrain.runs.start.spawn_supervisor). It picks the supervisor for the run's kind (tuitrain.runs.kind.run_kind):
the ordinary one, or the home supervisor of a run on several machines. Choosing here, above both, keeps either
from importing the other."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from tuitrain.runs.home_supervisor import HomeSupervisor
from tuitrain.runs.kind import run_kind
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.record import read_record, record_end
from tuitrain.runs.supervisor import Supervisor, run_supervisor


def supervise(run_dir: Path) -> int:
    paths = RunPaths(run_dir)
    try:
        supervisor = HomeSupervisor(paths) if run_kind(read_record(paths)) == "machines" else Supervisor(paths)
    except BaseException as exc:  # noqa: BLE001 — an unreadable record: say so where the run's viewers look
        traceback.print_exc()
        try:
            record_end(paths, status="failed", ended=time.time(), error=f"the supervisor could not start: {exc}")
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        return 1
    return 0 if run_supervisor(supervisor) in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
