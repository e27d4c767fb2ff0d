"""`tuitrain stacks RUN` (issue 26): every rank's Python stack, side by side, and a digest of where they wait.
Argument adders only at import (the parser is built on every command); the work is imported lazily."""

from __future__ import annotations

import argparse
import os
import shutil
from typing import Any

from tuitrain.cli.errors import CliError

FRAMES_SHOWN = 16  # of each rank's main thread, innermost first; the files keep them all


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run")
    p.add_argument("--json", action="store_true")


def columns(blocks: list[list[str]], width: int) -> list[str]:
    """Blocks of lines printed side by side, as many to a row as `width` holds (each at least 36 wide)."""
    per_row = max(1, min(len(blocks), width // 36)) if blocks else 1
    col = max(36, width // per_row) - 2
    out: list[str] = []
    for start in range(0, len(blocks), per_row):
        row = blocks[start:start + per_row]
        for i in range(max(len(b) for b in row)):
            cells = [(b[i] if i < len(b) else "") for b in row]
            out.append("  ".join((c if len(c) <= col else c[: col - 1] + "…").ljust(col) for c in cells).rstrip())
        out.append("")
    return out


def rank_block(stacks: Any, where: str) -> list[str]:
    from tuitrain.runs.stacks import main_thread

    head = f"rank {stacks.rank} (pid {stacks.pid}, {stacks.how or 'no stack'})"
    main = main_thread(stacks.threads)
    if main is None:
        return [head, "=" * len(head), where]
    lines = [head, "=" * len(head)]
    lines += [f"{f.func} {os.path.basename(f.file)}:{f.line}" for f in main.frames[:FRAMES_SHOWN]]
    if len(main.frames) > FRAMES_SHOWN:
        lines.append(f"… {len(main.frames) - FRAMES_SHOWN} more")
    others = len(stacks.threads) - 1
    if others:
        lines.append(f"(+{others} other thread{'s' if others > 1 else ''})")
    return lines


def cmd_stacks(args: argparse.Namespace) -> int:
    from tuitrain.cli.output import print_json
    from tuitrain.runs.catalog import find_run, load_record
    from tuitrain.runs.liveness import effective_status
    from tuitrain.runs.stacks import take_stacks, write_digest

    paths = find_run(args.runs_root, args.run)
    record = load_record(paths)
    status = effective_status(record)
    if status not in ("running", "stopping", "starting"):
        raise CliError(f"run {paths.id} is {status}: only a live run has stacks to take")
    taken = take_stacks(paths, record)
    if not taken:
        raise CliError(f"run {paths.id}: no rank of it runs on this machine (yet); nothing to take")
    summary = write_digest(paths, taken)
    if args.json:
        print_json({"run": paths.id, "digest": summary["lines"],
                    "ranks": {str(r): {"pid": s.pid, "how": s.how, "state": s.state, "where": summary["ranks"][str(r)],
                                       "file": str(paths.rank_stacks(r)) if s.how else None,
                                       "threads": [{"name": t.name, "frames": [[f.file, f.line, f.func] for f in t.frames]}
                                                   for t in s.threads]}
                              for r, s in taken.items()}})
        return 0
    width = shutil.get_terminal_size((120, 24)).columns
    for line in columns([rank_block(s, summary["ranks"][str(r)]) for r, s in taken.items()], width):
        print(line)
    print(f"every thread of each rank: {paths.stacks}/rank-K.txt")
    print("digest")
    for line in summary["lines"]:
        print(f"  {line}")
    return 0
