"""Where a short run's wall time goes, this tree against a baseline tree, taking turns (issue 28).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/run_phases.py --baseline-src DIR [--rounds 5] [--steps 8]

DIR is another checkout's folder that holds `tuitrain/` (e.g. `git worktree add /tmp/base COMMIT`): its
code runs through PYTHONPATH in the same venv, so the two differ only by the code. Each round runs
`tuitrain run demo` with each tree (order alternating) and reads the phases from the run directory
(real_model_speed.tuitrain_phases): the CLI until the run exists, the launch until the rank
starts, the rank's setup, training, the rank's exit after training, the end being recorded, the
CLI's exit. Medians per phase, and this tree's wall time over the baseline's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BIN, QuietGate, Table, bench_env, machine_line, median
from real_model_speed import tuitrain_phases


def one_run(src: Path | None, runs: Path, steps: int) -> tuple[float, dict[str, float]]:
    env = bench_env(TUITRAIN_RUNS_DIR=str(runs))
    if src is not None:
        env["PYTHONPATH"] = str(src)
    runs.mkdir(parents=True, exist_ok=True)
    before = set(runs.iterdir())
    started = time.time()
    done = subprocess.run([str(BIN / "python"), "-m", "tuitrain", "run", "demo", "--set", f"training.max_steps={steps}",
                           "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no"],
                          env=env, capture_output=True, text=True, cwd=runs.parent, timeout=900)
    exited = time.time()
    if done.returncode != 0:
        raise RuntimeError(done.stdout[-1000:] + done.stderr[-1000:])
    (run,) = [p for p in runs.iterdir() if p not in before]
    return exited - started, tuitrain_phases(run, started, exited)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    if not (args.baseline_src / "tuitrain" / "__init__.py").is_file():
        print(f"{args.baseline_src} holds no tuitrain/ package")
        return 2
    print(machine_line())
    gate = QuietGate()
    trees = {"this tree": None, "baseline": args.baseline_src.resolve()}
    results: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="tuitrain-phases-") as tmp:
        for round_no in range(args.rounds):
            order = list(trees) if round_no % 2 == 0 else list(reversed(trees))
            for name in order:
                gate.wait()
                wall, phases = one_run(trees[name], Path(tmp) / name.replace(" ", "-") / "runs", args.steps)
                results[name].append((wall, phases))
                print(f"round {round_no + 1} {name:<10} wall {wall:5.2f}s  " +
                      ", ".join(f"{phase} {seconds:.2f}" for phase, seconds in phases.items()), flush=True)
    phases = list(results["this tree"][0][1])
    table = Table(["phase (median s)", *trees])
    for phase in phases:
        table.add([phase, *(f"{median([p[phase] for _, p in results[name]]):.2f}" for name in trees)])
    table.add(["whole wall time", *(f"{median([w for w, _ in results[name]]):.2f}" for name in trees)])
    print()
    print(table.render())
    ratios = [a / b for (a, _), (b, _) in zip(results["this tree"], results["baseline"], strict=True)]
    print(f"wall time, this tree / baseline, per round: {' '.join(f'{r:.3f}' for r in ratios)} (median {median(ratios):.3f})")
    print(gate.summary())
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
