"""Wall time of short tuitrain commands against a bare `python -c pass`.

    .venv/bin/python benchmarks/cli_startup.py [--repeat 5]

Each command runs as a subprocess (the `tuitrain` console script of this interpreter's
environment), in an empty temporary folder, offline; the figure is the median of --repeat runs
(wall time, and beside it the child's CPU time, user + system, which other load barely moves),
the commands taking turns (round-robin) so that a slow moment of the machine hits all of them;
a round during which other processes used more than --max-others of the CPU is done again.
Target: every command under 0.3 s.

Two settings, each with its own baseline:
  as found     the environment this script runs in, unchanged (if it sets PYTHONDONTWRITEBYTECODE,
               as our CI containers do, tuitrain's own modules are compiled from source on every start)
  bytecode     PYTHONPYCACHEPREFIX=<tmp> and bytecode writing on, after one untimed run of each
               command: what an ordinary install, with its .pyc files, gets

Also checked: none of torch, transformers, datasets, evaluate, accelerate is imported by any of
the commands (sys.modules after tuitrain.cli.main(argv), in a fresh interpreter), and the time of
the first `plan` after an install or upgrade of transformers, when the TrainingArguments table is
not cached yet (a child interpreter imports transformers once), and of a `plan` when the cache
folder cannot be written at all (then every process pays that import again).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BIN, CpuWatch, QuietGate, Table, bench_env, machine_line, median, wall, wall_and_cpu

TARGET_SECONDS = 0.3
HEAVY = ("torch", "transformers", "datasets", "evaluate", "accelerate")

_CHECK = r"""
import contextlib, io, json, sys
from tuitrain.cli import main
argv = json.loads(sys.argv[1])
code = None
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
print(json.dumps({"exit": code, "heavy": heavy, "modules": len(sys.modules)}))
""" % (HEAVY,)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quiet-wait", type=float, default=10.0,
                        help="seconds to wait, before each round, for other processes to go quiet")
    parser.add_argument("--max-others", type=float, default=0.1,
                        help="a round during which other processes used more of the CPU than this is done again")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--wait-budget", type=float, default=60.0, help="seconds of waiting for quiet in all")
    opts = parser.parse_args()

    tool = str(BIN / "tuitrain")
    tmp = Path(tempfile.mkdtemp(prefix="tuitrain-bench-cli-"))
    gate = QuietGate(max_wait=opts.quiet_wait, budget=opts.wait_budget)
    try:
        work, empty_runs, cache = tmp / "work", tmp / "empty-runs", tmp / "xdg-cache"
        for d in (work, empty_runs, cache):
            d.mkdir()
        commands: list[tuple[str, list[str] | None]] = [
            ("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
            ("tuitrain --help", [tool, "--help"]),
            ("tuitrain runs --runs-dir EMPTY", [tool, "runs", "--runs-dir", str(empty_runs)]),
            ("tuitrain plan demo", [tool, "plan", "demo", "--runs-dir", str(tmp / "runs")]),
        ]
        # A private cache folder: the first `plan` fills it (and is timed: the cold case).
        base = bench_env(XDG_CACHE_HOME=str(cache))
        as_found = dict(base)
        cached = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")

        cold_plan = wall(commands[3][1], cwd=work, env=as_found)
        # A cache folder that cannot be created (e.g. a read-only home): every process pays again.
        unwritable = wall(commands[3][1], cwd=work, env={**as_found, "XDG_CACHE_HOME": os.devnull + "/cache"})
        for _, argv in commands:  # untimed: fills the bytecode cache of the "bytecode" setting
            wall(argv, cwd=work, env=cached)

        settings = {"as found": as_found, "bytecode": cached}
        times: dict[str, dict[str, list[float]]] = {s: {name: [] for name, _ in commands} for s in settings}
        cpu_times: dict[str, dict[str, list[float]]] = {s: {name: [] for name, _ in commands} for s in settings}
        redone = kept_noisy = 0
        for n in range(opts.repeat):
            for attempt in range(opts.retries + 1):
                gate.wait()
                watch = CpuWatch()
                this_round = {s: {name: wall_and_cpu(argv, cwd=work, env=env) for name, argv in commands}
                              for s, env in settings.items()}
                others = watch.others()
                if others <= opts.max_others:
                    break
                if attempt < opts.retries and not gate.exhausted:
                    redone += 1
                    print(f"  (other processes used {others:.0%} of the CPU during round {n + 1}: again)", flush=True)
                else:
                    kept_noisy += 1
                    print(f"  (other processes used {others:.0%} of the CPU during round {n + 1}; kept)", flush=True)
                    break
            for s in settings:
                for name, (elapsed, cpu) in this_round[s].items():
                    times[s][name].append(elapsed)
                    cpu_times[s][name].append(cpu)

        checks = {}
        for name, argv in commands[1:]:
            args = argv[1:]
            out = subprocess.run([sys.executable, "-c", _CHECK, json.dumps(args)], cwd=work, env=as_found,
                                 capture_output=True, text=True, check=True)
            checks[name] = json.loads(out.stdout.strip().splitlines()[-1])

        print(f"cli_startup: median of {opts.repeat} subprocess runs, round-robin")
        print(machine_line())
        print(f"as found: PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}")
        table = Table(["command", "as found (s)", "x base", "CPU (s)", "bytecode (s)", "x base", "CPU (s)",
                       f"< {TARGET_SECONDS} s", "heavy imports", "modules"])
        met = True
        base_af = median(times["as found"][commands[0][0]])
        base_bc = median(times["bytecode"][commands[0][0]])
        for name, _ in commands:
            af, bc = median(times["as found"][name]), median(times["bytecode"][name])
            check = checks.get(name)
            ok = af < TARGET_SECONDS and bc < TARGET_SECONDS
            if check is not None:
                met = met and ok and not check["heavy"]
            table.add([
                name, f"{af:.3f}", f"{af / base_af:.1f}", f"{median(cpu_times['as found'][name]):.3f}",
                f"{bc:.3f}", f"{bc / base_bc:.1f}", f"{median(cpu_times['bytecode'][name]):.3f}",
                "-" if check is None else ("yes" if ok else "NO"),
                "-" if check is None else (", ".join(check["heavy"]) or "none"),
                "-" if check is None else str(check["modules"]),
            ])
        print(table.render())
        print(f"first `tuitrain plan demo` with no cached TrainingArguments table (after installing or upgrading "
              f"transformers; one run, as found): {cold_plan:.2f} s")
        print(f"`tuitrain plan demo` when the cache folder cannot be written (XDG_CACHE_HOME=/dev/null/cache; "
              f"every run pays this): {unwritable:.2f} s")
        print(f"target: every command under {TARGET_SECONDS} s and none of {', '.join(HEAVY)} imported: "
              f"{'MET' if met else 'NOT MET'}")
        print(gate.summary() + f"; rounds redone because others used > {opts.max_others:.0%} CPU: {redone}, "
              f"kept noisy: {kept_noisy}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
