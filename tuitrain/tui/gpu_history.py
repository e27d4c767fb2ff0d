"""Each GPU's recent utilisation and memory, this machine's and each other workstation's: the one place the app
keeps them (the GPUs screen and Home's strip draw them as sparklines, reading them here). This machine's come whole
from the sampler's rings with each sample (`local`); another box's are added as Home's stream of it carries them
(`add`): a box sends its GPUs only when they changed, at most every 2 s, so its history is one of its changes.
Fractions of 0 to 1; None where NVML said N/A. No Textual."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tuitrain.hardware.na import NA

if TYPE_CHECKING:
    from tuitrain.hardware.devices import GpuInfo
    from tuitrain.hardware.sampler import SampledView

HISTORY = 60  # points kept a GPU: the widest sparkline drawn


@dataclass(frozen=True)
class Trace:
    """One GPU's recent utilisation and memory in use, oldest first, as fractions (None: not known then)."""

    utilization: tuple[float | None, ...] = ()
    memory: tuple[float | None, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.utilization or self.memory)


def _fraction(value: Any, whole: Any) -> float | None:
    if value is NA or whole is NA or value is None or not whole:
        return None
    return max(0.0, min(1.0, float(value) / float(whole)))


class GpuHistory:
    def __init__(self, length: int = HISTORY) -> None:
        self.length = length
        self._hosts: dict[str, dict[int, tuple[deque[float | None], deque[float | None]]]] = {}

    def _rings(self, host: str, index: int) -> tuple[deque[float | None], deque[float | None]]:
        gpus = self._hosts.setdefault(host, {})
        if index not in gpus:
            gpus[index] = (deque(maxlen=self.length), deque(maxlen=self.length))
        return gpus[index]

    def local(self, host: str, view: SampledView) -> None:
        """This machine's GPUs as the sampler's rings hold them (`view.gpu_history`), in place of what was kept."""
        totals = {gpu.index: gpu.memory_total for gpu in view.snapshot.gpus}
        self._hosts[host] = {}
        for index, points in view.gpu_history.items():
            utilization, memory = self._rings(host, index)
            for point in points[-self.length:]:
                utilization.append(_fraction(point.utilization, 100))
                memory.append(_fraction(point.memory_used, totals.get(index, NA)))

    def add(self, host: str, gpus: Iterable[GpuInfo]) -> None:
        """One sample of a box's GPUs, added to what is kept of each."""
        for gpu in gpus:
            utilization, memory = self._rings(host, gpu.index)
            utilization.append(None if gpu.lost else _fraction(gpu.utilization, 100))
            memory.append(None if gpu.lost else _fraction(gpu.memory_used, gpu.memory_total))

    def keep(self, hosts: Iterable[str]) -> None:
        """Only these hosts' GPUs (a box that left the settings is forgotten)."""
        wanted = set(hosts)
        self._hosts = {host: gpus for host, gpus in self._hosts.items() if host in wanted}

    def trace(self, host: str, index: int) -> Trace:
        rings = self._hosts.get(host, {}).get(index)
        return Trace(tuple(rings[0]), tuple(rings[1])) if rings else Trace()

    def traces(self, host: str) -> list[Trace]:
        """Each GPU's of `host`, by index."""
        return [self.trace(host, index) for index in sorted(self._hosts.get(host, {}))]

    def every(self, hosts: Sequence[str]) -> Mapping[str, list[Trace]]:
        """Each of `hosts`' traces (those with any)."""
        return {host: found for host in hosts if (found := self.traces(host)) and any(found)}
