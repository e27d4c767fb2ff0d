"""The shared-workstation queue on the command line: `run --queue/--after/--after-ok`, `queue`,
`cancel`. Argument adders only at import (the parser is built on every command); the work is imported lazily."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuitrain.cli.errors import CliError
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The queue's and the sweep's options of `tuitrain run` (runs.queue.options: the app's launch dialog reads
    the same flags)."""
    from tuitrain.runs.queue.options import add_queue_options, add_sweep_options

    add_queue_options(p)
    add_sweep_options(p)


def add_queue_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    p.add_argument("--expand", action="store_true", help="each run of a sweep on its own line")
    p.add_argument("action", nargs="?", choices=["move"], help="move RUN --top: put your queued run first")
    p.add_argument("run", nargs="?", help="the queued run to move")
    p.add_argument("--top", action="store_true", help="with move: to the front of the queue")


def add_cancel_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run")


def status_lines(run_dir: Path, record: RunRecord) -> list[str]:
    """What `tuitrain status RUN` says of a run's queueing, labelled as its other lines are: a queued run's place
    and what it waits for (the rows `tuitrain queue` shows); a started `gpus = N` run's GPUs and why those."""
    run = Fields(record)
    chosen = run.queue.get("chosen")
    if chosen:
        return [f"gpus       {', '.join(map(str, chosen['gpus']))}, chosen by the queue at its start: {chosen['why']}"]
    if run.status != "queued":
        return []
    from tuitrain.runs.queue.look import places, queue_rows, run_key

    mine = places(queue_rows()).get(run_key(run_dir))
    if mine is None:
        return ["queue      not in this machine's queue folder (its supervisor is gone, or it starts now)"]
    return [f"queue      position {mine.position} of {mine.length}", *(f"waits for  {wait}" for wait in mine.waits)]


def cmd_move(args: argparse.Namespace) -> int:
    from tuitrain.runs.catalog import find_run
    from tuitrain.runs.queue.look import queue_action

    if not args.run or not args.top:
        raise CliError("queue move needs a run and where to: tuitrain queue move RUN --top")
    print(queue_action(find_run(args.runs_root, args.run), "top"), file=sys.stderr)
    return 0


def cmd_queue(args: argparse.Namespace) -> int:
    from tuitrain.cli.output import print_json
    from tuitrain.runs.queue.look import queue_report, report_lines

    if getattr(args, "action", None) == "move":
        return cmd_move(args)
    if getattr(args, "run", None) or getattr(args, "top", False):
        raise CliError("tuitrain queue takes no run (to move one: tuitrain queue move RUN --top)")
    report = queue_report()
    if args.json:
        print_json(report)
        return 0
    for line in report_lines(report, expand=getattr(args, "expand", False)):
        print(line)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from tuitrain.runs.catalog import find_run
    from tuitrain.runs.queue.look import queue_action

    print(queue_action(find_run(args.runs_root, args.run), "cancel"), file=sys.stderr)
    return 0
