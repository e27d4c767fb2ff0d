"""`tuitrain stacks RUN`: every rank's Python stack, side by side, and a digest of where they wait.
Argument adders only at import (the parser is built on every command); the work is imported lazily."""

from __future__ import annotations

import argparse
import shutil


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all-threads", action="store_true",
                   help="every thread of each rank, every frame, one rank after another (default: each rank's main "
                        "thread, side by side)")


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


def cmd_stacks(args: argparse.Namespace) -> int:
    from tuitrain.backends import for_run
    from tuitrain.cli.output import print_json
    from tuitrain.runs.catalog import find_run, load_record
    from tuitrain.runs.view.stacks import gather, rank_block, threads_block

    paths = find_run(args.runs_root, args.run)
    record = load_record(paths)
    taken, summary = gather(paths, record, for_run(record).take_stacks)
    if args.json:
        from tuitrain.runs.view.stacks_json import stacks_json

        print_json(stacks_json(paths, taken, summary))
        return 0
    if args.all_threads:
        for rank, stacks in taken.items():
            print("\n".join(threads_block(stacks, summary["ranks"][str(rank)])) + "\n")
    else:
        width = shutil.get_terminal_size((120, 24)).columns
        for line in columns([rank_block(s, summary["ranks"][str(r)]) for r, s in taken.items()], width):
            print(line)
    if taken:  # an ended run's flight recorder lines come alone
        print(f"every thread of each rank: {paths.stacks}/rank-K.txt")
    print("digest")
    for line in summary["lines"]:
        print(f"  {line}")
    return 0
