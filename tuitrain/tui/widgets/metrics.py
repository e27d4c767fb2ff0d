"""A run's curves: training and evaluation loss, the learning rate, and the evaluation metrics,
one small plot each (see plot.py), redrawn from the run's series."""

from __future__ import annotations

from typing import Any, Mapping

from textual.app import ComposeResult
from textual.containers import Vertical

from tuitrain.runs.live import is_metric
from tuitrain.tui.format import short_metric
from tuitrain.tui.widgets.plot import Line, LinePlot

METRIC_STYLES = ("green", "yellow", "blue", "magenta", "cyan", "red")


class MetricsPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield LinePlot("loss", id="plot-loss")
        yield LinePlot("learning rate", id="plot-lr")
        yield LinePlot("eval metrics", id="plot-eval")

    def show(self, series: Mapping[str, Any]) -> None:
        """`series`: a run's series by name (each with .steps and .values), as RunWatch folds them."""
        loss_lines = []
        if "loss" in series:
            loss_lines.append(Line("train", series["loss"].steps, series["loss"].values, "cyan"))
        if "eval_loss" in series:
            loss_lines.append(Line("eval", series["eval_loss"].steps, series["eval_loss"].values, "magenta"))
        self.query_one("#plot-loss", LinePlot).set_lines(loss_lines)
        lr = series.get("learning_rate")
        self.query_one("#plot-lr", LinePlot).set_lines([Line("lr", lr.steps, lr.values, "yellow")] if lr else [])
        evals = sorted(k for k in series if is_metric(k) and k != "eval_loss")
        self.query_one("#plot-eval", LinePlot).set_lines(
            [Line(short_metric(k), series[k].steps, series[k].values, METRIC_STYLES[i % len(METRIC_STYLES)])
             for i, k in enumerate(evals)])
