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
from typing import Any, Mapping, Sequence

from tuitrain.rundir.events import parse_event
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecordError, read_record
from tuitrain.rundir.run import Fields
from tuitrain.rundir.tail import read_new_lines
from tuitrain.runs.view.live import is_metric

X_AXES = ("step", "epoch", "time")
SMOOTHINGS = (0.0, 0.6, 0.9)
THROUGHPUT = "steps/s"
SAMPLES = "samples/s"
TOKENS = "tokens/s"
# from the run's GPU/CPU samples (tuitrain.runs.keeper.samples), over its training time
GPU_UTIL = "gpu util %"  # the mean of the run's GPUs
GPU_MEMORY = "gpu memory GiB"  # the fullest of the run's GPUs (its peak in each bucket)
RANK_CPU = "rank cpu %"  # the mean of the ranks' own processes, % of one core
HARDWARE = (GPU_UTIL, GPU_MEMORY, RANK_CPU)
# the Trainer's end-of-training summary and the event's own fields are not curves
NOT_CURVES = frozenset({"event", "time", "step", "epoch", "total_flos", "train_runtime", "train_loss",
                        "train_samples_per_second", "train_steps_per_second", "num_input_tokens_seen"})
FIRST = ("loss", "eval_loss")
LAST = ("learning_rate", "grad_norm", THROUGHPUT, SAMPLES, TOKENS, *HARDWARE)


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

    def cut(self, step: float) -> None:
        """Only the points up to `step` kept: a restart goes on from that step's checkpoint."""
        kept = sum(1 for at in self.steps if at <= step)
        for values in (self.steps, self.epochs, self.times, self.values):
            del values[kept:]


def samples_per_step(run_dir: Path) -> float | None:
    """The samples one optimizer step takes across the run: per-device batch × gradient accumulation × processes,
    from the run's training_args.json (written by rank 0) and run.json; None where either is missing (a script)."""
    import json

    try:
        paths = RunPaths(run_dir)
        args = json.loads(paths.training_args.read_text())
        processes = Fields(read_record(paths)).num_processes
        samples = (int(args["per_device_train_batch_size"]) * int(args.get("gradient_accumulation_steps") or 1)
                   * processes)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RunRecordError):
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
    samples_root: Path | None = None  # the run directory whose GPU/CPU samples become curves (HARDWARE)
    _clock: list[tuple[float, float, float]] = field(default_factory=list)  # (time, step, epoch) of each log
    _window: list[float | None] = field(default_factory=lambda: [None, None])  # train_begin, train_end times
    _samples_seen: tuple[Any, ...] | None = None

    def poll(self) -> bool:
        """Fold in the complete lines appended since the last poll; True when there were any."""
        lines = read_new_lines(self.events, self.offset)
        for line in lines:
            self.offset += len(line)
            event = parse_event(line)
            if event is not None:
                self.fold(event)
        hardware = self.poll_samples(bool(lines))
        return bool(lines) or hardware

    def poll_samples(self, events_changed: bool) -> bool:
        """The HARDWARE curves again when the run's samples files were replaced (or new logs move the steps)."""
        if self.samples_root is None:
            return False
        from tuitrain.runs.keeper.samples import read_run_samples

        samples = read_run_samples(self.samples_root)
        seen = tuple((m, s.samples, s.last) for m, s in sorted(samples.items()))
        if seen == self._samples_seen and not (events_changed and samples):
            return False
        self._samples_seen = seen
        for name, (times, values) in hardware_series(samples, (self._window[0], self._window[1])).items():
            curve = Curve()
            for when, value in zip(times, values, strict=True):
                step, epoch = self._step_at(when)
                curve.add(step, epoch, when, value)
            if len(curve):
                self.curves[name] = curve
        return bool(samples)

    def _step_at(self, when: float) -> tuple[float, float]:
        """The step (and epoch) at a time, between the training logs around it."""
        import bisect

        clock = self._clock
        if not clock:
            return 0.0, math.nan
        at = bisect.bisect_left(clock, (when, -math.inf, -math.inf))
        if at <= 0:
            return clock[0][1], clock[0][2]
        if at >= len(clock):
            return clock[-1][1], clock[-1][2]
        (t0, s0, e0), (t1, s1, e1) = clock[at - 1], clock[at]
        share = (when - t0) / (t1 - t0) if t1 > t0 else 1.0
        return s0 + (s1 - s0) * share, e0 + (e1 - e0) * share

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
            if self._window[0] is None:
                self._window[0] = time
            self._clock.append((time, step or 0.0, self._epoch))
        elif kind == "train_end":
            self._window[1] = time
        elif kind == "restart" and step is not None:  # a restarted run goes on from its checkpoint's step
            for curve in self.curves.values():
                curve.cut(step)
        elif kind == "log" and step is not None and (not self._clock or time >= self._clock[-1][0]):
            self._clock.append((time, step, self._epoch))
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


def hardware_series(samples: Mapping[int, Any], window: tuple[float | None, float | None]
                    ) -> dict[str, tuple[list[float], list[float]]]:
    """The HARDWARE curves of a run's samples (machine rank → runs.keeper.samples.MachineSamples) over its training time
    (every bucket before train_begin is known): name → (times, values). The run's machines are put on the times of
    the one with the most buckets, each read at its bucket nearest that time."""
    import bisect

    from tuitrain.runs.keeper.samples import in_window

    machines = [m for _, m in sorted(samples.items()) if m.times]
    if not machines:
        return {}
    main = max(machines, key=lambda m: len(m.times))
    picked = in_window(main.times, window if window[0] is not None else None)
    out: dict[str, tuple[list[float], list[float]]] = {}

    def at(machine: Any, when: float) -> int:
        i = bisect.bisect_left(machine.times, when)
        if i >= len(machine.times) or (i > 0 and when - machine.times[i - 1] < machine.times[i] - when):
            i -= 1
        return i

    for name in HARDWARE:
        times: list[float] = []
        values: list[float] = []
        for i in picked:
            when = main.times[i]
            found: list[float] = []
            for machine in machines:
                j = i if machine is main else at(machine, when)
                if name == GPU_UTIL:
                    found += [v for g in machine.gpus if (v := machine.values(f"gpu.{g.index}.util")[j]) is not None]
                elif name == GPU_MEMORY:
                    found += [v / 1024 for g in machine.gpus
                              if (v := machine.values(f"gpu.{g.index}.mem", "max")[j]) is not None]
                else:
                    found += [v for r in machine.rank_numbers()
                              if (v := machine.values(f"rank.{r}.cpu")[j]) is not None]
            if found:
                times.append(when)
                values.append(max(found) if name == GPU_MEMORY else sum(found) / len(found))
        if values:
            out[name] = (times, values)
    return out


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
