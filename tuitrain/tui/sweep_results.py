"""The question a sweep is for: which values won. Each compared run's values (its sweep label as run.json keeps it,
`learning_rate=3e-05 seed=1`, one column a key) against its final and its best value of one metric, the best first
(runs without the metric last), the winner marked. Data in, data out: Compare draws it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuitrain.humanize import number

if TYPE_CHECKING:
    from tuitrain.rundir.best import BestRule

RUN_COLUMN = "run"  # the column of a run's words that name no key (a run of no sweep: its label)
WINNER = "★"


@dataclass(frozen=True)
class RunResult:
    """One run's line: its values, and its final and best value of the metric (None: it has none yet)."""

    run_id: str
    values: tuple[tuple[str, str], ...]
    final: float | None
    best: float | None


def label_values(label: str) -> tuple[tuple[str, str], ...]:
    """'learning_rate=3e-05 seed=1' → (('learning_rate', '3e-05'), ('seed', '1')); words that name no key are one
    value under RUN_COLUMN."""
    pairs, loose = [], []
    for word in label.split():
        key, sep, value = word.partition("=")
        if sep and key:
            pairs.append((key, value))
        else:
            loose.append(word)
    return ((RUN_COLUMN, " ".join(loose)), *pairs) if loose else tuple(pairs)


def greater_is_better(metric: str, rules: Sequence[BestRule]) -> bool:
    """Whether a higher value of `metric` is better: the runs' own rule (`training.greater_is_better`) when it is
    the metric they choose their best checkpoint by, else runs.best's rule of the metric's name."""
    from tuitrain.rundir.best import best_rule

    own = [rule for rule in rules if rule.metric == metric]
    if own:
        return own[0].greater_is_better
    return best_rule(metric).greater_is_better


def result(run_id: str, label: str, values: Sequence[float], greater: bool) -> RunResult:
    """A run's line from its label and the metric's values in the order it logged them (NaN is never best)."""
    finite = [v for v in values if not math.isnan(v)]
    best = (max(finite) if greater else min(finite)) if finite else None
    return RunResult(run_id, label_values(label), values[-1] if len(values) else None, best)


def ranked(results: Sequence[RunResult], greater: bool) -> list[RunResult]:
    """The best first; runs without a value of the metric last, in the order given (a stable sort)."""
    return sorted(results, key=lambda r: (r.best is None, -(r.best or 0.0) if greater else (r.best or 0.0)))


def keys(results: Sequence[RunResult]) -> list[str]:
    """Every value's key, in the order first met (RUN_COLUMN first when any run has one)."""
    seen: dict[str, None] = {}
    for line in results:
        for key, _ in line.values:
            seen.setdefault(key, None)
    return sorted(seen, key=lambda k: k != RUN_COLUMN)


def table(results: Sequence[RunResult], metric: str, greater: bool) -> tuple[list[str], list[list[str]]]:
    """(the header, the lines) of the table Compare shows: the winner's mark, each key's value, the final and best
    value of `metric`; sorted by the best, the winner (the first with a value) marked."""
    lines = ranked(results, greater)
    columns = keys(lines)
    header = ["", *columns, f"final {metric}", f"best {metric}"]
    rows = []
    for position, line in enumerate(lines):
        values = dict(line.values)
        mark = WINNER if position == 0 and line.best is not None else ""
        rows.append([mark, *(values.get(k, "-") for k in columns),
                     number(line.final) if line.final is not None else "-",
                     number(line.best) if line.best is not None else "-"])
    return header, rows


def direction(metric: str, greater: bool) -> str:
    """What the table says of its order: 'by best eval_loss, lower is better'."""
    return f"by best {metric}, {'higher' if greater else 'lower'} is better"
