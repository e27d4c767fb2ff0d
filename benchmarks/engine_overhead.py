"""Training speed of the demo model through tuitrain's engine vs a plain transformers.Trainer.

    .venv/bin/python benchmarks/engine_overhead.py [--steps 200] [--rounds 3]

Both sides train the built-in demo profile (tiny BERT, generated sentiment data) in this one
process, on the same data, the same initial weights and the same TrainingArguments:

  ours   tuitrain.engine.main.build_trainer(...): EngineTrainer + EventsCallback + ControlCallback,
         writing events.jsonl into a temporary run directory (exactly what a rank builds)
  plain  transformers.Trainer(model, args, train_dataset, data_collator, processing_class), no callbacks

The two alternate (ours, plain, ours, plain, ...) `--rounds` times each; the figure is steps per
second of `trainer.train()` wall time, median over the rounds. Target: ours/plain >= 0.97.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Table, machine_line  # noqa: E402

TARGET_RATIO = 0.97


def demo_profile(steps: int, logging_steps: int) -> dict:
    from tuitrain.profile import builtin_profile_path, load_profile, profile_with_defaults

    overrides = [
        f"training.max_steps={steps}",
        f"training.logging_steps={logging_steps}",
        'training.eval_strategy="no"',
        'training.save_strategy="no"',
        'training.report_to="none"',
        "training.disable_tqdm=true",
    ]
    return profile_with_defaults(load_profile(builtin_profile_path("demo"), overrides))


def new_run_dir(root: Path, profile: dict):
    """A run directory as `tuitrain run` makes it (run.json, logs/, control/), without a launch."""
    from tuitrain.runs.record import new_record, write_record
    from tuitrain.runs.start import make_run_dir

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
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()

    import torch
    import transformers
    from transformers import DataCollatorWithPadding, Trainer

    from tuitrain.engine.main import build_trainer, training_arguments

    transformers.logging.set_verbosity_error()
    tmp = Path(tempfile.mkdtemp(prefix="tuitrain-bench-engine-"))
    try:
        profile = demo_profile(opts.steps, opts.logging_steps)
        paths, record = new_run_dir(tmp, profile)

        # One build of our trainer gives the tokenizer, the tokenized data and the initial weights
        # that every round of both sides starts from.
        ours = build_trainer(paths, record, profile, rank=0, world_size=1)
        tokenizer, train_set = ours.processing_class, ours.train_dataset
        initial = copy.deepcopy(ours.model.state_dict())

        def build_ours():
            trainer = build_trainer(paths, record, profile, rank=0, world_size=1)
            trainer.model.load_state_dict(initial)
            return trainer

        def build_plain():
            args = training_arguments(profile, str(tmp / "plain-output"), 1)
            model = copy.deepcopy(ours.model)
            model.load_state_dict(initial)
            return Trainer(model=model, args=args, train_dataset=train_set, processing_class=tokenizer,
                           data_collator=DataCollatorWithPadding(tokenizer))

        def timed(trainer) -> tuple[float, float]:
            start = time.perf_counter()
            out = trainer.train()
            wall = time.perf_counter() - start
            assert trainer.state.global_step == opts.steps, trainer.state.global_step
            return opts.steps / wall, out.training_loss

        results: dict[str, list[float]] = {"ours": [], "plain": []}
        losses: dict[str, list[float]] = {"ours": [], "plain": []}
        for n in range(opts.rounds):
            for name, build in (("ours", build_ours), ("plain", build_plain)):
                trainer = build()
                rate, loss = timed(trainer)
                results[name].append(rate)
                losses[name].append(loss)
                print(f"round {n + 1}/{opts.rounds} {name:5s} {rate:7.2f} steps/s  (train loss {loss:.4f})", flush=True)
                del trainer

        events = [line for line in paths.events.read_text().splitlines() if '"event": "log"' in line]
        ours_med, plain_med = statistics.median(results["ours"]), statistics.median(results["plain"])
        ratio = ours_med / plain_med
        print()
        print(f"engine_overhead: demo model, {opts.steps} steps, logging_steps={opts.logging_steps}, "
              f"no eval, no save, torch threads {torch.get_num_threads()}")
        print(machine_line())
        table = Table(["trainer", "median steps/s", "min", "max", "rounds"])
        for name in ("plain", "ours"):
            r = results[name]
            table.add([name, f"{statistics.median(r):.2f}", f"{min(r):.2f}", f"{max(r):.2f}", str(len(r))])
        print(table.render())
        print(f"ratio ours/plain (median): {ratio:.3f}   target >= {TARGET_RATIO}: {'MET' if ratio >= TARGET_RATIO else 'NOT MET'}")
        same = all(abs(a - b) < 1e-4 for a, b in zip(losses["ours"], losses["plain"]))
        print(f"same training loss on both sides: {'yes' if same else 'NO'} "
              f"(ours {losses['ours'][0]:.5f}, plain {losses['plain'][0]:.5f}); "
              f"events.jsonl log lines written by ours: {len(events)}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
