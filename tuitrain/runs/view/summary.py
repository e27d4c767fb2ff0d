"""One run in full: the record, progress from events, checkpoints, and a failed rank's traceback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping

from tuitrain.rundir.checkpoints import run_checkpoints
from tuitrain.rundir.events import progress, read_events
from tuitrain.rundir.exits import failure_log
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, RunRecord
from tuitrain.rundir.run import Run, elapsed
from tuitrain.rundir.tail import read_tail
from tuitrain.runs.liveness import settle_lost, supervisor_gone
from tuitrain.runs.view.attempts import attempt_label


def last_traceback(log: Path, max_lines: int = 25) -> list[str]:
    """The last traceback in a rank log (read from the end, never the whole file)."""
    text = read_tail(log)
    if not text:
        return []
    lines = text.replace("\r", "\n").splitlines()
    marker = "Traceback (most recent call last)"
    starts = [i for i, line in enumerate(lines) if marker in line]
    if starts:
        first = lines[starts[-1]]
        block = [first[first.index(marker):], *lines[starts[-1] + 1:]]  # a progress bar may share its line
        return block if len(block) <= max_lines else block[:3] + ["  ..."] + block[-(max_lines - 4):]
    return [line for line in lines if line.strip()][-min(max_lines, 10):]


def supervisor_lost(record: RunRecord) -> bool:
    """A run whose supervisor is gone but whose record never reached an end (killed -9, reboot)."""
    return supervisor_gone(record)


def hang_summary(paths: RunPaths, record: RunRecord) -> dict[str, Any]:
    """`hang`: the verdict on a live run (tuitrain.runs.view.hang; None once it ended), with `hang_lines` to show and the
    digest of the stacks taken since it stopped moving (`stacks_digest`)."""
    from tuitrain.runs.view.hang import describe, run_hang
    from tuitrain.runs.view.stacks import read_digest

    hang = run_hang(paths, record) if not supervisor_gone(record) else None
    out: dict[str, Any] = {"hang": hang.to_dict() if hang is not None else None}
    if hang is not None and (hang.hung or hang.stragglers):
        out["hang_lines"] = describe(hang, time.time())
    if hang is not None and hang.hung:
        digest = read_digest(paths)
        if digest is not None and digest["time"] >= (hang.since or 0):
            out["stacks_digest"] = digest["lines"]
    elif Run(paths, record).status in FINAL_STATUSES:
        out.update(ended_digest(paths))
    return out


def ended_digest(paths: RunPaths) -> dict[str, Any]:
    """Of a run that has ended: what its ranks' NCCL flight recorders dumped, when an NCCL timeout ended it (the
    digest `tuitrain stacks` shows of it)."""
    from tuitrain.runs.view.nccl_trace import trace_files
    from tuitrain.runs.view.stacks import digest_data

    return {"stacks_digest": digest_data(paths, {})["lines"]} if trace_files(paths) else {}


def run_summary(paths: RunPaths, record: RunRecord, with_checkpoints: bool = True,
                job: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`record` as its backend settled it, `job` its scheduler's label of its job (tuitrain.backends.settle_runs)."""
    record = settle_lost(paths, record)
    summary: dict[str, Any] = {"id": paths.id, **record}  # a record without its id is the run of its folder
    if job is not None:
        summary["slurm_state"] = job
    summary["run_dir"] = str(paths.root)
    summary["progress"] = progress(read_events(paths.events))
    run = Run(paths, record)
    if run.max_steps and not summary["progress"].get("max_steps"):
        summary["progress"]["max_steps"] = run.max_steps
    summary["duration"] = elapsed(record, time.time())
    summary["attempt_label"] = attempt_label(run)  # "attempt 2/3" for a list of runs (another box's too)
    summary["supervisor_lost"] = supervisor_lost(record)
    summary.update(hang_summary(paths, record))
    if with_checkpoints and run.output_dir:
        summary["checkpoints"] = [c.to_dict() for c in run_checkpoints(record)]
    if run.status == "failed":
        log = failure_log(paths, record)
        summary["traceback"] = last_traceback(log)
        summary["traceback_file"] = str(log)
    return summary
