"""What the per-rank heartbeat costs a training run (issue 26): steps/s of the same Trainer run with tuitrain's
HeartbeatCallback (and its writer thread) against without it, taking turns, in one process on the CPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/heartbeat_cost.py [--rounds 7] [--steps 400] [--hidden 256]

A small MLP keeps each step short (a few ms), so the heartbeat's share is as large as it gets on real runs, whose
steps are longer. Also what the heartbeat adds to a step on the training thread, measured apart from the steps'
noise: the Trainer's four callback calls a step to HeartbeatCallback (through its CallbackHandler, as in training)
with its two beats, against the same calls without it; and one `beat` call alone. The goal is a ratio of at least
0.995.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import QuietGate, Table, machine_line, median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_trainer(steps: int, hidden: int, out: Path, callbacks: list) -> object:
    import torch
    from transformers import Trainer, TrainingArguments

    class Mlp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(32, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

        def forward(self, x, y):
            return {"loss": ((self.net(x).squeeze(-1) - y) ** 2).mean()}

    class Rows(torch.utils.data.Dataset):
        def __init__(self) -> None:
            self.x = torch.randn(4096, 32, generator=torch.Generator().manual_seed(0))

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i):
            return {"x": self.x[i], "y": self.x[i].sum()}

    args = TrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=16, logging_steps=10**9,
                             save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, seed=0)
    return Trainer(model=Mlp(), args=args, train_dataset=Rows(), callbacks=callbacks)


def steps_per_second(steps: int, hidden: int, folder: Path, heartbeat: bool) -> float:
    """Steps/s from the end of the first tenth of the steps to the end of the last: the training loop's throughput,
    without the run's fixed start and end (the heartbeat's last write, at the end, is once a run, not a step)."""
    from transformers import TrainerCallback

    from tuitrain.engine.callbacks import HeartbeatCallback
    from tuitrain.engine.rank_io import Heartbeat
    from tuitrain.rundir.layout import RunPaths

    ends: list[float] = []

    class StepEnds(TrainerCallback):  # first in the list: the same on both sides
        def on_step_end(self, args, state, control, **kwargs):
            ends.append(time.perf_counter())

    callbacks = [StepEnds(), *([HeartbeatCallback(Heartbeat(RunPaths(folder), 0))] if heartbeat else [])]
    trainer = make_trainer(steps, hidden, folder / "out", callbacks)
    trainer.train()  # type: ignore[attr-defined]
    first = steps // 10
    return (steps - 1 - first) / (ends[-1] - ends[first])


def callback_seconds(steps: int, folder: Path) -> tuple[float, float]:
    """A step's callback calls through the Trainer's handler (step begin, before and after the optimizer, step end),
    without the heartbeat's callback and with it: the best of 7 tries each, taking turns, each `steps` steps long."""
    from tuitrain.engine.callbacks import HeartbeatCallback
    from tuitrain.engine.rank_io import Heartbeat
    from tuitrain.rundir.layout import RunPaths

    def one_try(trainer: Any) -> float:
        handler, args, state, control = trainer.callback_handler, trainer.args, trainer.state, trainer.control
        start = time.perf_counter()
        for step in range(steps):
            state.global_step = step
            control = handler.on_step_begin(args, state, control)
            control = handler.on_pre_optimizer_step(args, state, control)
            control = handler.on_optimizer_step(args, state, control)
            control = handler.on_step_end(args, state, control)
        return (time.perf_counter() - start) / steps

    without = make_trainer(steps, 32, folder / "without", [])
    with_it = make_trainer(steps, 32, folder / "with", [HeartbeatCallback(Heartbeat(RunPaths(folder), 0))])
    tries = [(one_try(without), one_try(with_it)) for _ in range(7)]
    return min(t[0] for t in tries), min(t[1] for t in tries)


def beat_seconds(calls: int, folder: Path) -> float:
    from tuitrain.engine.rank_io import Heartbeat
    from tuitrain.rundir.layout import PHASE_BETWEEN, PHASE_STEP, RunPaths

    beat = Heartbeat(RunPaths(folder), 0).beat
    start = time.perf_counter()
    for step in range(calls // 2):
        beat(PHASE_STEP, step)
        beat(PHASE_BETWEEN, step)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()
    print(machine_line())
    gate = QuietGate()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        steps_per_second(20, args.hidden, root / "warm", heartbeat=False)  # imports, first compile of each kernel
        table = Table(["round", "without (steps/s)", "with (steps/s)", "ratio"])
        ratios, without_all, with_all = [], [], []
        for n in range(args.rounds):
            gate.wait()
            order = (False, True) if n % 2 == 0 else (True, False)
            got = {on: steps_per_second(args.steps, args.hidden, root / f"r{n}-{int(on)}", on) for on in order}
            ratios.append(got[True] / got[False])
            without_all.append(got[False])
            with_all.append(got[True])
            table.add([str(n + 1), f"{got[False]:.1f}", f"{got[True]:.1f}", f"{ratios[-1]:.4f}"])
        gate.wait()
        per_beat = beat_seconds(200_000, root / "beat")
        handler_without, handler_with = callback_seconds(20_000, root / "calls")
    print(table.render())
    step_ms = 1000 / median(without_all)
    print(f"median: without {median(without_all):.1f} steps/s ({step_ms:.1f} ms a step), with {median(with_all):.1f}; "
          f"ratio of medians {median(with_all) / median(without_all):.4f}, median of paired ratios {median(ratios):.4f}")
    print(f"one beat: {per_beat * 1e6:.2f} µs; 2 a step = {2 * per_beat * 1e3 / step_ms:.4%} of a {step_ms:.1f} ms step")
    added = handler_with - handler_without
    print(f"a step's callback calls: without {handler_without * 1e6:.2f} µs, with the heartbeat {handler_with * 1e6:.2f} "
          f"µs: {added * 1e6:.2f} µs added a step = {added * 1e3 / step_ms:.4%} of a {step_ms:.1f} ms step "
          f"(a ratio of {step_ms / (step_ms + added * 1e3):.4f})")
    print(gate.summary())


if __name__ == "__main__":
    main()
