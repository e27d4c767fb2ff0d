"""`tuitrain run PROFILE --sweep KEY=V1,V2 [--sweep KEY2=…] [--max-parallel N]`: the sweep's rules and
its queueing are `backends.sweep`'s (the app's launch dialog asks them too); here, what the command prints."""

from __future__ import annotations

import argparse
import sys


def cmd_sweep(args: argparse.Namespace) -> int:
    from tuitrain.backends.sweep import queue_sweep, sweep_points, sweep_summary
    from tuitrain.profile import resolve_profile_path
    from tuitrain.runs.queue.options import queue_options

    options = queue_options(args)
    queued = queue_sweep(resolve_profile_path(args.profile), args.set, options, args.runs_root,
                         say=lambda line: print(line, file=sys.stderr))
    for paths in queued:
        print(paths.id, flush=True)
    print(f"queued {sweep_summary(sweep_points(options.sweep), options.max_parallel)}; `tuitrain queue` shows what "
          "each waits for", file=sys.stderr)
    return 0
