"""save and stop: requests to a live run."""

from __future__ import annotations

import argparse

from tuitrain.runs.catalog import find_run, load_record
from tuitrain.runs.control import request


def cmd_save(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    request(paths, "save")
    print(f"asked run {paths.id} to save a checkpoint at the next step end")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    if load_record(paths).get("slurm"):  # a Slurm job: stop, then scancel if it does not end
        from tuitrain.cli.submit import stop_slurm

        return stop_slurm(args, paths)
    if args.now:
        if request(paths, "terminate") == "ended":
            print(f"run {paths.id} had lost its supervisor; its processes are ended and it is recorded as killed")
        else:
            print(f"ending every process of run {paths.id} now (killed if still there after a few seconds)")
    else:
        request(paths, "stop")
        print(f"asked run {paths.id} to save a checkpoint and stop at the next step end")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    request(paths, "evaluate")
    print(f"asked run {paths.id} to evaluate at the next step end")
    return 0
