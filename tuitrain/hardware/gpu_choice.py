"""Which GPUs a run may take now, one rule for the preflight, the queue and the plan: "taken"
(`busy_reasons`: a compute process of anyone else on it, whatever its utilisation; or nearly full, or busy
computing for processes NVML does not list), or, where the profile sets `hardware.min_free_memory`, that much
memory free (small runs share a big GPU, busy or not). And `gpus = N`: any N such GPUs, the first by NVML index,
chosen when the run starts (`choose_free`). Pure: GPUs in, words out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from tuitrain.hardware.devices import GpuInfo, GpuProcess
from tuitrain.hardware.na import NA, NaType
from tuitrain.humanize import gib

NEAR_FULL = 0.90  # a GPU this full (memory used / total) is "near-full"
BUSY_UTILIZATION = 50  # a GPU this busy (% of the time a kernel ran) with processes of others is "busy"
HOLDERS_SHOWN = 3  # the processes named in "held by ..."; the rest are counted


def describe_holder(proc: GpuProcess) -> str:
    """Who a GPU process is, for a person deciding whether to wait: 'rank 0 of run X (3.8 GiB)', or a stranger's
    'pid 4100001 python train.py (bob, 3.8 GiB)' ('user unknown' where it cannot be seen: another container)."""
    memory = "no memory yet" if proc.used_memory == 0 else f"memory {gib(proc.used_memory, unit=True)}" \
        if proc.used_memory is NA else gib(proc.used_memory, unit=True)
    if proc.owner is not None:
        return f"{proc.owner.describe()} ({memory})"
    what = f" {proc.command}" if proc.command is not NA else ""
    who = proc.user if proc.user is not NA else "user unknown"
    return f"pid {proc.pid}{what} ({who}, {memory})"


def holders(gpu: GpuInfo, run_id: str | None = None) -> list[GpuProcess]:
    """The processes that hold `gpu` against a new run: every compute process (a desktop's graphics-only
    processes do not count), whatever it holds (one that has allocated nothing yet is about to), except a
    rank of `run_id` itself (a run resumed on its own GPUs). On a MIG-enabled card the processes run on its
    instances, which a run selects one by one: there the card's processes hold nothing whole. Largest first."""
    if gpu.mig_enabled is True:
        return []
    found = [p for p in gpu.processes if "compute" in p.kind
             and not (run_id is not None and p.owner is not None and p.owner.run_id == run_id)]
    return sorted(found, key=lambda p: (-(p.used_memory or 0) if p.used_memory is not NA else 1, p.pid))


def held_by(found: Sequence[GpuProcess]) -> str:
    """'held by rank 0 of run X (3.8 GiB), pid 4100001 (bob, 1.0 GiB) and 2 more'."""
    shown = ", ".join(describe_holder(p) for p in found[:HOLDERS_SHOWN])
    more = f" and {len(found) - HOLDERS_SHOWN} more" if len(found) > HOLDERS_SHOWN else ""
    return f"held by {shown}{more}"


def busy_reasons(gpu: GpuInfo, near_full: float = NEAR_FULL, busy: int = BUSY_UTILIZATION,
                 run_id: str | None = None) -> list[str]:
    """Why `gpu` is taken for a run, as words ("96% full", "97% busy", "held by rank 0 of run X (3.8 GiB)");
    [] when it has room. A compute process of anyone but `run_id` takes it (`holders`: a launch-bound run keeps
    a GPU 15% busy and 5% full, and a second run beside it slows both and may run it out of memory). Memory
    counts whoever holds it, listed or not. Utilisation is the whole GPU's: it counts unless every process on
    the GPU is a rank of `run_id` itself."""
    reasons = []
    fraction = gpu.memory_fraction
    if fraction is not NA and fraction >= near_full:
        reasons.append(f"{fraction:.0%} full")
    ours = run_id is not None and bool(gpu.processes) and all(
        p.owner is not None and p.owner.run_id == run_id for p in gpu.processes)
    if gpu.utilization is not NA and gpu.utilization >= busy and not ours:
        reasons.append(f"{gpu.utilization}% busy")
    found = holders(gpu, run_id)
    if found:
        reasons.append(held_by(found))
    return reasons


def unfit_reasons(gpu: GpuInfo, run_id: str | None = None, min_free: int | None = None,
                  reserved: int = 0) -> list[str]:
    """Why `gpu` cannot take the run now, as words; [] when it can. `reserved`: memory other runs of the queue
    that share this GPU asked for (it may not be allocated yet, so it is not free)."""
    if gpu.lost:
        return ["lost (NVML cannot read it)"]
    if min_free is None:
        return busy_reasons(gpu, run_id=run_id)
    free, total = gpu.memory_free, gpu.memory_total
    if isinstance(free, NaType) or isinstance(total, NaType):
        return ["its free memory cannot be read"]
    left = min(free, total - reserved)
    if left >= min_free:
        return []
    needed = f"{gib(min_free, unit=True)} needed (hardware.min_free_memory)"
    if left < free:
        return [(f"{gib(free, unit=True)} free, but {gib(reserved, unit=True)} of it promised to runs of the queue: "
                f"{gib(left, unit=True)} left, {needed}")]
    return [f"{gib(free, unit=True)} free, {needed}"]


@dataclass(frozen=True)
class GpuChoice:
    asked: int
    chosen: tuple[int, ...]  # NVML indices, at most `asked`
    passed: tuple[str, ...]  # "GPU 0: 96% full", for each GPU passed over

    @property
    def complete(self) -> bool:
        return len(self.chosen) == self.asked

    def why(self) -> str:
        """'GPU 1, 3: the first 2 free (passed over GPU 0: 96% full; GPU 2: 97% busy)'."""
        picked = f"GPU {', '.join(map(str, self.chosen))}" if self.chosen else "no GPU"
        text = f"{picked}: the first {self.asked} free" if self.complete else \
            f"{picked}: only {len(self.chosen)} of the {self.asked} asked are free"
        return text + (f" (passed over {'; '.join(self.passed)})" if self.passed else "")


def choose_free(gpus: Sequence[GpuInfo], count: int, run_id: str | None = None, min_free: int | None = None,
                ruled_out: Mapping[int, str] | None = None, reserved: Mapping[int, int] | None = None) -> GpuChoice:
    """Any `count` GPUs that can take the run, by NVML index. `ruled_out`: GPUs the caller keeps back, with why
    (held by a run of the queue); `reserved`: memory promised on a GPU to runs that share it."""
    chosen: list[int] = []
    passed: list[str] = []
    for gpu in sorted(gpus, key=lambda g: g.index):
        if len(chosen) == count:
            break
        why = [(ruled_out or {})[gpu.index]] if gpu.index in (ruled_out or {}) else \
            unfit_reasons(gpu, run_id, min_free, (reserved or {}).get(gpu.index, 0))
        if why:
            passed.append(f"GPU {gpu.index}: {', '.join(why)}")
        else:
            chosen.append(gpu.index)
    return GpuChoice(count, tuple(chosen), tuple(passed))


def chosen_now(gpus: Sequence[GpuInfo], count: int, min_free: int | None = None) -> tuple[list[int], str]:
    """The GPUs a run asking for any `count` takes if it starts now: the free ones first, then (too few free) the
    others by index, which the preflight then names as taken; and the note the plan shows."""
    choice = choose_free(gpus, count, min_free=min_free)
    rest = [g.index for g in sorted(gpus, key=lambda g: g.index) if g.index not in choice.chosen]
    picked = [*choice.chosen, *rest][:count]
    return picked, f"hardware.gpus = {count}: any {count} free GPU(s); chosen at start (if it started now: {choice.why()})"
