"""One live run per output folder. A run claims its output folder when it starts (a small file naming its run
directory); a second run refuses the folder while that run lives, even before the first has written a checkpoint
(two runs writing checkpoint-N, lora-base/ and the tokenizer into one folder lose each other's work). A claim
whose run has ended, was lost, or never got started is taken over.

The claim lives beside the folder it guards (`.NAME.tuitrain-run` in its parent), not in it: a folder removed under
a live run must not take the run's claim with it (a second run was then let in, and their checkpoints mixed). Only
where the parent cannot be written is it kept inside the folder. The running run's supervisor makes the folder and
its claim again when it finds the folder gone, and records when (`output_removed`)."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from tuitrain.atomic import write_text_atomic
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, RunRecordError, read_record

CLAIM = ".tuitrain-run"  # inside the folder: where the parent cannot be written (and as older versions kept it)
LOCK = ".tuitrain-run.lock"


def claim_paths(output_dir: Path) -> tuple[Path, Path]:
    """(claim file, lock file) of a folder: beside it in its parent where that can be written, else inside it."""
    parent = output_dir.parent
    if output_dir.name and os.access(parent, os.W_OK | os.X_OK):
        return parent / f".{output_dir.name}{CLAIM}", parent / f".{output_dir.name}{LOCK}"
    return output_dir / CLAIM, output_dir / LOCK


def claim_holder(output_dir: Path) -> RunPaths | None:
    """The run directory named by the folder's claim, if its file reads."""
    for claim in dict.fromkeys((claim_paths(output_dir)[0], output_dir / CLAIM)):
        try:
            named = json.loads(claim.read_text(encoding="utf-8")).get("run_dir")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(named, str) and named:
            return RunPaths(Path(named))
    return None


def live_holder(output_dir: Path, me: RunPaths) -> tuple[RunPaths, str] | None:
    """(run, its status) when another run that still lives holds the folder; a run directory without its
    record yet is a run being started."""
    from tuitrain.runs.liveness import effective_status  # psutil: only when a run is started, never for `plan`

    holder = claim_holder(output_dir)
    if holder is None or holder.root.resolve() == me.root.resolve() or not holder.root.is_dir():
        return None
    try:
        status = effective_status(read_record(holder))
    except RunRecordError:
        return (holder, "starting") if not holder.record.exists() else None
    return None if status in FINAL_STATUSES or status == "lost" else (holder, status)


def holder_problem(output_dir: Path, me: RunPaths) -> str | None:
    """Why run `me` cannot use the folder (one line, with the fix), or None. Reads only: a refused run leaves no
    trace in someone else's folder."""
    held = live_holder(output_dir, me)
    if held is None:
        return None
    run, status = held
    return (f"{output_dir} is the output folder of run {run.id}, which is {status} ({run.root}); two runs in one "
            "folder overwrite each other's checkpoints. Wait for it to end or stop it, or set another "
            "run.output_dir (e.g. --set run.output_dir=outputs/new)")


def claim_output_dir(output_dir: Path, me: RunPaths) -> str | None:
    """Claim the folder for run `me` (its record written, just before it starts); returns why not when a live
    run holds it, checked again under a lock so that of two starts at once only one claims it."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        claim, lock_path = claim_paths(output_dir)
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            problem = holder_problem(output_dir, me)
            if problem is None:
                write_text_atomic(claim, json.dumps({"run_dir": str(me.root.resolve()), "run": me.id}))
            return problem
    except OSError as exc:
        return f"cannot use {output_dir} as the output folder: {exc.strerror or exc}"
