"""May this queued run start now: the one rule (`verdict`), asked by its waiting supervisor
(`runs.queue.wait`) and shown by `tuitrain queue`.

In order: every run it follows has ended (`--after`; `--after-ok`: finished, else it never starts); no live entry
holds one of its GPUs, and no entry queued before it waits for one of them with nothing else left to wait for
(first queued, first started; a run still waiting for a dependency lets later ones by); each of its GPUs is free by
the preflight's rule (`hardware.gpu_choice.unfit_reasons`: `busy_reasons`, no compute process of anyone on it
and not near-full or busy; or with min_free_memory, that much free, whoever else computes there). A run that asks
for any N GPUs (`gpus = N`) starts on the first N that fit (`count_waits`). A run on the CPU (no GPUs) waits for its
dependencies only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tuitrain.hardware.devices import GpuInfo
from tuitrain.hardware.gpu_choice import choose_free, held_by, holders, unfit_reasons
from tuitrain.hardware.na import NA
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, RunRecord, RunRecordError, Status, read_record
from tuitrain.rundir.run import Fields
from tuitrain.runs.liveness import effective_status
from tuitrain.runs.queue.entries import Dependency, Entry

ReadGpus = Callable[[], Sequence[GpuInfo]]
Progress = Callable[[RunPaths], str]  # " step 400/3000", or ""


@dataclass(frozen=True)
class Verdict:
    start: bool
    waits: tuple[str, ...] = ()  # what it waits for, one phrase each
    end: tuple[Status, str] | None = None  # (status, why): it can never start
    read_gpus: bool = False  # the GPUs were read: what it waits for changes without an event (NVML has none)
    chosen: tuple[int, ...] = ()  # `gpus = N`: the GPUs it starts on
    why: str = ""  # and how they were chosen


def _dependency_record(dep: Dependency) -> RunRecord | None:
    try:
        return read_record(RunPaths(Path(dep.run_dir)))
    except (RunRecordError, OSError):
        return None


def ended_status(record: RunRecord) -> str | None:
    """How a run ended (a lost one counts as ended), or None while it goes on."""
    status = effective_status(record)
    return status if status in FINAL_STATUSES or status == "lost" else None


def dependency_waits(after: Sequence[Dependency], progress: Progress | None = None) -> Verdict:
    """What the runs it follows leave it: waiting, never starting, or nothing (start=True)."""
    waits = []
    for dep in after:
        record = _dependency_record(dep)
        if record is None:
            return Verdict(False, end=("failed", (f"run {dep.run}, which it was queued after, is gone ({dep.run_dir} "
                                                 "has no readable run.json)")))
        status = ended_status(record)
        if status is None:
            shown = effective_status(record)
            more = progress(RunPaths(Path(dep.run_dir))) if progress else ""
            waits.append(f"run {dep.run} to {'finish (--after-ok)' if dep.ok else 'end'} ({shown}{more})")
        elif dep.ok and status != "finished":
            error = Fields(record).error
            cause = f": {error}" if error else ""
            return Verdict(False, end=("failed", (f"run {dep.run}, which it was queued after with --after-ok, ended "
                                                 f"{status}{cause}; it starts only after a run that finished")))
    return Verdict(not waits, tuple(waits))


def _gib(value: Any) -> str:
    return f"{value / 2**30:.1f} GiB" if value is not NA else "N/A"


def describe_taken(gpu: GpuInfo, reasons: Sequence[str]) -> str:
    """'GPU 0: held by rank 0 of run X (3.8 GiB)'; where the reasons are of memory (min_free_memory), what is used
    and by whom: 'GPU 2: 1.2 GiB free, 10.0 GiB needed (hardware.min_free_memory), 22.8 GiB used, held by pid 4411
    python train.py (bob, 22.8 GiB)'."""
    text = f"GPU {gpu.index}: {', '.join(reasons)}"
    if any(r.startswith("held by") for r in reasons):
        return text
    if gpu.memory_used is not NA:
        text += f", {_gib(gpu.memory_used)} used"
    found = holders(gpu)
    return text + (f", {held_by(found)}" if found else "")


def _ready_by_dependencies(entry: Entry) -> bool:
    return all(ended_status(r) is not None for r in map(_dependency_record, entry.after) if r is not None)


def _share(entry: Entry, other: Entry) -> bool:
    """Both set hardware.min_free_memory: they may run on one GPU, each with its memory promised."""
    return entry.min_free is not None and other.min_free is not None


def _ahead(entry: Entry, other: Entry) -> bool:
    """`other` was queued before `entry` and waits for nothing but GPUs: it goes first."""
    return other.state == "waiting" and other.name < entry.name and _ready_by_dependencies(other)


def claim_waits(entry: Entry, entries: Sequence[Entry]) -> tuple[str, ...]:
    """GPUs held by a started run of the queue (unless both share: `reserved`), or wanted by a run queued before
    it that waits for nothing else (`entries`: the live ones, `runs.queue.entries.live_entries`). A run that asks for any
    N GPUs waits behind an earlier one that asks for any; one that lists its GPUs also waits behind it."""
    waits = []
    mine = set(entry.gpus)
    for other in entries:
        if other.name == entry.name or not (entry.gpus or entry.count):
            continue
        if other.count and _ahead(entry, other):
            waits.append(f"run {other.run} ({other.user}) is ahead in the queue (any {other.count} free GPU(s))")
            continue
        shared = sorted(mine & set(other.gpus))
        if not shared:
            continue
        gpus = ", ".join(str(g) for g in shared)
        if other.state == "started" and not _share(entry, other):
            waits.append(f"GPU {gpus}: held by run {other.run} ({other.user})")
        elif _ahead(entry, other):
            waits.append(f"GPU {gpus}: run {other.run} ({other.user}) is ahead in the queue")
    return tuple(waits)


def kept_back(entry: Entry, entries: Sequence[Entry]) -> dict[int, str]:
    """For a run that asks for any N GPUs: the GPUs it may not take, with why (held by a started run it does not
    share with, or listed by an earlier run that waits for nothing else)."""
    out: dict[int, str] = {}
    for other in entries:
        if other.name == entry.name:
            continue
        if other.state == "started" and not _share(entry, other):
            why = f"held by run {other.run} ({other.user})"
        elif _ahead(entry, other):
            why = f"run {other.run} ({other.user}) is ahead in the queue"
        else:
            continue
        for gpu in other.gpus:
            out.setdefault(gpu, why)  # the first in the queue's order names it
    return out


def reserved(entry: Entry, entries: Sequence[Entry]) -> dict[int, int]:
    """Memory promised on each GPU to the started runs `entry` shares with (their min_free_memory)."""
    out: dict[int, int] = {}
    for other in entries:
        if other.name != entry.name and other.state == "started" and _share(entry, other):
            for gpu in other.gpus:
                out[gpu] = out.get(gpu, 0) + int(other.min_free or 0)
    return out


def gpu_waits(entry: Entry, gpus: Sequence[GpuInfo], promised: Mapping[int, int] | None = None) -> Verdict:
    by_index = {g.index: g for g in gpus}
    waits = []
    for index in entry.gpus:
        gpu = by_index.get(index)
        if gpu is None or gpu.lost:
            have = ", ".join(str(g.index) for g in gpus) or "none"
            return Verdict(False, end=("failed", f"GPU {index} is not on this machine (any more): it has {have}"))
        reasons = unfit_reasons(gpu, entry.run, entry.min_free, (promised or {}).get(index, 0))
        if reasons:
            waits.append(describe_taken(gpu, reasons))
    return Verdict(not waits, tuple(waits), read_gpus=True)


def count_waits(entry: Entry, gpus: Sequence[GpuInfo], entries: Sequence[Entry]) -> Verdict:
    """A run that asks for any `entry.count` GPUs: start on the first that fit (`gpu_choice.choose_free`)."""
    if entry.count > len(gpus):
        return Verdict(False, end=("failed", f"it asks for any {entry.count} GPUs, but this machine has {len(gpus)}"))
    choice = choose_free(gpus, entry.count, entry.run, entry.min_free, kept_back(entry, entries),
                         reserved(entry, entries))
    if choice.complete:
        return Verdict(True, read_gpus=True, chosen=choice.chosen, why=choice.why())
    return Verdict(False, (f"any {entry.count} free GPU(s): {choice.why()}",), read_gpus=True)


def verdict(entry: Entry, entries: Sequence[Entry], read_gpus: ReadGpus, progress: Progress | None = None) -> Verdict:
    """May `entry` start now (`entries`: the queue's live entries, read under its lock)."""
    deps = dependency_waits(entry.after, progress)
    if not deps.start:
        return deps
    claims = claim_waits(entry, entries)
    if claims:
        return Verdict(False, claims)
    if entry.count:
        return count_waits(entry, read_gpus(), entries)
    if not entry.gpus:
        return Verdict(True)
    return gpu_waits(entry, read_gpus(), reserved(entry, entries))


def dependency_refusal(after: Sequence[Dependency], new_run: str | None = None) -> str | None:
    """Why a run cannot be queued after these runs (nothing is queued then): one that already ended without
    finishing under --after-ok, or a cycle through the runs they in turn wait for."""
    for dep in after:
        record = _dependency_record(dep)
        if record is None:
            return f"run {dep.run} has no readable run.json ({dep.run_dir}); queue after a run `tuitrain runs` lists"
        status = ended_status(record)
        if dep.ok and status is not None and status != "finished":
            return (f"run {dep.run} already ended {status}: --after-ok would never start; use --after to start "
                    "after any end, or drop it")
    cycle = dependency_cycle(after, new_run)
    return f"the runs it would wait for wait for each other: {' -> '.join(cycle)}" if cycle else None


def _waits_on(run_dir: str) -> list[Dependency]:
    record = _dependency_record(Dependency("", run_dir))
    queue = (record or {}).get("queue") or {}
    return [Dependency(str(d.get("run")), str(d.get("run_dir")), bool(d.get("ok"))) for d in queue.get("after") or ()]


def dependency_cycle(after: Sequence[Dependency], new_run: str | None = None) -> list[str]:
    """A chain of runs that comes back to itself (or to `new_run`), following each run's recorded `--after`s."""
    def walk(dep: Dependency, trail: list[str]) -> list[str]:
        if dep.run in trail or dep.run == new_run:
            return [*trail, dep.run]
        for nxt in _waits_on(dep.run_dir):
            found = walk(nxt, [*trail, dep.run])
            if found:
                return found
        return []

    for dep in after:
        found = walk(dep, [new_run] if new_run else [])
        if found:
            return found
    return []
