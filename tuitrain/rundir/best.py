"""Which checkpoint of a run is its best: one rule for all of tuitrain.

The best is the checkpoint this run wrote whose evaluation at its own step has the best value of the run's metric
(`training.metric_for_best_model`, else eval_loss; higher is better when `training.greater_is_better` says so, else
when the metric's name does not end in "loss", as the Trainer reads them), the earliest on a tie. An evaluation at a
step with no checkpoint is not a candidate: nothing of it could be kept or exported.

The engine's rotation keeps this one (`best_written`, from `engine.trainer`), and the Trainer's own `best_model_checkpoint` (what
`load_best_model_at_end` loads) is set to it; the app's ★, the monitor's header, Home's BEST and Export's "the best"
read it from the run's events (`runs.view.live.EventsTail`)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BestRule:
    metric: str  # as evaluations name it: "eval_loss", "eval_f1"
    greater_is_better: bool

    def score(self, metrics: Mapping[str, Any]) -> float | None:
        """The metric's value in one evaluation's `metrics` (None when it is absent or not a number)."""
        value = metrics.get(self.metric)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:  # NaN is never best
            return None
        return float(value)


def best_rule(metric_for_best_model: Any = None, greater_is_better: Any = None) -> BestRule:
    """The rule of TrainingArguments' two keys (either may be unset)."""
    metric = str(metric_for_best_model or "loss")
    if not metric.startswith("eval_"):
        metric = f"eval_{metric}"
    greater = (not metric.endswith("loss")) if greater_is_better is None else bool(greater_is_better)
    return BestRule(metric, greater)


def profile_best_rule(profile_file: Path) -> BestRule:
    """The rule of a run's frozen profile (its [training] as the Trainer got it)."""
    try:
        training = tomllib.loads(profile_file.read_text(encoding="utf-8")).get("training", {})
    except (OSError, ValueError):
        training = {}
    if not isinstance(training, dict):
        training = {}
    return best_rule(training.get("metric_for_best_model"), training.get("greater_is_better"))


def best_of(scores: Iterable[tuple[int, float | None]], rule: BestRule) -> tuple[int, float] | None:
    """Of (step, score) pairs, one a checkpoint, the best: (step, score), the earliest step on a tie; None while no
    checkpoint has a score."""
    scored = [(step, value) for step, value in scores if value is not None]
    if not scored:
        return None
    sign = -1.0 if rule.greater_is_better else 1.0
    return min(scored, key=lambda pair: (sign * pair[1], pair[0]))


def best_written(written: Iterable[Path], log_history: Iterable[Mapping[str, Any]], rule: BestRule) -> Path | None:
    """The best of the checkpoint folders a run wrote (checkpoint-N), scored from the Trainer's log history (the
    engine's view; viewers fold the same evaluations from the run's events)."""
    scores: dict[int, float] = {}
    for entry in log_history:
        score, step = rule.score(entry), entry.get("step")
        if score is not None and isinstance(step, int):
            scores[step] = score
    steps = {int(p.name.rsplit("-", 1)[-1]): p for p in written}
    found = best_of(((step, scores.get(step)) for step in steps), rule)
    return steps[found[0]] if found else None
