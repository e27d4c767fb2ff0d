"""Wall time of `tuitrain plan` (and `tuitrain profile export-accelerate`) on each fixture profile.

    .venv/bin/python benchmarks/plan_fixtures.py [--rounds 5]

The fixture profiles are the Trainer docs' four accelerate configs expressed as profiles
(tests/fixtures/accelerate/*.toml) plus the built-in demo. Each command runs `--rounds` times in
a fresh interpreter; the figure is the median wall time, next to `python -c pass` (the
interpreter's own start) measured the same way. Target: every `tuitrain plan` under 0.3 s, which
it can only meet without heavy imports; the script also checks that none of torch,
transformers, datasets, evaluate or accelerate is loaded by either command.

`tuitrain plan` exits 1 for the GPU fixtures on a machine without GPUs (the plan names the
problems); the timing covers the whole planning either way.

Bytecode: an installed tuitrain has its .pyc files; a sandbox with PYTHONDONTWRITEBYTECODE=1
compiles every module on every start (~0.1 s here). The figures are taken with a bytecode cache
(PYTHONPYCACHEPREFIX in a temporary folder, warmed by one run first: what a user sees from the
second start on), and the cold plan (no cache at all) is shown next to them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, QuietGate, Table, bench_env, machine_line, median, wall

TARGET_S = 0.3
FIXTURES = ROOT / "tests" / "fixtures" / "accelerate"
PROFILES = ["demo", *(str(FIXTURES / f"{n}.toml") for n in ("ddp_multinode", "fsdp", "deepspeed_config_file",
                                                            "deepspeed_plugin"))]
HEAVY = ("torch", "transformers", "datasets", "evaluate", "accelerate")
CHECK = ("import sys, contextlib, io\n"
         "from tuitrain.cli import main\n"
         "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
         "    main(sys.argv[1:])\n"
         f"print(','.join(sorted(set({HEAVY!r}) & set(m.split('.')[0] for m in sys.modules))) or 'none')\n")


def heavy_modules(argv: list[str], runs: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", CHECK, *argv, "--runs-dir", str(runs)], capture_output=True,
                          text=True, env=env, cwd=runs.parent)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else f"? ({done.stderr[-200:]})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    gate = QuietGate()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        runs.mkdir()
        cold = bench_env()
        cold["PYTHONDONTWRITEBYTECODE"] = "1"
        warm = bench_env(PYTHONPYCACHEPREFIX=str(Path(tmp) / "pycache"))
        warm.pop("PYTHONDONTWRITEBYTECODE", None)
        for profile in PROFILES:  # fill the bytecode cache
            wall([sys.executable, "-m", "tuitrain", "plan", profile, "--runs-dir", str(runs)], runs.parent, warm, False)
            wall([sys.executable, "-m", "tuitrain", "profile", "export-accelerate", profile], runs.parent, warm)
        base: list[float] = []
        for _ in range(args.rounds):
            gate.wait()
            base.append(wall([sys.executable, "-c", "pass"], env=warm))
        table = Table(["profile", "plan (s)", "export (s)", "plan - python (s)", "cold plan (s)", "heavy imports",
                       "plan < 0.3 s"])
        worst = 0.0
        for profile in PROFILES:
            plan_argv = [sys.executable, "-m", "tuitrain", "plan", profile, "--runs-dir", str(runs)]
            export_argv = [sys.executable, "-m", "tuitrain", "profile", "export-accelerate", profile]
            plans, exports, colds = [], [], []
            for _ in range(args.rounds):
                gate.wait()
                plans.append(wall(plan_argv, cwd=runs.parent, env=warm, check=False))
                exports.append(wall(export_argv, cwd=runs.parent, env=warm))
                colds.append(wall(plan_argv, cwd=runs.parent, env=cold, check=False))
            heavy = {heavy_modules(["plan", profile], runs, warm),
                     heavy_modules(["profile", "export-accelerate", profile], runs, warm)}
            heavy_text = ",".join(sorted(h for h in heavy if h != "none")) or "none"
            plan_s = median(plans)
            worst = max(worst, plan_s)
            table.add([Path(profile).stem, f"{plan_s:.3f}", f"{median(exports):.3f}", f"{plan_s - median(base):.3f}",
                       f"{median(colds):.3f}", heavy_text, "yes" if plan_s < TARGET_S else "NO"])
    print(f"python -c pass: median {median(base):.3f} s over {args.rounds}")
    print(table.render())
    print(gate.summary())
    print(f"slowest plan: {worst:.3f} s (target < {TARGET_S} s): {'met' if worst < TARGET_S else 'NOT met'}")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
