"""Curves of a run for the compare screen: every numeric metric of its events.jsonl, each point
with its step, epoch and time, read incrementally (as `live.EventsTail` reads), and the training
throughput (steps/s between consecutive training logs; samples/s where the run's batch is known, from its
training_args.json and record; tokens/s where the Trainer logs num_input_tokens_seen). Smoothing and the axes are functions of
the data: nothing here draws."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from tuitrain.runs.events import parse_event
from tuitrain.runs.live import is_metric
from tuitrain.runs.tail import read_new_lines

X_AXES = ("step", "epoch", "time")
SMOOTHINGS = (0.0, 0.6, 0.9)
THROUGHPUT = "steps/s"
SAMPLES = "samples/s"
TOKENS = "tokens/s"
# the Trainer's end-of-training summary and the event's own fields are not curves
NOT_CURVES = frozenset({"event", "time", "step", "epoch", "total_flos", "train_runtime", "train_loss",
                        "train_samples_per_second", "train_steps_per_second", "num_input_tokens_seen"})
FIRST = ("loss", "eval_loss")
LAST = ("learning_rate", "grad_norm", THROUGHPUT, SAMPLES, TOKENS)


def _value(value: Any) -> float | None:
    """A number of an event ("nan"/"inf" as events.jsonl writes a non-finite float); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None


class Curve:
    """One metric's points in flat arrays (epoch nan where the event named none)."""

    __slots__ = ("steps", "epochs", "times", "values")

    def __init__(self) -> None:
        self.steps = array("d")
        self.epochs = array("d")
        self.times = array("d")
        self.values = array("d")

    def add(self, step: float, epoch: float, time: float, value: float) -> None:
        self.steps.append(step)
        self.epochs.append(epoch)
        self.times.append(time)
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.values)


def samples_per_step(run_dir: Path) -> float | None:
    """The samples one optimizer step takes across the run: per-device batch × gradient accumulation × processes,
    from the run's training_args.json (written by rank 0) and run.json; None where either is missing (a script)."""
    import json

    try:
        args = json.loads((run_dir / "training_args.json").read_text())
        record = json.loads((run_dir / "run.json").read_text())
        samples = (int(args["per_device_train_batch_size"]) * int(args.get("gradient_accumulation_steps") or 1)
                   * int(record.get("num_processes") or 1))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return float(samples) if samples > 0 else None


@dataclass
class RunCurves:
    """A run's curves, followed from the last offset of its events.jsonl."""

    events: Path
    offset: int = 0
    curves: dict[str, Curve] = field(default_factory=dict)
    begin: float | None = None  # the time of its first event: time 0 on the time axis
    _epoch: float = math.nan
    _anchor: tuple[float, float] | None = None  # (time, step) of the last training log or train_begin
    samples_per_step: float | None = None  # the run's global batch: samples/s beside steps/s
    _tokens: tuple[float, float] | None = None  # (time, num_input_tokens_seen) of the last log that had it

    def poll(self) -> bool:
        """Fold in the complete lines appended since the last poll; True when there were any."""
        lines = read_new_lines(self.events, self.offset)
        for line in lines:
            self.offset += len(line)
            event = parse_event(line)
            if event is not None:
                self.fold(event)
        return bool(lines)

    def _add(self, name: str, step: float, time: float, value: float) -> None:
        self.curves.setdefault(name, Curve()).add(step, self._epoch, time, value)

    def fold(self, event: dict[str, Any]) -> None:
        kind, step, time = event.get("event"), _value(event.get("step")), _value(event.get("time"))
        if time is None:
            return
        if self.begin is None:
            self.begin = time
        epoch = _value(event.get("epoch"))
        if epoch is not None:
            self._epoch = epoch
        if kind == "train_begin":
            self._anchor = (time, step or 0.0)
        if step is None or kind not in ("log", "evaluate"):
            return
        for key, raw in event.items():
            value = _value(raw)
            if value is None or key in NOT_CURVES:
                continue
            if (kind == "evaluate" and is_metric(key)) or (kind == "log" and not key.startswith("eval_")):
                self._add(key, step, time, value)
        if kind == "log" and "loss" in event:
            if self._anchor is not None and time > self._anchor[0] and step > self._anchor[1]:
                steps_per_second = (step - self._anchor[1]) / (time - self._anchor[0])
                self._add(THROUGHPUT, step, time, steps_per_second)
                if self.samples_per_step:
                    self._add(SAMPLES, step, time, steps_per_second * self.samples_per_step)
            self._anchor = (time, step)
        tokens = _value(event.get("num_input_tokens_seen")) if kind == "log" else None
        if tokens is not None:
            if self._tokens is not None and time > self._tokens[0] and tokens >= self._tokens[1]:
                self._add(TOKENS, step, time, (tokens - self._tokens[1]) / (time - self._tokens[0]))
            self._tokens = (time, tokens)


def metric_order(names: Sequence[str] | set[str]) -> list[str]:
    """The training loss and eval loss first, the other eval metrics, then the rest, throughput last."""
    def key(name: str) -> tuple[int, int, str]:
        if name in FIRST:
            return (0, FIRST.index(name), name)
        if name in LAST:
            return (3, LAST.index(name), name)
        return (1 if name.startswith("eval_") else 2, 0, name)

    return sorted(set(names), key=key)


def matching(names: Sequence[str], text: str) -> list[str]:
    """The names containing every word of `text` (case-insensitive), in their order."""
    words = text.lower().split()
    return [n for n in names if all(w in n.lower() for w in words)]


def x_values(curve: Curve, axis: str, begin: float | None) -> Sequence[float]:
    """The curve's x: its steps, its epochs, or seconds since the run's first event."""
    if axis == "step":
        return curve.steps
    if axis == "epoch":
        return curve.epochs
    origin = begin if begin is not None else (curve.times[0] if len(curve) else 0.0)
    return [t - origin for t in curve.times]


def ema(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's smoothing: an exponential moving average, debiased at the start so that the
    first points are not pulled towards zero. A non-finite value stays (a gap) and is not folded in."""
    if weight <= 0:
        return list(values)
    out: list[float] = []
    last, count = 0.0, 0
    isfinite = math.isfinite
    for v in values:
        if not isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        count += 1
        out.append(last / (1 - weight ** count))
    return out


def log10_values(values: Sequence[float]) -> list[float]:
    """log10 of each value; nan (a gap) where there is none (zero, negative, non-finite)."""
    log10 = math.log10
    return [log10(v) if v > 0 and math.isfinite(v) else math.nan for v in values]
