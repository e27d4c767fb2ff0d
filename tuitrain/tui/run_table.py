"""How Home orders and filters its runs (htop-style): a sort column cycled by a key, reversed by
another, and a filter text matched against each run's id, profile and status. Functions of rows
only, so the order survives every refresh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from tuitrain.runs.live import RunRow

SORTS = ("started", "status", "profile", "loss")
# what needs looking at first: going, then ended badly, then ended well
STATUS_ORDER = ("running", "starting", "planned", "stopping", "failed", "lost", "unreadable", "killed",
                "stopped", "finished")


@dataclass(frozen=True)
class RunOrder:
    sort: str = "started"
    reverse: bool = False
    filter: str = ""

    @property
    def default(self) -> bool:
        return self == RunOrder()

    def arrow(self) -> str:
        """The direction a user reads: newest first is ↓ for started, a–z / lowest first ↑ for the others."""
        down = (self.sort == "started") != self.reverse
        return "↓" if down else "↑"


def _key(row: RunRow, sort: str) -> tuple[Any, ...]:
    # each key sorts "first" ascending; the sort is stable, so ties keep the watcher's order (newest first)
    if sort == "status":
        return (STATUS_ORDER.index(row.status) if row.status in STATUS_ORDER else len(STATUS_ORDER),)
    if sort == "profile":
        return (row.profile.lower(),)
    if sort == "loss":
        return (row.loss is None, row.loss if row.loss is not None else 0.0)
    return (-(row.created or row.started or 0.0),)


def matches(row: RunRow, text: str) -> bool:
    """Every word of `text` is in the run's id, profile or status, or a Slurm run's job state (case-insensitive)."""
    haystack = f"{row.id} {row.profile} {row.status} {row.job or ''}".lower()
    return all(word in haystack for word in text.lower().split())


def arrange(rows: Sequence[RunRow], order: RunOrder) -> list[RunRow]:
    """The rows the table shows, in the order it shows them."""
    kept = [r for r in rows if matches(r, order.filter)] if order.filter.strip() else list(rows)
    kept.sort(key=lambda r: _key(r, order.sort))
    if order.reverse:  # the whole order turned over, ties too (as the eye reads it)
        kept.reverse()
    return kept


def describe(order: RunOrder) -> str:
    """The runs pane's title beyond its count: ' · /fail · by loss ↑' (nothing for the default)."""
    parts = []
    if order.filter.strip():
        parts.append(f"/{order.filter.strip()}")
    if order.sort != "started" or order.reverse:
        parts.append(f"by {order.sort} {order.arrow()}")
    return "".join(f" · {p}" for p in parts)
