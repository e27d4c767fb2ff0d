"""save and stop: requests to a live run."""

from __future__ import annotations

import argparse
import sys

from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.catalog import find_run, load_record
from tuitrain.runs.control import request


def cmd_save(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    request(paths, "save")
    print(f"asked run {paths.id} to save a checkpoint at the next step end")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from tuitrain.backends import for_run

    paths = find_run(args.runs_root, args.run)
    if not args.now:  # said first: a backend's stop may wait for the end (a Slurm job's does)
        for line in stop_blockers(paths):
            print(line, file=sys.stderr, flush=True)
    last = for_run(load_record(paths)).stop(paths, args.now, lambda line: print(line, file=sys.stderr, flush=True),
                                            timeout=getattr(args, "timeout", None))
    print(last)
    return 0


def stop_blockers(paths: RunPaths) -> list[str]:
    """Why a graceful stop of this run may wait for ever, and what ends it instead (nothing when it can stop)."""
    from tuitrain.runs.view.hang import stop_waits_for

    lines = stop_waits_for(paths, load_record(paths))
    return [*lines, f"`tuitrain stop --now {paths.id}` ends every process of the run now"] if lines else []


def cmd_evaluate(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    request(paths, "evaluate")
    print(f"asked run {paths.id} to evaluate at the next step end")
    return 0
