"""`python -m tuitrain.tui --runs-dir ROOT`: the app on whatever driver Textual is told to use. Each browser tab of
`tuitrain serve` runs this under Textual's web driver (a pipe, not a terminal, so not through `tuitrain`, which
prints its help where there is no terminal)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuitrain.tui.app import run_app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuitrain.tui")
    parser.add_argument("--runs-dir", dest="runs_root", type=Path, required=True)
    parser.add_argument("--parent", type=int, default=None, metavar="PID", help="end when this process (the server) ends")
    args = parser.parse_args(argv)
    if args.parent is not None:
        import signal

        from tuitrain.runs.keeper.parent_death import end_with

        # a server killed outright leaves no app behind. SIGKILL, not SIGTERM: Textual's web driver catches SIGTERM
        # to quit cleanly, and that quit, its pipes gone with the server, never ends (Textual 8.2); the app has
        # nothing to save (runs are detached, what it writes it writes whole at once)
        end_with(args.parent, signal.SIGKILL)
    return run_app(runs_root=args.runs_root)


if __name__ == "__main__":
    sys.exit(main())
