"""One verb on the runs marked on Home (as k9s and lazygit act on marked items): which of them it applies to, which
it does not and why, and the one question that says both before anything is done. Data in, data out: no Textual."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuitrain.runs.view.live import RunRow

# what each verb does to a run it applies to, as the question says it
DOES = {"stop": "save a checkpoint and stop", "cancel": "leave the queue (never started)",
        "resume": "a new run from its latest complete checkpoint"}
TITLES = {"stop": "Stop", "cancel": "Cancel", "resume": "Resume"}
# an ended run's status as the refusal words it
ENDED = {"lost": "lost (its supervisor is gone)", "unreadable": "its run.json cannot be read"}


def refusal(verb: str, row: RunRow) -> str | None:
    """Why `verb` does not apply to the run of `row`; None when it does."""
    status = row.status
    if status == "unreadable":
        return ENDED["unreadable"]
    if verb == "stop":
        if status == "queued":
            return "queued, not started: x cancels it"
        if status == "stopping":
            return "already stopping"
        if row.final:
            return f"already {ENDED.get(status, status)}"
        return None
    if verb == "cancel":
        return None if status == "queued" else f"not queued ({ENDED.get(status, status)})"
    if verb == "resume":
        if status == "cancelled":
            return "cancelled before it started: nothing to resume"
        if not row.final:
            return f"still {status}: stop it first"
        if not row.checkpoints:
            return "no checkpoint to resume from"
        return None
    raise ValueError(f"no such verb for marked runs: {verb}")


@dataclass(frozen=True)
class BulkPlan:
    """`verb` on marked runs: those it applies to (run id, label), and those it does not (run id, label, why)."""

    verb: str
    runs: tuple[tuple[str, str], ...]
    refused: tuple[tuple[str, str, str], ...]

    def question(self) -> str:
        """What the confirmation asks: each run the verb will act on, then each it leaves, with why."""
        lines = []
        if self.runs:
            count = len(self.runs)
            lines.append(f"{TITLES[self.verb]} {count} run{'s' if count != 1 else ''}: {DOES[self.verb]}?")
            lines += [f"  • {label}" for _, label in self.runs]
        else:
            lines.append(f"{TITLES[self.verb]}: none of the marked runs can be.")
        if self.refused:
            lines.append("Left as they are:")
            lines += [f"  • {label}: {why}" for _, label, why in self.refused]
        return "\n".join(lines)


def plan_for(verb: str, marked: Sequence[str], rows: Sequence[RunRow], labels: Mapping[str, str]) -> BulkPlan:
    """`verb` on the runs `marked` (run ids, in the order marked) of `rows`: a mark whose run is gone is refused."""
    by_id = {row.id: row for row in rows}
    runs, refused = [], []
    for run_id in marked:
        label = labels.get(run_id, run_id)
        row = by_id.get(run_id)
        why = "no longer in the runs folder" if row is None else refusal(verb, row)
        if why is None:
            runs.append((run_id, label))
        else:
            refused.append((run_id, label, why))
    return BulkPlan(verb, tuple(runs), tuple(refused))


def outcome(verb: str, done: Sequence[str], failed: Sequence[str]) -> str:
    """One toast for the whole action: what was done (each run's own line), then what failed."""
    head = f"{TITLES[verb]}: {len(done)} of {len(done) + len(failed)} run{'s' if len(done) + len(failed) != 1 else ''}"
    return "\n".join([head, *done, *(f"not done: {line}" for line in failed)])
