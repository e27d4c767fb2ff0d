"""What a run's samples (tuitrain.runs.keeper.samples) say: its GPUs, ranks and host over its training time, and the hints
drawn from them. `usage_hints` is the one rule for the hints, shown by the monitor's GPUs tab and `tuitrain status`.
Each is given only where its figures were measured, and quotes them:

* input-bound: a rank waits for its next batch (rank.R.wait, from its heartbeat: the time from one step's end to the
  next one's begin, where the Trainer reads the batch) for a large share of its step time, while its GPUs, where it has
  any, are mostly idle: more dataloader workers, pinned memory, data tokenised once before training;
* launch-bound: the GPUs mostly idle while a rank's own process keeps a CPU core saturated and it hardly waits for its
  data: Python and kernel launches set the pace (more workers would not help): a larger batch where the GPU's
  memory peak shows room, torch_compile where it is off, fewer logging steps where each step logs;
* GPU memory far from full: the fullest of the run's GPUs peaked under half its memory: a larger batch fits (part of
  the launch-bound hint when there is one).

A rank's CPU alone tells neither: with dataloader_num_workers = 0 the rank's own process collates the batches too, so
it runs at 100 % of a core whether it waits for data or launches kernels. Pure functions of the samples (and of the
run's training arguments for the figures the hints quote)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.samples import MachineSamples, in_window

IDLE_GPU = 50.0  # % utilisation (mean over a bucket) under which the run's GPUs count as mostly idle
BUSY_RANK = 85.0  # % of one core (mean over a bucket) over which a rank's process counts as saturated
WAIT_SHARE = 30.0  # % of its step time a rank waits for its batch, at or over which it is input-bound
BOUND_SHARE = 0.5  # of the sampled training time, input- or launch-bound, before the hint is given
FULL_MEMORY = 0.5  # a GPU whose peak stayed under this share of its memory has room for a larger batch
MIN_SECONDS = 10.0  # of sampled training time before any hint is given
FEW_LOGGING_STEPS = 10  # logging every fewer steps than this: the loss is read back from the GPU that often
SUGGESTED_LOGGING_STEPS = 50


@dataclass(frozen=True)
class GpuUsage:
    machine: int
    index: int
    name: str | None
    util_mean: float | None  # %
    util_peak: float | None
    memory_peak: float | None  # MiB
    memory_total: int | None  # MiB


@dataclass(frozen=True)
class RankUsage:
    machine: int
    rank: int
    cpu_mean: float | None  # % of one core
    cpu_peak: float | None
    rss_peak: float | None  # MiB
    gpu_memory_peak: float | None  # MiB
    wait_mean: float | None = None  # % of its step time waiting for its next batch (None: not measured)


@dataclass(frozen=True)
class HostUsage:
    machine: int
    host: str
    cpu_count: int | None
    cpu_mean: float | None  # % of the machine
    memory_peak: float | None  # MiB
    memory_total: int | None  # MiB


@dataclass(frozen=True)
class Bound:
    """Where a run was input- or launch-bound: its share of the sampled training time whose figures tell (the GPUs'
    where it has any, and the ranks' wait), and the means over those stretches of the rank it names."""

    share: float
    rank: int
    wait: float  # % of that rank's step time waiting for its batch
    cpu: float | None  # % of one core, that rank's process
    util: float | None  # the GPUs' mean utilisation (None: no GPU figures)


@dataclass(frozen=True)
class Usage:
    samples: int  # samples in the window, every machine
    seconds: float  # sampled time in the window (the longest of the machines)
    training: bool  # the window is the training time (else: every sample, the run never said train_begin)
    interval: float
    gpus: tuple[GpuUsage, ...]
    ranks: tuple[RankUsage, ...]
    hosts: tuple[HostUsage, ...]
    input_bound: Bound | None = None  # None: never input-bound, or its wait never measured
    launch_bound: Bound | None = None

    @property
    def empty(self) -> bool:
        return self.samples == 0


@dataclass(frozen=True)
class Hint:
    kind: str  # "input-bound", "launch-bound" or "memory"
    text: str
    # the settings it suggests, as `--set KEY=VALUE` takes them (benchmarks/real_model_speed.py --try-advice runs each)
    settings: tuple[tuple[str, Any], ...] = ()


def _weighted_mean(values: Sequence[float | None], counts: Sequence[int], picked: Sequence[int]) -> float | None:
    total = weight = 0.0
    for i in picked:
        value = values[i]
        if value is not None:
            total += value * counts[i]
            weight += counts[i]
    return total / weight if weight else None


def _peak(values: Sequence[float | None], picked: Sequence[int]) -> float | None:
    found = [values[i] for i in picked if values[i] is not None]
    return max(v for v in found if v is not None) if found else None


class _Stretches:
    """The buckets of one kind (input- or launch-bound): their weight, and per rank named the figures' sums."""

    def __init__(self) -> None:
        self.weight = 0
        self.by_rank: dict[int, list[tuple[int, float, float | None, float | None]]] = {}

    def add(self, count: int, rank: int, wait: float, cpu: float | None, util: float | None) -> None:
        self.weight += count
        self.by_rank.setdefault(rank, []).append((count, wait, cpu, util))

    def bound(self, known: float) -> Bound | None:
        if not self.by_rank or not known:
            return None
        rank = max(self.by_rank, key=lambda r: sum(n for n, *_ in self.by_rank[r]))
        rows = self.by_rank[rank]

        def mean(column: int) -> float | None:
            pairs = [(row[0], row[column]) for row in rows if row[column] is not None]
            weight = sum(n for n, _ in pairs)
            return sum(n * float(v or 0.0) for n, v in pairs) / weight if weight else None

        return Bound(self.weight / known, rank, mean(1) or 0.0, mean(2), mean(3))


def summarise(samples: Mapping[int, MachineSamples],
              window: tuple[float | None, float | None] | None) -> Usage:
    """The run's figures over `window` ((train_begin, train_end) times; None: every sample)."""
    training = window is not None and window[0] is not None
    gpus: list[GpuUsage] = []
    ranks: list[RankUsage] = []
    hosts: list[HostUsage] = []
    count = 0
    seconds = 0.0
    known = 0.0  # sampled time whose figures tell input- from launch-bound
    inputs, launches = _Stretches(), _Stretches()
    interval = 0.0
    for machine, data in sorted(samples.items()):
        picked = in_window(data.times, window if training else None)
        counts = data.counts
        interval = max(interval, data.interval)
        count += sum(counts[i] for i in picked)
        seconds = max(seconds, sum(counts[i] for i in picked) * data.interval)
        for gpu in data.gpus:
            gpus.append(GpuUsage(machine, gpu.index, gpu.name,
                                 _weighted_mean(data.values(f"gpu.{gpu.index}.util"), counts, picked),
                                 _peak(data.values(f"gpu.{gpu.index}.util", "max"), picked),
                                 _peak(data.values(f"gpu.{gpu.index}.mem", "max"), picked), gpu.memory_total))
        rank_numbers = data.rank_numbers()
        for rank in rank_numbers:
            ranks.append(RankUsage(machine, rank, _weighted_mean(data.values(f"rank.{rank}.cpu"), counts, picked),
                                   _peak(data.values(f"rank.{rank}.cpu", "max"), picked),
                                   _peak(data.values(f"rank.{rank}.rss", "max"), picked),
                                   _peak(data.values(f"rank.{rank}.gpu_mem", "max"), picked),
                                   _weighted_mean(data.values(f"rank.{rank}.wait"), counts, picked)))
        hosts.append(HostUsage(machine, data.host, data.cpu_count,
                               _weighted_mean(data.values("host.cpu"), counts, picked),
                               _peak(data.values("host.mem", "max"), picked), data.memory_total))
        # bucket by bucket: the ranks' wait for their batches, their CPU, and the GPUs' mean utilisation
        utils = [data.values(f"gpu.{g.index}.util") for g in data.gpus]
        cpus = {rank: data.values(f"rank.{rank}.cpu") for rank in rank_numbers}
        waits = {rank: data.values(f"rank.{rank}.wait") for rank in rank_numbers}
        for i in picked:
            here = [v for v in (u[i] for u in utils) if v is not None]
            if utils and not here:
                continue  # a run on GPUs whose figures are missing here: nothing to tell
            util = sum(here) / len(here) if here else None
            waited = {rank: w[i] for rank, w in waits.items() if w[i] is not None}
            if not waited:
                continue  # no whole step seen in this bucket (or a rank of an older tuitrain): not measured
            known += counts[i]
            if util is not None and util >= IDLE_GPU:
                continue  # the GPUs are busy: neither
            rank, wait = max(waited.items(), key=lambda item: (item[1] or 0.0, -item[0]))
            if (wait or 0.0) >= WAIT_SHARE:
                inputs.add(counts[i], rank, wait or 0.0, cpus[rank][i], util)
                continue
            busiest = max(((cpu[i], r) for r, cpu in cpus.items() if cpu[i] is not None), default=None)
            if util is not None and busiest is not None and (busiest[0] or 0.0) >= BUSY_RANK:
                rank = busiest[1]
                launches.add(counts[i], rank, waited.get(rank, wait) or 0.0, busiest[0], util)
    return Usage(count, seconds, training, interval or 0.0, tuple(gpus), tuple(ranks), tuple(hosts),
                 inputs.bound(known), launches.bound(known))


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def _setting(settings: Mapping[str, Any] | None, key: str) -> Any:
    return (settings or {}).get(key)


def _listed(tries: list[str]) -> str:
    return ", ".join(tries[:-1]) + " and " + tries[-1] if len(tries) > 1 else tries[0]


def _roomy_gpu(usage: Usage) -> tuple[GpuUsage, float, int] | None:
    """The fullest of the run's GPUs whose memory was measured, its peak share, and how many were: where that share
    stayed under FULL_MEMORY (a larger batch fits); None where it did not, or nothing was measured."""
    sized = [g for g in usage.gpus if g.memory_peak is not None and g.memory_total]
    if not sized:
        return None
    fullest = max(sized, key=lambda g: (g.memory_peak or 0) / (g.memory_total or 1))
    share = (fullest.memory_peak or 0) / (fullest.memory_total or 1)
    return (fullest, share, len(sized)) if share < FULL_MEMORY else None


def _memory_figure(gpu: GpuUsage, share: float, sized: int) -> str:
    which = f" (the fullest of {sized} GPUs)" if sized > 1 else ""
    return f"GPU memory peaked at {_gib(gpu.memory_peak or 0)} of {_gib(gpu.memory_total or 0)} GiB ({share:.0%}){which}"


BATCH_KEY = "training.per_device_train_batch_size"


def _larger_batch(settings: Mapping[str, Any] | None) -> tuple[str, tuple[tuple[str, Any], ...]]:
    batch = _setting(settings, "per_device_train_batch_size")
    if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0:
        return f"{BATCH_KEY} = {batch * 2} (now {batch})", ((BATCH_KEY, batch * 2),)
    return f"a larger {BATCH_KEY}", ()


def _input_bound(found: Bound, usage: Usage, settings: Mapping[str, Any] | None, script: bool) -> Hint:
    workers = _setting(settings, "dataloader_num_workers")
    hosts = [h for h in usage.hosts if h.cpu_count]
    ranks_here = max(1, sum(1 for r in usage.ranks if hosts and r.machine == hosts[0].machine))
    cores = (hosts[0].cpu_count or 1) // ranks_here if hosts else 4
    suggest = max(2, min(8, cores - 1))
    if isinstance(workers, int) and workers >= suggest:
        suggest = workers * 2
    now = f" (now {workers})" if workers is not None else ""
    tries = [f"training.dataloader_num_workers = {suggest}{now}"]
    suggested: list[tuple[str, Any]] = [("training.dataloader_num_workers", suggest)]
    if _setting(settings, "dataloader_pin_memory") is False and usage.gpus:
        tries.append("training.dataloader_pin_memory = true")
        suggested.append(("training.dataloader_pin_memory", True))
    if script:
        tries.append("tokenising the data set once before training (datasets' map), not in the collator")
    gpus = "" if found.util is None else (
        f" while its GPU{'s were' if len(usage.gpus) > 1 else ' was'} {found.util:.0f} % busy")
    return Hint("input-bound", (
        f"input-bound: rank {found.rank} waited for its next batch {found.wait:.0f} % of its step time{gpus}, over "
        f"{found.share:.0%} of the training time: the data loader is slower than the step. Try {_listed(tries)}."),
        tuple(suggested))


def _launch_bound(found: Bound, usage: Usage, settings: Mapping[str, Any] | None) -> Hint:
    """Each piece of advice only where its figure was read: the memory peak, the run's own settings."""
    tries: list[str] = []
    suggested: list[tuple[str, Any]] = []
    roomy = _roomy_gpu(usage)
    if roomy is not None:
        said, batch = _larger_batch(settings)
        tries.append(f"{said}: fewer steps for the same data ({_memory_figure(*roomy)})")
        suggested += batch
    if _setting(settings, "torch_compile") is False:
        tries.append("training.torch_compile = true (now false): fewer, fused kernels to launch a step")
        suggested.append(("training.torch_compile", True))
    logging = _setting(settings, "logging_steps")
    if isinstance(logging, (int, float)) and not isinstance(logging, bool) and 1 <= logging < FEW_LOGGING_STEPS:
        tries.append(f"training.logging_steps = {SUGGESTED_LOGGING_STEPS} (now {logging:g}): each logged step waits "
                     "for the GPU to hand its loss back")
        suggested.append(("training.logging_steps", SUGGESTED_LOGGING_STEPS))
    gpus = "GPUs were" if len(usage.gpus) > 1 else "GPU was"
    text = (f"launch-bound: the {gpus} {found.util or 0:.0f} % busy while rank {found.rank}'s CPU ran at "
            f"{found.cpu or 0:.0f} % of a core and waited for its next batch only {found.wait:.0f} % of its step "
            f"time, over {found.share:.0%} of the training time: Python and kernel launches set the pace, not the "
            f"data (more data loader workers would not help)")
    return Hint("launch-bound", text + (f". Try {_listed(tries)}." if tries else "."), tuple(suggested))


def usage_hints(usage: Usage, settings: Mapping[str, Any] | None = None, script: bool = False) -> list[Hint]:
    """The hints the run's figures call for (see the module doc); none before MIN_SECONDS of sampled training.
    `settings`: the run's training arguments (training_args.json) for the figures quoted; `script`: the run is the
    user's own script (its data preparation is the script's, so tokenising up front is the script's to do)."""
    if not usage.training or usage.seconds < MIN_SECONDS:
        return []
    hints: list[Hint] = []
    if usage.input_bound is not None and usage.input_bound.share >= BOUND_SHARE:
        hints.append(_input_bound(usage.input_bound, usage, settings, script))
    launch = usage.launch_bound is not None and usage.launch_bound.share >= BOUND_SHARE
    if launch and usage.launch_bound is not None:
        hints.append(_launch_bound(usage.launch_bound, usage, settings))
    roomy = _roomy_gpu(usage)
    if roomy is not None and not launch:  # the launch-bound hint says it already
        said, batch = _larger_batch(settings)
        hints.append(Hint("memory", f"{_memory_figure(*roomy)}: a larger batch fits — try {said}, then watch the peak "
                                    "here.", batch))
    return hints


def training_settings(root: Path) -> dict[str, Any]:
    """The run's training arguments as rank 0 wrote them (training_args.json); {} where there are none."""
    try:
        data = json.loads(RunPaths(Path(root)).training_args.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_script(record: RunRecord) -> bool:
    from tuitrain.rundir.script_env import SCRIPT_ENV

    return SCRIPT_ENV in Fields(record).env


@dataclass(frozen=True)
class RunUsage:
    """Everything the views show of a run's samples: the figures and the hints."""

    usage: Usage
    hints: tuple[Hint, ...]
    files: tuple[str, ...]  # the samples files, relative to the run directory


def run_usage(root: Path, record: RunRecord) -> RunUsage | None:
    """A run's figures and hints, read from its run directory; None where it kept no samples (a run from before
    tuitrain kept them, or one that ended before its first sample)."""
    from tuitrain.runs.keeper.samples import read_run_samples, samples_path, training_window

    root = Path(root)
    samples = read_run_samples(root)
    if not samples:
        return None
    window = training_window(root / "events.jsonl")
    usage = summarise(samples, window)
    hints = usage_hints(usage, training_settings(root), is_script(record))
    files = tuple(str(samples_path(Path("."), m)) for m in sorted(samples))
    return RunUsage(usage, tuple(hints), files)
