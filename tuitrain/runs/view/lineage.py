"""A resumed run's curves with its ancestors' joined on: each parent's logged and evaluated values up to the
checkpoint its child started from, then the child's own (the view W&B's resumed runs give). Ancestors have
ended, so what they contribute is read once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord, RunRecordError, read_record
from tuitrain.runs.view.live import EventsTail, Series

MAX_GENERATIONS = 32  # a resume of a resume of …: far past any real chain, and a loop in damaged records ends


@dataclass(frozen=True)
class Ancestor:
    run_id: str
    until_step: int  # the step of the checkpoint its child resumed from


@dataclass
class Lineage:
    ancestors: list[Ancestor] = field(default_factory=list)  # oldest first
    series: dict[str, Series] = field(default_factory=dict)  # their points, each up to its child's start

    def joined(self, own: Mapping[str, Series]) -> dict[str, Series]:
        """The ancestors' points, then the run's own, for every series either has."""
        if not self.series:
            return dict(own)
        out: dict[str, Series] = {}
        for name in {*self.series, *own}:
            joined = Series()
            for part in (self.series.get(name), own.get(name)):
                if part is not None:
                    joined.steps.extend(part.steps)
                    joined.values.extend(part.values)
            out[name] = joined
        return out

    def note(self) -> str | None:
        """One line for the metrics tab: where the joined points come from."""
        if not self.ancestors:
            return None
        parts = [f"steps ≤ {a.until_step} from {a.run_id}" for a in self.ancestors]
        return "resumed: " + ", ".join(parts)


def checkpoint_step(path: str | None) -> int | None:
    match = re.search(r"checkpoint-(\d+)$", str(path or "").rstrip("/"))
    return int(match.group(1)) if match else None


def read_lineage(paths: RunPaths, record: RunRecord) -> Lineage:
    """The ancestors of a run found beside it in its runs root (a parent moved or removed ends the chain)."""
    chain: list[tuple[RunPaths, int]] = []
    child = record
    seen = {paths.id}
    while len(chain) < MAX_GENERATIONS:
        parent_id, step = child.get("parent"), checkpoint_step(child.get("resume_from"))
        if not parent_id or step is None or parent_id in seen:
            break
        parent = RunPaths(paths.root.parent / parent_id)
        try:
            child = read_record(parent)
        except (RunRecordError, OSError):
            break
        seen.add(parent_id)
        chain.append((parent, step))
    lineage = Lineage()
    for parent, until in reversed(chain):  # oldest first; each one's points up to its child's start
        tail = EventsTail(parent.events)
        tail.poll()
        start = lineage_end(lineage)
        for name, values in tail.series.items():
            kept = lineage.series.setdefault(name, Series())
            for at, value in zip(values.steps, values.values, strict=True):
                if start < at <= until:
                    kept.add(at, value)
        lineage.ancestors.append(Ancestor(parent.id, until))
    return lineage


def lineage_end(lineage: Lineage) -> float:
    """The last step the ancestors already cover (a grandparent's points past its child's start are not kept)."""
    return float(lineage.ancestors[-1].until_step) if lineage.ancestors else float("-inf")
