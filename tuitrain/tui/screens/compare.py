"""Compare runs: the curves of several runs overlaid, one colour a run, a metric picked from a list
that typing filters; x as step, epoch or time; EMA smoothing; a log scale. Runs still going keep
drawing (their events are read incrementally in a worker). `d` shows, in a panel under the plot, what differs
between the first two runs (tuitrain.runs.view.diff: the lines `tuitrain diff` prints). `v` shows a table of each
run's values (a sweep's, as its runs record them) against its final and best value of the metric in view, the best
first and the winner marked (tui.sweep_results): shown at once when the runs are one sweep's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tuitrain.errors import TuitrainError
from tuitrain.humanize import duration, number
from tuitrain.tui.actions import wait_or_cancel
from tuitrain.tui.curves import (
    SMOOTHINGS,
    X_AXES,
    RunCurves,
    ema,
    log10_values,
    matching,
    metric_order,
    samples_per_step,
    x_values,
)
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.format import short_metric
from tuitrain.tui.plain import plain
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.sweep_results import direction, greater_is_better, result, table
from tuitrain.tui.widgets.field import Field, open_field_key
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.overlay_plot import Curve, OverlayPlot
from tuitrain.tui.widgets.sweep_table import SweepTable
from tuitrain.tui.widgets.text_line import TextLine
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.rundir.best import BestRule
    from tuitrain.tui.app_api import TuitrainAppApi

RUN_STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red", "bright_cyan", "bright_magenta")


class ComparedRun:
    """One run on the compare screen: its id, profile and curves."""

    def __init__(self, run_dir: Path, profile: str) -> None:
        from tuitrain.rundir.layout import RunPaths

        self.paths = RunPaths(run_dir)
        self.id = self.paths.id
        self.profile = profile
        self.curves = RunCurves(self.paths.events, samples_root=self.paths.root)
        self.sweep: dict[str, object] | None = None  # its record's queue.sweep (id, index, of, label); read by a worker
        self.rule: BestRule | None = None  # how it chooses its best checkpoint (its frozen profile); read by a worker

    def read_record(self) -> None:
        """Its sweep and its best rule, from its files (in the worker)."""
        from tuitrain.rundir.best import profile_best_rule
        from tuitrain.rundir.record import read_record
        from tuitrain.runs.queue.entries import sweep_fields

        try:
            self.sweep = sweep_fields(read_record(self.paths))
        except (TuitrainError, OSError):
            self.sweep = None
        self.rule = profile_best_rule(self.paths.profile)

    def label(self, now: float) -> str:
        """What names it in the values table: its sweep's values, else its label on Home ('18:30 demo')."""
        from tuitrain.tui.run_table import run_label

        return str(self.sweep.get("label") or self.id) if self.sweep else run_label(self.id, now)


class CompareScreen(PassesFailedWorkUp, QuitSafe, Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    CSS_PATH = "compare.tcss"
    DEFAULT_CSS = """
    CompareScreen #diff-panel {
        display: none; height: auto; max-height: 50%; padding: 0 1; border-top: hkey $primary-muted;
        overflow-y: auto;
    }
    CompareScreen #diff-panel.shown { display: block; }
    CompareScreen #values { display: none; }
    CompareScreen #values.shown { display: block; }
    """
    # what the plot shows: a change draws it again (a var ignores a value set again)
    metric: var[str | None] = var(None, init=False)
    x_axis: var[str] = var(X_AXES[0], init=False)
    smoothing: var[float] = var(SMOOTHINGS[0], init=False)
    log_y: var[bool] = var(False, init=False)
    HELP_TITLE = "Compare runs"
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Leave the metric filter, or go back to the runs"),
        Binding("slash", "filter", "Filter", key_display="/", priority=True,
                tooltip="Type part of a metric's name to filter the list"),
        Binding("x", "cycle_x", "X axis", tooltip="x as step, epoch or time since the run began"),
        Binding("s", "cycle_smoothing", "Smooth", tooltip="Smoothing (EMA): 0, 0.6, 0.9"),
        Binding("l", "toggle_log", "Log y", tooltip="Log scale for y (values ≤ 0 are left out)"),
        Binding("d", "toggle_diff", "Diff", tooltip="What differs between the first two runs: data, code, profile, "
                "versions, GPUs (as `tuitrain diff` says it)"),
        Binding("v", "toggle_values", "Values", tooltip="A table of each run's values (a sweep's) against its final "
                "and best value of the metric, the best first, the winner marked (shown at once for a sweep)"),
    ]

    class Updated(Message):
        def can_replace(self, message: Message) -> bool:
            return isinstance(message, CompareScreen.Updated)

    class Diffed(Message):
        """The diff of the first two runs, read in a worker: its lines, or why there are none."""

        def __init__(self, lines: list[str]) -> None:
            super().__init__()
            self.lines = lines

    def __init__(self, runs: list[tuple[Path, str]]) -> None:
        """`runs`: (run directory, profile name) of each run to overlay, in legend order."""
        super().__init__()
        self.runs = [ComparedRun(Path(run_dir), profile) for run_dir, profile in runs]
        self.metrics: list[str] = []  # every metric of any run, in picker order
        self.shown: list[str] = []  # those the filter lets through
        self.read = False  # each run's record read (its sweep): the values table decided

    def compose(self) -> ComposeResult:
        names = ", ".join(run.id for run in self.runs)
        yield TextLine(f"compare {len(self.runs)} run{'s' if len(self.runs) != 1 else ''} · {names}",
                       classes="title-bar", id="title")
        with Horizontal(id="compare-body"):
            with Vertical(id="picker"):
                yield Field(placeholder="filter metrics", id="metric-filter")
                yield OptionList(id="metrics", markup=False)
            yield OverlayPlot(id="overlay")
        yield SweepTable(id="values")
        yield Words("", id="diff-panel")
        yield TextLine("", id="compare-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#metrics", OptionList).focus()
        self.update_status()
        self.follow_runs()

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def follow_runs(self) -> None:
        for run in self.runs:
            run.read_record()
        first = True
        while True:
            changed = False
            for run in self.runs:
                if run.curves.samples_per_step is None and not run.curves.curves:  # known before the first log
                    run.curves.samples_per_step = samples_per_step(run.paths.root)
                changed |= run.curves.poll()
            if changed or first:
                self.post_message(self.Updated())
            first = False
            if not wait_or_cancel(self.app.monitor_interval):
                return

    def on_compare_screen_updated(self, _message: Updated) -> None:
        if not self.read:  # the first news: every run's record read
            self.read = True
            sweeps = {str(run.sweep.get("id")) if run.sweep else None for run in self.runs}
            if len(self.runs) > 1 and len(sweeps) == 1 and None not in sweeps:  # one sweep's runs: its question
                self.query_one("#values", SweepTable).add_class("shown")
        metrics = metric_order({name for run in self.runs for name in run.curves.curves})
        if metrics != self.metrics:
            self.metrics = metrics
            self.refilter()
        self.draw()

    # ------------------------------------------------------------------------------ the picker
    def refilter(self) -> None:
        """Fill the list with the metrics the filter lets through, keeping the metric in view."""
        text = self.query_one("#metric-filter", Input).value
        shown = matching(self.metrics, text)
        options = self.query_one("#metrics", OptionList)
        if shown != self.shown:
            self.shown = shown
            options.clear_options()
            options.add_options([Option(plain(short_metric(name) if name.startswith("eval_") else name), id=name)
                                 for name in shown])
        if not shown:
            return
        if self.metric not in shown:
            self.metric = shown[0]
        options.highlighted = shown.index(self.metric)

    @on(Input.Changed, "#metric-filter")
    def _filter_changed(self, _event: Input.Changed) -> None:
        self.refilter()
        self.update_status()

    @on(Input.Submitted, "#metric-filter")
    def _filter_submitted(self, _event: Input.Submitted) -> None:
        self.query_one("#metrics", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#metrics")
    def _metric_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self.metric = event.option.id

    # ------------------------------------------------------------------------------ the plot
    def curves(self) -> list[Curve]:
        """The metric of each run that has it, as the plot draws it (smoothed, log10)."""
        out = []
        for i, run in enumerate(self.runs):
            curve = run.curves.curves.get(self.metric or "")
            if curve is None or not len(curve):
                continue
            ys = ema(curve.values, self.smoothing)
            if self.log_y:
                ys = log10_values(ys)
            xs = x_values(curve, self.x_axis, run.curves.begin)
            label = f"{run.id} · {run.profile}"
            out.append(Curve(label, xs, ys, RUN_STYLES[i % len(RUN_STYLES)], number(curve.values[-1])))
        return out

    def watch_metric(self) -> None:
        self.draw()

    watch_x_axis = watch_smoothing = watch_log_y = watch_metric

    def draw(self) -> None:
        curves = self.curves()
        missing = len(self.runs) - len(curves)
        if self.metric is None:
            empty = "no metrics yet"
        elif not curves:
            empty = f"no run has {self.metric}"
        elif self.x_axis == "epoch":
            empty = "no epochs in these events: x as step or time (x)"
        else:
            empty = "no values to draw (a log scale leaves out values ≤ 0)"
        x_format = (lambda s: duration(s)) if self.x_axis == "time" else number
        y_format = (lambda v: number(10 ** v, 3)) if self.log_y else (lambda v: number(v, 3))
        self.query_one(OverlayPlot).show(curves, x_label=self.x_axis, x_format=x_format, y_format=y_format,
                                         empty=empty)
        self.update_status(missing)
        self.show_values()

    def show_values(self) -> None:
        """The values table on the metric in view, when it is shown."""
        panel = self.query_one("#values", SweepTable)
        if not panel.has_class("shown") or self.metric is None:
            return
        metric = self.metric
        greater = greater_is_better(metric, [run.rule for run in self.runs if run.rule is not None])
        results = []
        now = self.app.clock()
        for run in self.runs:
            curve = run.curves.curves.get(metric)
            results.append(result(run.id, run.label(now), curve.values if curve is not None else (), greater))
        header, rows = table(results, metric, greater)
        panel.show(f"{len(self.runs)} runs {direction(metric, greater)} · ★ the winner", header, rows)

    def update_status(self, missing: int = 0) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(self.metric or "no metric", style="bold")
        text.append(f" · x {self.x_axis} · smoothing {self.smoothing:g} · y {'log' if self.log_y else 'linear'}")
        if missing:
            text.append(f" · {missing} run{'s' if missing > 1 else ''} without it", style="yellow")
        self.query_one("#compare-status", TextLine).set(text)

    # ------------------------------------------------------------------------------ keys
    def action_filter(self) -> None:
        open_field_key(self)
        self.query_one("#metric-filter", Field).focus_now()

    def action_cycle_x(self) -> None:
        self.x_axis = X_AXES[(X_AXES.index(self.x_axis) + 1) % len(X_AXES)]

    def action_cycle_smoothing(self) -> None:
        self.smoothing = SMOOTHINGS[(SMOOTHINGS.index(self.smoothing) + 1) % len(SMOOTHINGS)]

    def action_toggle_log(self) -> None:
        self.log_y = not self.log_y

    def action_toggle_values(self) -> None:
        self.query_one("#values", SweepTable).toggle_class("shown")
        self.show_values()

    def action_toggle_diff(self) -> None:
        panel = self.query_one("#diff-panel", Static)
        if panel.has_class("shown"):
            panel.remove_class("shown")
            return
        if len(self.runs) < 2:
            self.notify("mark two runs on Home (space), then C, to see what differs between them", severity="warning")
            return
        panel.update(f"reading what differs between {self.runs[0].id} and {self.runs[1].id}…")
        panel.add_class("shown")
        self.read_diff()

    @work(thread=True, exclusive=True, group="compare-diff", exit_on_error=False)
    def read_diff(self) -> None:
        from tuitrain.rundir.record import RunRecordError, read_record
        from tuitrain.runs.view.diff import NO_DIFFERENCE, compare_runs

        a, b = self.runs[0].paths, self.runs[1].paths
        try:
            found = compare_runs(a, read_record(a), b, read_record(b))
        except (RunRecordError, OSError) as exc:
            self.post_message(self.Diffed([f"cannot compare them: {exc}"]))
            return
        lines = [f"a  {a.id} · {self.runs[0].profile}", f"b  {b.id} · {self.runs[1].profile}"]
        if len(self.runs) > 2:
            lines.append(f"(the first two of {len(self.runs)} runs)")
        lines += found.lines() or [NO_DIFFERENCE]
        self.post_message(self.Diffed(lines))

    def on_compare_screen_diffed(self, message: Diffed) -> None:
        self.query_one("#diff-panel", Static).update(Text("\n".join(message.lines), no_wrap=True,
                                                          overflow="ellipsis"))

    def action_back(self) -> None:
        panel = self.query_one("#diff-panel", Static)
        if panel.has_class("shown"):
            panel.remove_class("shown")
            return
        box = self.query_one("#metric-filter", Input)
        if box.has_focus:
            self.query_one("#metrics", OptionList).focus()
            return
        self.app.pop_screen()
