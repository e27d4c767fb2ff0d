"""A run's GPU, CPU and memory samples, kept in its run directory for the whole run, in a bounded size.

Who samples: the supervisor of each machine of the run (tuitrain.runs.keeper.supervisor; a node agent's and a Slurm node's
are that supervisor too), in a thread of its own (`RunSampler`), every SAMPLE_SECONDS, through the same
`tuitrain.hardware.sampler.Sampler` as `tuitrain gpus` and the app (NVML, or the recorded table TUITRAIN_NVML_TABLE
names; no driver is a normal state: the host and the ranks are still sampled). A local run is machine 0.

The file, `machines/machine-M-samples.json` (M: the machine's rank; a run on several machines mirrors each node's
file home, tuitrain.runs.keeper.mirror; a Slurm node M > 0 keeps it in nodes/machine-M/machines/), replaced atomically
every WRITE_SECONDS and once more when the run ends, before run.json says so. Its keys are `SamplesFile`'s, checked
where it is read (`scan_run_samples`): one that does not check is damaged, its reason one line.

Series (units): host.cpu (% of the whole machine), host.mem (MiB used), gpu.I.util (% of time a kernel ran),
gpu.I.mem (MiB used, as nvidia-smi counts it), gpu.I.power (W), rank.R.cpu (% of one core, the rank's own process),
rank.R.rss (MiB), rank.R.gpu_mem (MiB on its GPUs), rank.R.wait (% of its step time, since the previous sample, that
the rank spent between one step's end and the next one's begin, where the Trainer reads the next batch: from its
heartbeat, `WaitShares`). A series that starts late reads null before.

Bounded: at most MAX_BUCKETS buckets; when a sample would open one more, neighbouring buckets merge pairwise (the
span doubles), so a week-long run and a minute-long one both keep a whole-run curve of at most MAX_BUCKETS points
(about 4 KiB a series, whatever the length of the run). Nothing here imports the sampler until a sampling thread starts: the TUI,
the CLI and the supervisor's start stay light.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterable, Literal, Mapping, Sequence, TypedDict

from tuitrain.rundir.json_shape import Within, decoded, problem
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import Rank, RunRecord, Time
from tuitrain.rundir.run import Fields, Run

if TYPE_CHECKING:
    from tuitrain.hardware.devices import GpuInfo

FORMAT: Literal[1] = 1
SAMPLE_SECONDS = 2.0  # how often a machine of a run is sampled (a node agent sends its latest home as often)
WRITE_SECONDS = 10.0  # how often the samples file is replaced while the run goes on
MAX_BUCKETS = 240
MIB = 2**20


Seconds = Annotated[float, Within(1e-3, 2**33, "a number of seconds")]


class GpuDevice(TypedDict):
    """A GPU as a samples file and a manifest name it."""

    index: int  # NVML's
    name: str | None
    memory_total: int | None  # MiB


class Series(TypedDict):
    mean: list[float | None]  # a value a bucket; null where nothing was read
    max: list[float | None]


class _SamplesNeeded(TypedDict):
    format: Literal[1]
    time: list[Time]  # a value a bucket: its samples' mean time
    count: list[int]  # and how many it holds


class SamplesFile(_SamplesNeeded, total=False):
    """machines/machine-M-samples.json as `SampleLog.to_json` writes it; the machine's keys (META_KEYS) come with
    its first sample."""

    machine_rank: Rank
    host: str
    run_id: str
    interval: Seconds  # between two samples
    span: Seconds  # one bucket covers now (interval × 2^k)
    samples: int  # taken
    first: Time | None  # the first sample's time
    last: Time | None
    cpu_count: int | None
    memory_total: int | None  # MiB
    gpus: list[GpuDevice]  # the run's GPUs
    ranks: list[Rank]  # the global ranks sampled on this machine
    series: dict[str, Series]  # "gpu.0.util" → its figures


def samples_path(root: Path, machine_rank: int) -> Path:
    return RunPaths(root).machine_samples(machine_rank)


# ---------------------------------------------------------------------------------------------- the accumulator
class _Stat:
    __slots__ = ("total", "count", "top")

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self.top = -math.inf

    def add(self, value: float, count: int = 1, top: float | None = None) -> None:
        self.total += value * count
        self.count += count
        self.top = max(self.top, value if top is None else top)

    def merge(self, other: "_Stat") -> None:
        self.total += other.total
        self.count += other.count
        self.top = max(self.top, other.top)


class _Bucket:
    __slots__ = ("index", "times", "count", "stats")

    def __init__(self, index: int) -> None:
        self.index = index
        self.times = 0.0  # the sum of its samples' times
        self.count = 0
        self.stats: dict[str, _Stat] = {}

    def merge(self, other: "_Bucket") -> None:
        self.times += other.times
        self.count += other.count
        for name, stat in other.stats.items():
            self.stats.setdefault(name, _Stat()).merge(stat)


def _round(value: float) -> float | int:
    return int(round(value)) if abs(value) >= 100 else round(value, 1)


class SampleLog:
    """The whole run's samples, downsampled as it grows: `add` one sample's values at a time; `to_json` is the file."""

    def __init__(self, interval: float = SAMPLE_SECONDS, max_buckets: int = MAX_BUCKETS,
                 meta: Mapping[str, Any] | None = None) -> None:
        if max_buckets < 2:
            raise ValueError("max_buckets must be at least 2")
        self.interval = interval
        self.span = interval
        self.max_buckets = max_buckets
        self.meta: dict[str, Any] = dict(meta or {})
        self.origin: float | None = None
        self.first: float | None = None
        self.last: float | None = None
        self.samples = 0
        self.buckets: list[_Bucket] = []
        self.names: dict[str, None] = {}  # every series seen, in first-seen order

    def add(self, when: float, values: Mapping[str, float | None]) -> None:
        """One sample: series name → value (None, or a name left out: not read this time)."""
        if self.origin is None:
            self.origin = self.first = when
        assert self.origin is not None
        index = max(0, int((when - self.origin) // self.span))
        if not self.buckets or index > self.buckets[-1].index:
            self.buckets.append(_Bucket(index))
        bucket = self.buckets[-1]  # a clock stepping back lands in the last bucket
        bucket.times += when
        bucket.count += 1
        for name, value in values.items():
            if value is None or not math.isfinite(value):
                continue
            self.names.setdefault(name)
            bucket.stats.setdefault(name, _Stat()).add(float(value))
        self.samples += 1
        self.last = when
        while len(self.buckets) > self.max_buckets:
            self._halve()

    def _halve(self) -> None:
        """Twice the span: each pair of neighbouring buckets becomes one."""
        self.span *= 2
        merged: list[_Bucket] = []
        for bucket in self.buckets:
            index = bucket.index // 2
            if merged and merged[-1].index == index:
                merged[-1].merge(bucket)
            else:
                bucket.index = index
                merged.append(bucket)
        self.buckets = merged

    def to_json(self) -> dict[str, Any]:
        series: dict[str, dict[str, list[float | int | None]]] = {}
        for name in self.names:
            means: list[float | int | None] = []
            tops: list[float | int | None] = []
            for bucket in self.buckets:
                stat = bucket.stats.get(name)
                means.append(_round(stat.total / stat.count) if stat and stat.count else None)
                tops.append(_round(stat.top) if stat and stat.count else None)
            series[name] = {"mean": means, "max": tops}
        return {"format": FORMAT, **self.meta, "interval": self.interval, "span": self.span,
                "samples": self.samples, "first": self.first, "last": self.last,
                "time": [round(b.times / b.count, 2) for b in self.buckets],
                "count": [b.count for b in self.buckets], "series": series}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], max_buckets: int = MAX_BUCKETS) -> "SampleLog":
        """A log to go on with (a Slurm job requeued into the same run directory): each bucket's mean taken as the
        value of each of its samples."""
        parsed = parse(data)
        if parsed is None:
            raise ValueError(f"not a samples file ({samples_problem(data)})")
        log = cls(parsed.interval, max_buckets)
        log.meta = {k: v for k, v in data.items() if k in META_KEYS}
        log.span = parsed.span
        log.origin = parsed.first if parsed.first is not None else (parsed.times[0] if parsed.times else None)
        log.first, log.last, log.samples = parsed.first, parsed.last, parsed.samples
        for i, when in enumerate(parsed.times):
            bucket = _Bucket(int((when - (log.origin or when)) // log.span))
            if log.buckets and bucket.index <= log.buckets[-1].index:
                bucket.index = log.buckets[-1].index + 1
            bucket.count = parsed.counts[i]
            bucket.times = when * bucket.count
            for name, (means, tops) in parsed.series.items():
                log.names.setdefault(name)
                if means[i] is not None:
                    bucket.stats.setdefault(name, _Stat()).add(float(means[i] or 0.0), bucket.count, tops[i])
            log.buckets.append(bucket)
        while len(log.buckets) > log.max_buckets:
            log._halve()
        return log


META_KEYS = ("machine_rank", "host", "run_id", "cpu_count", "memory_total", "gpus", "ranks")


# ---------------------------------------------------------------------------------------------- one sample
def sample_values(snapshot: Any, run_id: str, gpu_indices: Iterable[int]) -> dict[str, float | None]:
    """One `Snapshot`'s values as series (see the module doc): the host, the GPUs `gpu_indices` names (NVML indices)
    and the run's ranks (`snapshot.ranks` whose owner is of `run_id`)."""
    from tuitrain.hardware.na import NA

    def number(value: Any, scale: float = 1.0) -> float | None:
        return None if value is NA or value is None else float(value) / scale

    host = snapshot.host
    out: dict[str, float | None] = {"host.cpu": number(host.cpu_percent), "host.mem": number(host.memory_used, MIB)}
    wanted = set(gpu_indices)
    for gpu in snapshot.gpus:
        if gpu.index not in wanted:
            continue
        if gpu.lost:
            continue  # a GPU that fell off the bus says nothing more
        out[f"gpu.{gpu.index}.util"] = number(gpu.utilization)
        out[f"gpu.{gpu.index}.mem"] = number(gpu.memory_used, MIB)
        out[f"gpu.{gpu.index}.power"] = number(gpu.power_draw)
    for usage in snapshot.ranks:
        if usage.owner.run_id != run_id or usage.owner.rank is None:
            continue
        rank = int(usage.owner.rank)
        out[f"rank.{rank}.cpu"] = number(usage.cpu_percent)
        out[f"rank.{rank}.rss"] = number(usage.rss, MIB)
        out[f"rank.{rank}.gpu_mem"] = number(usage.gpu_memory, MIB) if usage.gpus else None
    return out


class WaitShares:
    """Each rank's rank.R.wait from its heartbeats (tuitrain.rundir.heartbeat.Beat's waited_seconds and
    stepped_seconds, totals since the rank started): the share of the step time between two looks that it waited.
    A rank with no new whole step since the last look (evaluating, saving, stuck, not yet training) reads None."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[int | None, float, float]] = {}  # rank -> (pid, waited, stepped) at the last look

    def values(self, beats: Mapping[int, Any], ranks: Iterable[int]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for rank in ranks:
            beat = beats.get(rank)
            if beat is None or beat.waited_seconds is None or beat.stepped_seconds is None:
                continue
            pid, waited, stepped = self._last.get(rank, (beat.pid, 0.0, 0.0))
            if pid != beat.pid or beat.stepped_seconds < stepped:  # a new process of the rank: its totals start again
                waited = stepped = 0.0
            self._last[rank] = (beat.pid, beat.waited_seconds, beat.stepped_seconds)
            step = beat.stepped_seconds - stepped
            out[f"rank.{rank}.wait"] = min(100.0, 100.0 * (beat.waited_seconds - waited) / step) if step > 0 else None
        return out


def run_gpus(record: RunRecord, gpus: Sequence[GpuInfo]) -> list[GpuInfo]:
    """The physical GPUs among `gpus` a run's ranks see, in cuda:N order, by its CUDA_VISIBLE_DEVICES and
    CUDA_DEVICE_ORDER (none when it trains on the CPU or MPS)."""
    from tuitrain.hardware.mapping import visible_gpus

    run = Fields(record)
    return visible_gpus(run.env, gpus) if run.accelerator == "cuda" else []


def run_gpu_indices(record: RunRecord, snapshot: Any, run_id: str) -> set[int]:
    """The GPUs of this machine the run uses: those its CUDA_VISIBLE_DEVICES shows (a run on `cuda`), and any that
    holds one of its processes (a script whose device tuitrain did not choose)."""
    found = {g.index for g in run_gpus(record, snapshot.gpus)}
    for gpu in snapshot.gpus:
        if any(p.owner is not None and p.owner.run_id == run_id for p in gpu.processes):
            found.add(gpu.index)
    return found


# ---------------------------------------------------------------------------------------------- the sampling thread
class RunSampler:
    """Samples this machine for a run in a daemon thread; `stop()` takes one last look and writes the file.

    `ranks`: the run's live ranks on this machine, rank → pid (the supervisor's own table, read once a sample).
    `on_snapshot`: called with each `Snapshot` (a node agent sends it home). Never raises into the supervisor: a
    sampler that fails says so in the supervisor's log and the run goes on without figures."""

    def __init__(self, paths: Any, record: RunRecord, ranks: Callable[[], Mapping[int, int]],
                 machine_rank: int = 0, on_snapshot: Callable[[Any], None] | None = None,
                 interval: float = SAMPLE_SECONDS, write_seconds: float = WRITE_SECONDS, nvml: Any = None,
                 log: Callable[[str], None] = print) -> None:
        self.paths = paths
        self.record = record.copy()
        self.run_id = Run(paths, record).name
        self.ranks = ranks
        self.machine_rank = machine_rank
        self.on_snapshot = on_snapshot
        self.interval = interval
        self.write_seconds = write_seconds
        self.nvml = nvml
        self.log = log
        self.file = samples_path(paths.root, machine_rank)
        self.samples: SampleLog | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._written_at = -math.inf
        self._gpus: set[int] = set()
        self._gpu_meta: dict[int, GpuDevice] = {}
        self._waits = WaitShares()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="run-samples", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sampling and write the file a last time (the caller then records the run's end)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _owners(self) -> dict[int, Any]:
        from tuitrain.runs.view.owners import RankOwner

        return {pid: RankOwner(self.run_id, rank) for rank, pid in dict(self.ranks()).items()}

    def _run(self) -> None:
        try:
            from tuitrain.hardware.recorded import library_from_env
            from tuitrain.hardware.sampler import Sampler

            nvml = self.nvml if self.nvml is not None else library_from_env(os.environ)
            with Sampler(nvml, history=1, owners=self._owners) as sampler:
                self.samples = self._resume() or SampleLog(self.interval, meta={
                    "machine_rank": self.machine_rank, "host": socket.gethostname(), "run_id": self.run_id})
                sampler.run(self.interval, self._stop, self._take)
                self._take(sampler.sample(), final=True)  # the last look, as the run ends
        except Exception as exc:  # noqa: BLE001 — figures are a nicety: the run goes on without them
            self.log(f"GPU/CPU sampling stopped: {type(exc).__name__}: {exc}")

    def _resume(self) -> SampleLog | None:
        """The file a previous supervisor of this run directory left (a requeued Slurm job), to go on with."""
        try:
            return SampleLog.from_json(json.loads(self.file.read_bytes()))
        except (OSError, ValueError, RecursionError):
            return None

    def _take(self, snapshot: Any, final: bool = False) -> None:
        assert self.samples is not None
        gpus = run_gpu_indices(self.record, snapshot, self.run_id)
        for gpu in snapshot.gpus:
            if gpu.index in gpus and gpu.index not in self._gpu_meta:
                self._gpu_meta[gpu.index] = _gpu_meta(gpu)
        self._gpus |= gpus
        values = sample_values(snapshot, self.run_id, self._gpus)
        values.update(self._waits.values(self._beats(), dict(self.ranks())))
        self.samples.add(snapshot.time, values)
        host = snapshot.host
        self.samples.meta.update(cpu_count=host.cpu_count, memory_total=_mib(host.memory_total),
                                 gpus=[self._gpu_meta[i] for i in sorted(self._gpu_meta)],
                                 ranks=sorted({*self.samples.meta.get("ranks", []), *dict(self.ranks())}))
        if self.on_snapshot is not None and not final:
            try:
                self.on_snapshot(snapshot)
            except Exception as exc:  # noqa: BLE001
                self.log(f"could not pass a GPU sample on: {type(exc).__name__}: {exc}")
        now = time.monotonic()
        if final or now - self._written_at >= self.write_seconds:
            self._written_at = now
            self.write()

    def _beats(self) -> Mapping[int, Any]:
        from tuitrain.rundir.heartbeat import read_beats

        try:
            return read_beats(self.paths)
        except OSError:
            return {}

    def write(self) -> None:
        from tuitrain.atomic import write_text_atomic

        if self.samples is None:
            return
        try:
            self.file.parent.mkdir(exist_ok=True)
            write_text_atomic(self.file, json.dumps(self.samples.to_json(), separators=(",", ":")) + "\n")
        except OSError as exc:  # a full disk: the run matters more than its figures
            self.log(f"could not write {self.file.name}: {exc}")


def _mib(value: Any) -> int | None:
    return int(round(value / MIB)) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _gpu_meta(gpu: Any) -> GpuDevice:
    from tuitrain.hardware.na import NA

    return {"index": gpu.index, "name": None if gpu.name is NA else str(gpu.name),
            "memory_total": _mib(gpu.memory_total if gpu.memory_total is not NA else None)}


# ---------------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class GpuMeta:
    index: int
    name: str | None
    memory_total: int | None  # MiB


@dataclass(frozen=True)
class MachineSamples:
    """One machine's samples file, read (see the module doc)."""

    machine_rank: int
    host: str
    interval: float
    span: float
    samples: int
    first: float | None
    last: float | None
    cpu_count: int | None
    memory_total: int | None  # MiB
    gpus: tuple[GpuMeta, ...]
    ranks: tuple[int, ...]
    times: tuple[float, ...]
    counts: tuple[int, ...]
    series: dict[str, tuple[tuple[float | None, ...], tuple[float | None, ...]]] = field(default_factory=dict)

    def values(self, name: str, stat: str = "mean") -> tuple[float | None, ...]:
        """A series per bucket (None where nothing was read); all None for a series this machine has not."""
        found = self.series.get(name)
        if found is None:
            return (None,) * len(self.times)
        return found[0] if stat == "mean" else found[1]

    def rank_numbers(self) -> list[int]:
        found = {int(name.split(".")[1]) for name in self.series if name.startswith("rank.")}
        return sorted(found | set(self.ranks))


def samples_problem(data: Any) -> str | None:
    """Why a samples file's JSON is no `SamplesFile` with one value a bucket in each list; None when it is one."""
    found = problem(data, SamplesFile)
    if found is not None:
        return found
    lengths = [len(data["count"]), *(len(s[k]) for s in data.get("series", {}).values() for k in ("mean", "max"))]
    times = len(data["time"])
    return None if all(n == times for n in lengths) else f"count, series: not one value for each of the {times} times"


def parse(data: Any) -> MachineSamples | None:
    """A samples file's JSON, or None where it is no such file (another format, damaged: `samples_problem`)."""
    return None if samples_problem(data) is not None else _machine(data)


def _machine(held: SamplesFile) -> MachineSamples:
    return MachineSamples(
        machine_rank=held.get("machine_rank", 0), host=held.get("host") or "?", interval=held.get("interval", SAMPLE_SECONDS),
        span=held.get("span", SAMPLE_SECONDS), samples=held.get("samples", 0), first=held.get("first"), last=held.get("last"),
        cpu_count=held.get("cpu_count"), memory_total=held.get("memory_total"),
        gpus=tuple(GpuMeta(g["index"], g["name"], g["memory_total"]) for g in held.get("gpus", ())),
        ranks=tuple(held.get("ranks", ())), times=tuple(held["time"]), counts=tuple(held["count"]),
        series={name: (tuple(s["mean"]), tuple(s["max"])) for name, s in held.get("series", {}).items()})


def _files(root: Path) -> list[Path]:
    """This run's samples files: its machines/ folder, and a Slurm node's own folder (nodes/machine-M/machines/)."""
    return sorted(p for node in RunPaths(root).nodes().values() for p in node.machines.glob("machine-*-samples.json"))


_CACHE: dict[Path, tuple[tuple[int, int], MachineSamples | None, str | None]] = {}
_CACHE_LOCK = threading.Lock()


def read_samples_file(path: Path) -> tuple[MachineSamples | None, str | None]:
    """One samples file (re-read only when it was replaced since the last read), or why it cannot be used (None,
    None: it is gone)."""
    try:
        info = path.stat()
    except OSError:
        return None, None
    stamp = (info.st_mtime_ns, info.st_size)
    with _CACHE_LOCK:
        cached = _CACHE.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1:]
    try:
        data, reason = decoded(path.read_bytes())
    except OSError as exc:
        data, reason = None, f"unreadable ({exc.strerror or exc})"
    reason = reason or samples_problem(data)
    parsed = None if reason else _machine(data)
    with _CACHE_LOCK:
        _CACHE[path] = (stamp, parsed, reason)
    return parsed, reason


def scan_run_samples(root: Path) -> tuple[dict[int, MachineSamples], dict[int, str]]:
    """machine rank → its samples, for every machine of the run that kept a file that checks; and machine rank (its
    file's name's) → why its file cannot be used, in one line, for each that is damaged."""
    out: dict[int, MachineSamples] = {}
    damaged: dict[int, str] = {}
    for path in _files(Path(root)):
        parsed, reason = read_samples_file(path)
        if parsed is not None:
            out.setdefault(parsed.machine_rank, parsed)
        elif reason is not None:
            damaged.setdefault(RunPaths.machine_of(path), f"{path}: {reason}")
    return out, {rank: why for rank, why in damaged.items() if rank not in out}


def damaged_words(machine: int, why: str) -> str:
    """What `status` and the app's GPUs tab say of a machine's damaged samples file (`why`: scan_run_samples')."""
    return f"machine {machine}'s are damaged: {why}"


def read_run_samples(root: Path) -> dict[int, MachineSamples]:
    """machine rank → its samples, for every machine of the run that kept a file that checks."""
    return scan_run_samples(root)[0]


# ---------------------------------------------------------------------------------------------- the training window
_WINDOWS: dict[Path, tuple[int, float | None, float | None]] = {}


def training_window(events: Path) -> tuple[float | None, float | None]:
    """(time of the first train_begin, time of the last train_end) in a run's events.jsonl; None where there is
    none yet. Read incrementally (a live run's events are read once each)."""
    from tuitrain.rundir.events import parse_event
    from tuitrain.rundir.tail import read_new_lines

    offset, begin, end = _WINDOWS.get(events, (0, None, None))
    try:
        if events.stat().st_size < offset:  # replaced: read again
            offset, begin, end = 0, None, None
    except OSError:
        return begin, end
    for line in read_new_lines(events, offset):
        offset += len(line)
        if b"train_" not in line:
            continue
        event = parse_event(line)
        when = event.get("time") if event else None
        when = float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None
        if event is None or when is None:
            continue
        if event.get("event") == "train_begin" and begin is None:
            begin = when
        elif event.get("event") == "train_end":
            end = when
    _WINDOWS[events] = (offset, begin, end)
    return begin, end


def in_window(times: Sequence[float], window: tuple[float | None, float | None] | None) -> list[int]:
    """The buckets whose mean time lies in `window` (all of them without one)."""
    if window is None:
        return list(range(len(times)))
    begin, end = window
    return [i for i, t in enumerate(times) if (begin is None or t >= begin) and (end is None or t <= end)]
