"""Process start to the first painted frame of Home (median of 5; target < 0.5 s), beside a bare
Textual app that paints one line (the floor any Textual app pays), in the same pseudo-terminal.

    .venv/bin/python benchmarks/tui_first_frame.py [--repeat 5]

"First frame of Home" is the moment the pty first shows the Home screen's "Profiles" pane title;
the bare app paints the same word. The programs take turns (round-robin) so that a slow moment
of the machine hits all of them. Two settings, as in cli_startup.py, each with its own baseline:
  as found     the environment this script runs in, unchanged (if it sets PYTHONDONTWRITEBYTECODE,
               as our CI containers do, and tuitrain has no .pyc files, every start compiles all of
               tuitrain's modules from source)
  bytecode     PYTHONPYCACHEPREFIX=<tmp> and bytecode writing on, after one untimed start of each
               program: what an ordinary install, with its .pyc files, gets
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _common import QuietGate, machine_line
from tui_pty import PtyProgram

TARGET = 0.5
BARE_APP = """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("Profiles")
Bare().run()
"""


def measure(argv: list[str], marker: str, cwd: Path, env: dict[str, str], second: str | None = None) -> tuple[float, float | None]:
    program = PtyProgram(argv, (80, 24), env=env, cwd=cwd)
    try:
        first = program.wait_for(marker, 30)
        later = program.wait_for(second, 30) if second else None
        return first, later
    finally:
        program.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()

    from test_tui_fixtures import RUNNING, make_runs

    base = Path(tempfile.mkdtemp(prefix="tuitrain-bench-"))
    make_runs(base / "runs")
    env = {"HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(base / "runs")}
    settings = {
        "as found": env,
        # an empty PYTHONDONTWRITEBYTECODE counts as unset
        "bytecode": {**env, "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(base / "pycache")},
    }
    python = sys.executable
    app_only = ("import sys; from pathlib import Path; from tuitrain.tui.app import run_app; "
                "run_app(Path(sys.argv[1]))")
    programs = {
        "ours": [python, "-m", "tuitrain"],
        "direct": [python, "-c", app_only, str(base / "runs")],
        "bare": [python, "-c", BARE_APP],
    }
    for argv in programs.values():  # untimed: fills the bytecode cache of the "bytecode" setting
        measure(argv, "Profiles", base, settings["bytecode"])
    gate = QuietGate()
    times = {s: {name: [] for name in programs} for s in settings}
    listed: dict[str, list[float]] = {s: [] for s in settings}
    for _ in range(opts.repeat):
        for s, environment in settings.items():
            for name, argv in programs.items():
                gate.wait()
                first, runs = measure(argv, "Profiles", base, environment, second=RUNNING if name == "ours" else None)
                times[s][name].append(first)
                if runs is not None:
                    listed[s].append(runs)
    shutil.rmtree(base, ignore_errors=True)

    def runs_of(values: list[float]) -> str:
        return ", ".join(f"{v:.3f}" for v in values)

    print(f"tui_first_frame: 80x24 pty, median of {opts.repeat}, round-robin")
    print(machine_line())
    print(gate.summary())
    print(f"as found: PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}")
    met = True
    for s in settings:
        ours, direct, bare = (statistics.median(times[s][n]) for n in ("ours", "direct", "bare"))
        met = met and ours < TARGET
        print(f"[{s}]")
        print(f"  first frame of Home (python -m tuitrain): median {ours:.3f} s  (runs: {runs_of(times[s]['ours'])})  "
              f"target < {TARGET} s: {'met' if ours < TARGET else 'NOT met'}")
        print(f"    ... with the runs listed (first poll painted): median {statistics.median(listed[s]):.3f} s")
        print(f"  the app started without the CLI (run_app imported directly): median {direct:.3f} s  "
              f"(runs: {runs_of(times[s]['direct'])})")
        print(f"  baseline, a bare Textual app painting one line: median {bare:.3f} s  (runs: {runs_of(times[s]['bare'])})")
        print(f"  tuitrain over the bare app: +{ours - bare:.3f} s (x{ours / bare:.2f})")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
