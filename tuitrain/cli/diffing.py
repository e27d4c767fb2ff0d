"""diff: what differs between two runs (tuitrain.runs.view.diff says what; this prints it)."""

from __future__ import annotations

import argparse

from tuitrain.cli.output import print_json
from tuitrain.runs.catalog import find_run, load_record
from tuitrain.runs.view.diff import NO_DIFFERENCE, compare_runs


def cmd_diff(args: argparse.Namespace) -> int:
    a, b = find_run(args.runs_root, args.run_a), find_run(args.runs_root, args.run_b)
    found = compare_runs(a, load_record(a), b, load_record(b))
    if args.json:
        print_json(found.to_dict())
        return 0
    print(f"a  {a.id}\nb  {b.id}")
    if not found.differences:
        print(NO_DIFFERENCE)
        return 0
    for line in found.lines():
        print(line)
    return 0
