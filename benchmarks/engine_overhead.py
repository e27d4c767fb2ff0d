"""Training speed of the demo model through tuitrain's engine vs a plain transformers.Trainer.

    .venv/bin/python benchmarks/engine_overhead.py [--steps 200] [--rounds 3]

Both sides train the built-in demo profile (tiny BERT, generated sentiment data) in this one
process, on the same data, the same initial weights and the same TrainingArguments:

  ours   tuitrain.engine.main.build_trainer(...): EngineTrainer + EventsCallback + ControlCallback,
         writing events.jsonl into a temporary run directory (exactly what a rank builds)
  plain  transformers.Trainer(model, args, train_dataset, data_collator, processing_class), no callbacks

The two alternate `--rounds` times each, the order swapped every round (ours, plain, plain, ours,
...: the side measured first in a round has no standing advantage or handicap); the headline figure is
steps per second of `trainer.train()` wall time, median over the rounds. Target: ours/plain >= 0.97.

This small shared machine is noisy: one 200-step run can be 30% slower than the next with the
same computation (both sides compute bit-identical losses). So the script also reports two figures
that noise moves much less:
  step interval  time between consecutive step ends (a clock callback added to both sides alike),
                 pooled over all rounds: the median and the 10th percentile (an uncontended step)
  direct cost    our callbacks' on_step_end / on_log timed in a loop (ours minus plain's callback
                 handler), turned into an estimated ratio against plain's median step

Defaults to one torch thread (--threads 0: torch's choice, 2 here): with 2 threads on 2 shared
cores this tiny model runs slower and the rounds scatter by +-30%; our per-step cost is Python
work that does not depend on the thread count, so one thread (shorter steps) is the stricter test.
Before each measurement the script waits (bounded) for other processes to go quiet, and does a
measurement again when other processes took more than --max-others of the CPU meanwhile.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CpuWatch, QuietGate, Table, machine_line, silenced

TARGET_RATIO = 0.97


def demo_profile(steps: int, logging_steps: int) -> dict:
    from tuitrain.profile import builtin_profile_path, load_profile, settings_with_defaults

    overrides = [
        f"training.max_steps={steps}",
        f"training.logging_steps={logging_steps}",
        'training.eval_strategy="no"',
        'training.save_strategy="no"',
        'training.report_to="none"',
        "training.disable_tqdm=true",
    ]
    return settings_with_defaults(load_profile(builtin_profile_path("demo"), overrides))


def new_run_dir(root: Path, profile: dict):
    """A run directory as `tuitrain run` makes it (run.json, logs/, control/), without a launch."""
    from tuitrain.rundir.record import new_record, write_record
    from tuitrain.runs.start.new_run import make_run_dir

    paths = make_run_dir(root / "runs", "demo")
    paths.logs.mkdir()
    paths.control.mkdir()
    record = new_record(
        paths.id, "demo", num_processes=1, output_dir=str(paths.default_output_dir), cwd=str(root),
        accelerator="cpu", max_steps=profile["training"]["max_steps"],
    )
    write_record(paths, record)
    return paths, record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--logging-steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=8,
                        help="rounds of (ours, plain), the order swapped every round (an even number balances it)")
    parser.add_argument("--warmup-steps", type=int, default=30, help="one untimed run of each side first")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads, both sides (default 1: on 2 shared cores, 2 threads are slower for this "
                             "tiny model and far noisier; 0 = torch's own choice)")
    parser.add_argument("--quiet-wait", type=float, default=20.0,
                        help="seconds to wait, before each measurement, for other processes to go quiet")
    parser.add_argument("--wait-budget", type=float, default=90.0, help="seconds of such waiting in all")
    parser.add_argument("--max-others", type=float, default=0.1,
                        help="a measurement during which other processes used more of the CPU than this is done again")
    parser.add_argument("--retries", type=int, default=2)
    opts = parser.parse_args()

    import torch
    import transformers
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback

    from tuitrain.engine.main import build_trainer, training_arguments

    class StepClock(TrainerCallback):
        """Added last to both sides: the time between consecutive step ends."""

        def __init__(self) -> None:
            self.intervals: list[float] = []
            self.last: float | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.last = None

        def on_step_end(self, args, state, control, **kwargs):
            now = time.perf_counter()
            if self.last is not None:
                self.intervals.append(now - self.last)
            self.last = now

    if opts.threads:
        torch.set_num_threads(opts.threads)
    transformers.logging.set_verbosity_error()
    gate = QuietGate(max_wait=opts.quiet_wait, budget=opts.wait_budget)
    tmp = Path(tempfile.mkdtemp(prefix="tuitrain-bench-engine-"))
    try:
        profile = demo_profile(opts.steps, opts.logging_steps)
        paths, record = new_run_dir(tmp, profile)

        # One build of our trainer gives the tokenizer, the tokenized data and the initial weights
        # that every round of both sides starts from.
        with silenced():
            first = build_trainer(paths, record, profile, rank=0, world_size=1)
        tokenizer, train_set = first.processing_class, first.train_dataset
        initial = copy.deepcopy(first.model.state_dict())

        def build_ours(steps: int):
            trainer = build_trainer(paths, record, profile, rank=0, world_size=1)
            trainer.args.max_steps = steps
            trainer.model.load_state_dict(initial)
            return trainer

        def build_plain(steps: int):
            args = training_arguments(profile, str(tmp / "plain-output"), 1)
            args.max_steps = steps
            model = copy.deepcopy(first.model)
            model.load_state_dict(initial)
            return Trainer(model=model, args=args, train_dataset=train_set, processing_class=tokenizer,
                           data_collator=DataCollatorWithPadding(tokenizer))

        sides = (("ours", build_ours), ("plain", build_plain))
        noisy = {"retried": 0, "kept": 0}

        def measure(build, steps: int) -> tuple[float, float, list[float]]:
            """One timed train(); done again (up to --retries times, while the waiting budget lasts)
            when other processes took more than --max-others of the CPU meanwhile."""
            for attempt in range(opts.retries + 1):
                with silenced():
                    trainer = build(steps)
                    clock = StepClock()
                    trainer.add_callback(clock)
                gate.wait()
                watch = CpuWatch()
                with silenced():
                    start = time.perf_counter()
                    out = trainer.train()
                    elapsed = time.perf_counter() - start
                others = watch.others()
                assert trainer.state.global_step == steps, trainer.state.global_step
                if others <= opts.max_others:
                    break
                if attempt < opts.retries and not gate.exhausted:
                    noisy["retried"] += 1
                    print(f"  (other processes used {others:.0%} of the CPU during this measurement: again)", flush=True)
                else:
                    noisy["kept"] += 1
                    print(f"  (other processes used {others:.0%} of the CPU; kept)", flush=True)
                    break
            return steps / elapsed, out.training_loss, clock.intervals

        if opts.warmup_steps:
            for name, build in sides:
                rate, _, _ = measure(build, opts.warmup_steps)
                print(f"warm-up      {name:5s} {rate:7.2f} steps/s ({opts.warmup_steps} steps, not counted)", flush=True)
        results: dict[str, list[float]] = {"ours": [], "plain": []}
        intervals: dict[str, list[float]] = {"ours": [], "plain": []}
        losses: dict[str, list[float]] = {"ours": [], "plain": []}
        for n in range(opts.rounds):
            for name, build in (sides if n % 2 == 0 else sides[::-1]):
                rate, loss, steps_taken = measure(build, opts.steps)
                results[name].append(rate)
                intervals[name] += steps_taken
                losses[name].append(loss)
                print(f"round {n + 1}/{opts.rounds}  {name:5s} {rate:7.2f} steps/s  (median step "
                      f"{statistics.median(steps_taken) * 1e3:.2f} ms; train loss {loss:.4f})", flush=True)

        # Our per-step work, timed directly: the callback handler's on_step_end (every step) and
        # on_log (every logging_steps), ours minus plain's.
        per_call: dict[str, dict[str, float]] = {}
        with silenced():
            built = {"ours": build_ours(opts.steps), "plain": build_plain(opts.steps)}
        logs = {"loss": 0.6931, "grad_norm": 0.1, "learning_rate": 0.003, "epoch": 0.5}

        def events(handler: Any, args: Any, state: Any, control: Any) -> list[tuple[str, Callable[[], Any], int]]:
            """The two calls to time, bound to one trainer's handler (a closure in the loop would see the last one's)."""
            return [("on_step_end", lambda: handler.on_step_end(args, state, control), 5000),
                    ("on_log", lambda: handler.on_log(args, state, control, dict(logs)), 1000)]

        for name, trainer in built.items():
            trainer.state.global_step = 1
            per_call[name] = {}
            for event, call, n_calls in events(trainer.callback_handler, trainer.args, trainer.state, trainer.control):
                best = float("inf")
                with silenced():
                    for _ in range(5):
                        start = time.perf_counter()
                        for _ in range(n_calls):
                            call()
                        best = min(best, (time.perf_counter() - start) / n_calls)
                per_call[name][event] = best
        extra_step = per_call["ours"]["on_step_end"] - per_call["plain"]["on_step_end"]
        extra_log = per_call["ours"]["on_log"] - per_call["plain"]["on_log"]
        extra_per_step = extra_step + extra_log / opts.logging_steps
        plain_step = statistics.median(intervals["plain"])
        estimated = plain_step / (plain_step + extra_per_step)

        def p10(values: list[float]) -> float:
            return statistics.quantiles(values, n=10)[0]

        ratio = statistics.median(results["ours"]) / statistics.median(results["plain"])
        paired = [o / p for o, p in zip(results["ours"], results["plain"], strict=True)]
        step_ratio = statistics.median(intervals["plain"]) / statistics.median(intervals["ours"])
        p10_ratio = p10(intervals["plain"]) / p10(intervals["ours"])
        print()
        print(f"engine_overhead: demo model (tiny BERT, 24k parameters, batch 32, max_length 24), {opts.steps} steps x "
              f"{opts.rounds} rounds per side, logging_steps={opts.logging_steps}, no eval, no save, "
              f"torch threads {torch.get_num_threads()}, torch {torch.__version__}, transformers {transformers.__version__}")
        print(machine_line())
        table = Table(["trainer", "median steps/s", "min", "max", "median step ms", "p10 step ms", "rounds"])
        for name in ("plain", "ours"):
            r = results[name]
            table.add([name, f"{statistics.median(r):.2f}", f"{min(r):.2f}", f"{max(r):.2f}",
                       f"{statistics.median(intervals[name]) * 1e3:.2f}", f"{p10(intervals[name]) * 1e3:.2f}", str(len(r))])
        print(table.render())
        table = Table(["ratio ours/plain (speed)", "value", f">= {TARGET_RATIO}"])
        for label, value in (
            ("median wall-time steps/s (headline)", ratio),
            ("median of the per-round ratios (each round's two runs side by side)", statistics.median(paired)),
            ("median step interval", step_ratio),
            ("p10 step interval", p10_ratio),
            ("estimated from our callbacks' direct cost", estimated),
        ):
            table.add([label, f"{value:.3f}" if value < 0.9995 or value > 1.0005 else f"{value:.4f}",
                       "MET" if value >= TARGET_RATIO else "NOT MET"])
        print(table.render())
        print(f"per round (wall): {', '.join(f'{x:.3f}' for x in paired)}")
        print(f"our callbacks, timed directly: on_step_end +{extra_step * 1e6:.1f} us per step, on_log "
              f"+{extra_log * 1e6:.1f} us per log -> +{extra_per_step * 1e6:.1f} us per step = "
              f"{extra_per_step / plain_step:.2%} of plain's median {plain_step * 1e3:.2f} ms step")
        same = all(abs(a - b) < 1e-4 for a, b in zip(losses["ours"], losses["plain"], strict=True))
        print(f"same training loss on both sides: {'yes' if same else 'NO'} "
              f"(ours {losses['ours'][0]:.5f}, plain {losses['plain'][0]:.5f})")
        print(gate.summary() + f"; measurements redone because others used > {opts.max_others:.0%} CPU: "
              f"{noisy['retried']}, kept noisy: {noisy['kept']}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
