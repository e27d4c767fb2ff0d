"""What a run's samples (tuitrain.runs.keeper.samples) say: its GPUs, ranks and host over its training time, and the hints
drawn from them. `usage_hints` is the one rule for both hints, shown by the monitor's GPUs tab and `tuitrain status`:

* input-bound: the run's GPUs mostly idle while a rank's own process keeps a CPU core saturated (the GPU waits for
  batches): more dataloader workers, pinned memory, data tokenised once before training;
* GPU memory far from full: the fullest of the run's GPUs peaked under half its memory: a larger batch fits.

Pure functions of the samples (and of the run's training arguments for the figures the hints quote)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.keeper.samples import MachineSamples, in_window

IDLE_GPU = 50.0  # % utilisation (mean over a bucket) under which the run's GPUs count as mostly idle
BUSY_RANK = 85.0  # % of one core (mean over a bucket) over which a rank's process counts as saturated
BOUND_SHARE = 0.5  # of the sampled training time, input-bound, before the hint is given
FULL_MEMORY = 0.5  # a GPU whose peak stayed under this share of its memory has room for a larger batch
MIN_SECONDS = 10.0  # of sampled training time before any hint is given



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


@dataclass(frozen=True)
class HostUsage:
    machine: int
    host: str
    cpu_count: int | None
    cpu_mean: float | None  # % of the machine
    memory_peak: float | None  # MiB
    memory_total: int | None  # MiB


@dataclass(frozen=True)
class Usage:
    samples: int  # samples in the window, every machine
    seconds: float  # sampled time in the window (the longest of the machines)
    training: bool  # the window is the training time (else: every sample, the run never said train_begin)
    interval: float
    gpus: tuple[GpuUsage, ...]
    ranks: tuple[RankUsage, ...]
    hosts: tuple[HostUsage, ...]
    bound_share: float | None  # of the sampled time with GPU figures, input-bound (None: no GPU figures)
    bound_util: float | None  # the GPUs' mean utilisation in those buckets
    bound_rank: int | None  # the busiest rank there
    bound_cpu: float | None  # its mean CPU there (% of one core)

    @property
    def empty(self) -> bool:
        return self.samples == 0


@dataclass(frozen=True)
class Hint:
    kind: str  # "input-bound" or "memory"
    text: str


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


def summarise(samples: Mapping[int, MachineSamples],
              window: tuple[float | None, float | None] | None) -> Usage:
    """The run's figures over `window` ((train_begin, train_end) times; None: every sample)."""
    training = window is not None and window[0] is not None
    gpus: list[GpuUsage] = []
    ranks: list[RankUsage] = []
    hosts: list[HostUsage] = []
    count = 0
    seconds = 0.0
    bound = known = 0.0
    bound_utils: list[tuple[float, int]] = []
    bound_cpus: dict[int, list[tuple[float, int]]] = {}
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
                                   _peak(data.values(f"rank.{rank}.gpu_mem", "max"), picked)))
        hosts.append(HostUsage(machine, data.host, data.cpu_count,
                               _weighted_mean(data.values("host.cpu"), counts, picked),
                               _peak(data.values("host.mem", "max"), picked), data.memory_total))
        # input-bound, bucket by bucket: the GPUs' mean utilisation against the busiest rank's CPU
        utils = [data.values(f"gpu.{g.index}.util") for g in data.gpus]
        cpus = {rank: data.values(f"rank.{rank}.cpu") for rank in rank_numbers}
        for i in picked:
            here = [u[i] for u in utils if u[i] is not None]
            if not here:
                continue
            util = sum(v for v in here if v is not None) / len(here)
            known += counts[i]
            busiest = max(((cpu[i], rank) for rank, cpu in cpus.items() if cpu[i] is not None), default=None)
            if util < IDLE_GPU and busiest is not None and busiest[0] is not None and busiest[0] >= BUSY_RANK:
                bound += counts[i]
                bound_utils.append((util, counts[i]))
                bound_cpus.setdefault(busiest[1], []).append((busiest[0], counts[i]))
    share = bound / known if known else None
    bound_rank = max(bound_cpus, key=lambda r: sum(n for _, n in bound_cpus[r])) if bound_cpus else None

    def mean_of(pairs: list[tuple[float, int]]) -> float | None:
        weight = sum(n for _, n in pairs)
        return sum(v * n for v, n in pairs) / weight if weight else None

    return Usage(count, seconds, training, interval or 0.0, tuple(gpus), tuple(ranks), tuple(hosts), share,
                 mean_of(bound_utils), bound_rank, mean_of(bound_cpus[bound_rank]) if bound_rank is not None else None)


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def _setting(settings: Mapping[str, Any] | None, key: str) -> Any:
    return (settings or {}).get(key)


def usage_hints(usage: Usage, settings: Mapping[str, Any] | None = None, script: bool = False) -> list[Hint]:
    """The hints the run's figures call for (see the module doc); none before MIN_SECONDS of sampled training.
    `settings`: the run's training arguments (training_args.json) for the figures quoted; `script`: the run is the
    user's own script (its data preparation is the script's, so tokenising up front is the script's to do)."""
    if not usage.training or usage.seconds < MIN_SECONDS:
        return []
    hints: list[Hint] = []
    if usage.bound_share is not None and usage.bound_share >= BOUND_SHARE and usage.bound_rank is not None:
        workers = _setting(settings, "dataloader_num_workers")
        hosts = [h for h in usage.hosts if h.cpu_count]
        ranks_here = max(1, sum(1 for r in usage.ranks if hosts and r.machine == hosts[0].machine))
        cores = (hosts[0].cpu_count or 1) // ranks_here if hosts else 4
        suggest = max(2, min(8, cores - 1))
        if isinstance(workers, int) and workers >= suggest:
            suggest = workers * 2
        now = f" (now {workers})" if workers is not None else ""
        tries = [f"training.dataloader_num_workers = {suggest}{now}"]
        if _setting(settings, "dataloader_pin_memory") is False:
            tries.append("training.dataloader_pin_memory = true")
        if script:
            tries.append("tokenising the data set once before training (datasets' map), not in the collator")
        gpus = "GPU was" if len(usage.gpus) == 1 else "GPUs were"
        hints.append(Hint("input-bound", (
            f"input-bound: the {gpus} {usage.bound_util or 0:.0f} % busy while rank {usage.bound_rank}'s CPU ran at "
            f"{usage.bound_cpu or 0:.0f} % of a core, {usage.bound_share:.0%} of the training time: the GPU waits "
            f"for batches. Try {', '.join(tries[:-1]) + ' and ' + tries[-1] if len(tries) > 1 else tries[0]}.")))
    sized = [g for g in usage.gpus if g.memory_peak is not None and g.memory_total]
    if sized:
        fullest = max(sized, key=lambda g: (g.memory_peak or 0) / (g.memory_total or 1))
        share = (fullest.memory_peak or 0) / (fullest.memory_total or 1)
        if share < FULL_MEMORY:
            batch = _setting(settings, "per_device_train_batch_size")
            which = f" (the fullest of {len(sized)} GPUs)" if len(sized) > 1 else ""
            advice = (f"try training.per_device_train_batch_size = {batch * 2} (now {batch})"
                      if isinstance(batch, int) and batch > 0 else "try a larger training.per_device_train_batch_size")
            hints.append(Hint("memory", (
                f"GPU memory peaked at {_gib(fullest.memory_peak or 0)} of {_gib(fullest.memory_total or 0)} GiB "
                f"({share:.0%}){which}: a larger batch fits — {advice}, then watch the peak here.")))
    return hints


def training_settings(root: Path) -> dict[str, Any]:
    """The run's training arguments as rank 0 wrote them (training_args.json); {} where there are none."""
    try:
        data = json.loads(RunPaths(Path(root)).training_args.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_script(record: Mapping[str, Any]) -> bool:
    from tuitrain.rundir.script_env import SCRIPT_ENV

    return SCRIPT_ENV in (record.get("env") or {})


@dataclass(frozen=True)
class RunUsage:
    """Everything the views show of a run's samples: the figures and the hints."""

    usage: Usage
    hints: tuple[Hint, ...]
    files: tuple[str, ...]  # the samples files, relative to the run directory


def run_usage(root: Path, record: Mapping[str, Any]) -> RunUsage | None:
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
