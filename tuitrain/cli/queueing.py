"""The shared-workstation queue on the command line (issue 22): `run --queue/--after/--after-ok`, `queue`,
`cancel`. Argument adders only at import (the parser is built on every command); the work is imported lazily."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tuitrain.cli.errors import CliError


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The queue's options of `tuitrain run`."""
    p.add_argument("--queue", action="store_true",
                   help="create the run queued and return its id: it starts by itself once its GPUs are free "
                        "(first queued, first started) and the runs of --after/--after-ok have ended")
    p.add_argument("--after", default=None, metavar="RUN[,RUN]",
                   help="queue it to start after these runs end, however they end (implies --queue)")
    p.add_argument("--after-ok", default=None, metavar="RUN[,RUN]",
                   help="queue it to start after these runs finish; if one ends otherwise, it never starts "
                        "(implies --queue)")


def add_queue_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    p.add_argument("--expand", action="store_true", help="each run of a sweep on its own line")
    p.add_argument("action", nargs="?", choices=["move"], help="move RUN --top: put your queued run first")
    p.add_argument("run", nargs="?", help="the queued run to move")
    p.add_argument("--top", action="store_true", help="with move: to the front of the queue")


def add_cancel_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run")


def _runs(root: Path, refs: str | None, option: str) -> tuple[Any, ...]:
    from tuitrain.runs.catalog import RunNotFound, find_run

    found = []
    for ref in (r.strip() for r in (refs or "").split(",")):
        if not ref:
            continue
        try:
            found.append(find_run(root, ref))
        except RunNotFound as exc:
            raise CliError(f"{option} {ref}: {exc}") from exc
    if refs is not None and not found:
        raise CliError(f"{option} needs run ids (comma-separated); `tuitrain runs` lists them")
    return tuple(found)


def queue_request(args: argparse.Namespace) -> Any:
    """The QueueRequest `tuitrain run` asked for, or None (no --queue, --after or --after-ok)."""
    if not (getattr(args, "queue", False) or getattr(args, "after", None) or getattr(args, "after_ok", None)):
        return None
    from tuitrain.runs.queue import QueueRequest

    return QueueRequest(after=_runs(args.runs_root, args.after, "--after"),
                        after_ok=_runs(args.runs_root, args.after_ok, "--after-ok"))


def status_lines(run_dir: Path, record: dict[str, Any]) -> list[str]:
    """What `tuitrain status RUN` says of a run's queueing, labelled as its other lines are: a queued run's place
    and what it waits for (the rows `tuitrain queue` shows); a started `gpus = N` run's GPUs and why those."""
    chosen = (record.get("queue") or {}).get("chosen")
    if chosen:
        return [f"gpus       {', '.join(map(str, chosen['gpus']))}, chosen by the queue at its start: {chosen['why']}"]
    if record.get("status") != "queued":
        return []
    from tuitrain.runs.queue_view import places, queue_rows, run_key

    mine = places(queue_rows()).get(run_key(run_dir))
    if mine is None:
        return ["queue      not in this machine's queue folder (its supervisor is gone, or it starts now)"]
    return [f"queue      position {mine.position} of {mine.length}", *(f"waits for  {wait}" for wait in mine.waits)]


def cmd_move(args: argparse.Namespace) -> int:
    from tuitrain.runs.catalog import find_run
    from tuitrain.runs.queue_view import queue_action

    if not args.run or not args.top:
        raise CliError("queue move needs a run and where to: tuitrain queue move RUN --top")
    print(queue_action(find_run(args.runs_root, args.run), "top"), file=sys.stderr)
    return 0


def cmd_queue(args: argparse.Namespace) -> int:
    from tuitrain.cli.output import print_json
    from tuitrain.runs.queue import damaged_entries, queue_dir
    from tuitrain.runs.queue_view import queue_rows
    from tuitrain.runs.run_owner import user_name

    if getattr(args, "action", None) == "move":
        return cmd_move(args)
    if getattr(args, "run", None) or getattr(args, "top", False):
        raise CliError("tuitrain queue takes no run (to move one: tuitrain queue move RUN --top)")
    rows = [{**row, "sweep": _sweep(row)} if row["position"] is not None else row for row in queue_rows()]
    damaged = [{"file": str(queue_dir() / d.name), "run": d.run or None, "user": user_name(d.uid), "reason": d.reason,
                "set_aside": d.set_aside} for d in damaged_entries(queue_dir())]
    if args.json:
        print_json({"queue_dir": str(queue_dir()), "runs": rows, "damaged": damaged})
        return 0
    waiting = [r for r in rows if r["position"] is not None]
    if not waiting:
        print(f"no queued runs on this machine ({queue_dir()})")
    for line in queue_lines(waiting, expand=getattr(args, "expand", False)):
        print(line)
    holding = [r for r in rows if r["position"] is None and r["gpus"]]
    for row in holding:
        print(f"  -  {row['run']}  {row['user']}  started, holds GPU {','.join(map(str, row['gpus']))}")
    for entry in damaged:
        whose = f"run {entry['run']} of {entry['user']}" if entry["run"] else f"a file of {entry['user']}"
        print(f"  !  damaged entry {entry['file']} ({whose}): {entry['reason']}; "
              + ("set aside, its run ends with this cause" if entry["set_aside"] else f"only {entry['user']} can set it aside"))
    return 0



def _sweep(row: dict[str, Any]) -> dict[str, Any] | None:
    """The sweep a waiting run of the queue belongs to, from its record (None: of no sweep, or unreadable); read
    here, for `tuitrain queue`, not in queue_rows, which the app polls."""
    from tuitrain.runs.layout import RunPaths
    from tuitrain.runs.queue import sweep_fields
    from tuitrain.runs.record import RunRecordError, read_record

    try:
        return sweep_fields(read_record(RunPaths(Path(row["run_dir"]))))
    except (OSError, RunRecordError):
        return None


def _gpus_word(row: dict[str, Any]) -> str:
    return (f"any {row['any_gpus']} GPU(s)" if row.get("any_gpus") else
            f"GPU {','.join(map(str, row['gpus']))}" if row["gpus"] else "CPU")


def queue_lines(waiting: list[dict[str, Any]], expand: bool = False) -> list[str]:
    """`tuitrain queue`'s lines for the waiting rows (in order): a run and what it waits for; the runs of a sweep
    as one line at its first run's place (the first one's waits under it), unless `expand`."""
    sweeps: dict[str, list[dict[str, Any]]] = {}
    for row in waiting:
        sweep = row.get("sweep") or {}
        if sweep.get("id") and not expand:
            sweeps.setdefault(str(sweep["id"]), []).append(row)
    lines: list[str] = []
    for row in waiting:
        sweep = row.get("sweep") or {}
        group = sweeps.get(str(sweep.get("id"))) if sweep.get("id") else None
        if group is None or len(group) < 2:
            lines.append(f"{row['position']:>3}  {row['run']}  {row['user']}  {_gpus_word(row)}")
        elif row is group[0]:
            labels = [str((r.get("sweep") or {}).get("label", r["run"])) for r in group]
            shown = ", ".join(labels) if len(labels) <= 3 else f"{labels[0]}, …, {labels[-1]}"
            lines.append(f"{row['position']:>3}  sweep {sweep['id']}  {row['user']}  {_gpus_word(row)}  "
                         f"{len(group)} of {sweep.get('of', len(group))} runs waiting ({shown}); "
                         "`tuitrain queue --expand` lists each")
        else:
            continue
        lines.extend(f"       {wait}" for wait in row["waits"])
    return lines


def cmd_cancel(args: argparse.Namespace) -> int:
    from tuitrain.runs.catalog import find_run
    from tuitrain.runs.queue_view import queue_action

    print(queue_action(find_run(args.runs_root, args.run), "cancel"), file=sys.stderr)
    return 0
