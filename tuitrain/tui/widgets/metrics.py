"""A run's curves: training and evaluation loss, the learning rate, and the evaluation metrics,
one small plot each (see plot.py), redrawn from the run's series.

A run whose frozen profile (profile.toml in its directory: what it was started with, --set overrides
included) never evaluates as it trains says so in the eval plot, and how to evaluate, instead of
waiting for values that will not come."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from textual.app import ComposeResult
from textual.containers import Vertical

from tuitrain.runs.view.live import is_metric
from tuitrain.tui.format import short_metric
from tuitrain.tui.widgets.plot import Line, LinePlot

METRIC_STYLES = ("green", "yellow", "blue", "magenta", "cyan", "red")


@dataclass(frozen=True)
class NoEvaluation:
    """A run of tuitrain's engine whose training.eval_strategy is "no": it evaluates only when asked (e)."""

    written: bool  # eval_strategy = "no" is in the profile (else it is TrainingArguments' default)
    validation: str  # "data": it has validation data; "none": it has none; else the Hub split it would use

    def note(self, live: bool) -> str:
        why = 'training.eval_strategy = "no"' if self.written else \
            'training.eval_strategy is not set ("no", TrainingArguments\' default)'
        overrides = "training.eval_strategy=steps"
        if self.validation == "none":
            why += ", and it has no validation data (data.validation_file)"
            overrides += " data.validation_file=<file>"
        lines = [f"this run does not evaluate: {why}"]
        if live and self.validation == "data":
            lines.append("e evaluates once now")
        elif live and self.validation != "none":
            lines.append(f"e evaluates once now, on the data set's {self.validation!r} split if it has one")
        steps = "stop it (s), then resume it (R)" if live else "resume it (R)"
        lines.append(f"to evaluate as it trains: {steps} with {overrides}")
        return "\n".join(lines)


def _table(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name)
    return table if isinstance(table, dict) else {}


def no_evaluation(profile_file: Path) -> NoEvaluation | None:
    """From a run's frozen profile: NoEvaluation when tuitrain's engine trains it with eval_strategy "no"; None
    when it evaluates, or when that is not known here (an unreadable profile; a [script] run, whose script makes
    its own TrainingArguments)."""
    from tuitrain.profile.implied import implied_training

    try:
        data = tomllib.loads(profile_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("script"):
        return None
    training = _table(data, "training")
    implied = {key: value for key, (value, _why) in implied_training(data).items()}
    strategy = training.get("eval_strategy", training.get("evaluation_strategy", implied.get("eval_strategy", "no")))
    if strategy != "no":
        return None
    given = _table(data, "data")
    if given.get("generate") or given.get("validation_file"):
        validation = "data"
    elif given.get("train_file"):
        validation = "none"
    else:
        validation = str(given.get("validation_split") or "validation")
    return NoEvaluation(written="eval_strategy" in training or "evaluation_strategy" in training,
                        validation=validation)


class MetricsPanel(Vertical):
    def __init__(self, profile_file: Path | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.no_evaluation = no_evaluation(profile_file) if profile_file is not None else None

    def compose(self) -> ComposeResult:
        yield LinePlot("loss", id="plot-loss")
        yield LinePlot("learning rate", id="plot-lr")
        yield LinePlot("eval metrics", id="plot-eval")

    def show(self, series: Mapping[str, Any], live: bool = True, lineage: str | None = None,
             ended: str | None = None) -> None:
        """`series`: a run's series by name (each with .steps and .values), as RunWatch folds them; `live`:
        the run still trains (it can be asked to evaluate now); `lineage`: where the points before the run's
        own come from, for a resumed run (tuitrain.runs.view.lineage); `ended`: how a run that no longer trains ended
        (its plots without values say that none will come, never that they wait)."""
        self.query_one("#plot-loss", LinePlot).set_title(f"loss · {lineage}" if lineage else "loss")
        loss_lines = []
        if "loss" in series:
            loss_lines.append(Line("train", series["loss"].steps, series["loss"].values, "cyan"))
        if "eval_loss" in series:
            loss_lines.append(Line("eval", series["eval_loss"].steps, series["eval_loss"].values, "magenta"))
        self.query_one("#plot-loss", LinePlot).set_lines(loss_lines)
        lr = series.get("learning_rate")
        self.query_one("#plot-lr", LinePlot).set_lines([Line("lr", lr.steps, lr.values, "yellow")] if lr else [])
        evals = sorted(k for k in series if is_metric(k) and k != "eval_loss")
        plot = self.query_one("#plot-eval", LinePlot)
        evaluated = bool(evals) or "eval_loss" in series  # asked once (e): the plots show what it gave
        plot.set_lines(
            [Line(short_metric(k), series[k].steps, series[k].values, METRIC_STYLES[i % len(METRIC_STYLES)])
             for i, k in enumerate(evals)])
        over = None if live else f"none: the run ended ({ended or 'its status unknown'}) before logging any"
        self.query_one("#plot-loss", LinePlot).set_note(over)
        self.query_one("#plot-lr", LinePlot).set_note(over)
        plot.set_note(self.no_evaluation.note(live) if self.no_evaluation is not None and not evaluated else
                      None if live else f"none: the run ended ({ended or 'its status unknown'}) before evaluating")
