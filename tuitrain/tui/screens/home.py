"""Home: profiles beside runs, the hardware strip, and the keys that start, open, resume and stop runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Input, OptionList, Static
from textual.widgets.data_table import ColumnKey
from textual.widgets.option_list import Option

from tuitrain.humanize import duration, number
from tuitrain.tui.actions import run_request
from tuitrain.tui.format import clock, short_metric, status_text, step_text
from tuitrain.tui.run_table import SORTS, RunOrder, arrange, checkpoint_step, describe, run_labels
from tuitrain.tui.widgets.hardware_strip import HardwareStrip
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.text_line import TextLine

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.runs.live import RunRow
    from tuitrain.tui.app_api import TuitrainAppApi
    from tuitrain.tui.profiles import ProfileEntry

WIDE_COLUMNS = ("RUN", "STATUS", "STEP", "LOSS", "BEST", "STARTED", "TIME")
NARROW_COLUMNS = ("RUN", "STATUS", "STEP", "LOSS", "BEST", "TIME")


SHRINKABLE = (("RUN", 12), ("BEST", 10))  # the columns that give way, first to last, and how far


def _cell_len(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


def column_widths(columns: tuple[str, ...], cells: list[dict[str, object]], room: int) -> tuple[int | None, ...]:
    """Widths that fit the table's `room`: every column as wide as its widest cell (None: left to
    the table) unless they do not all fit; then RUN, then BEST, are cut (with an ellipsis), so STATUS
    and TIME always show whole."""
    natural = {c: max([len(c), *(_cell_len(cell[c]) for cell in cells)]) for c in columns}
    # a cell is padded by one on each side; the last one's right padding may fall off the edge
    over = sum(w + 2 for w in natural.values()) - 1 - room
    fixed: dict[str, int | None] = dict.fromkeys(columns)
    for name, least in SHRINKABLE:
        if over > 0 and name in natural:
            cut = min(over, max(0, natural[name] - least))
            if cut:
                fixed[name] = natural[name] - cut
                over -= cut
    return tuple(fixed[c] for c in columns)


def runs_title(count: int | None, order: RunOrder | None = None, shown: int | None = None, news: str = "") -> str:
    """The runs pane's title; `count` None while the runs root is not read yet (no "none yet" flash);
    with a filter, how many of them it shows, the sort when it is not the default, and the checkpoints
    written lately (`news`: '3 checkpoints of 2 runs')."""
    if count is None:
        return "Runs — reading…"
    if not count:
        return "Runs — none yet: highlight a profile and press r"
    order = order or RunOrder()
    counted = f"{shown} of {count}" if order.filter.strip() and shown is not None else str(count)
    return f"Runs ({counted}){describe(order)}" + (f" · new: {news}" if news else "")


def empty_runs_hint(count: int, order: RunOrder) -> str:
    """What Enter on an empty runs table says: how runs come, or that the filter hides them."""
    if count and order.filter.strip():
        return f"no run matches /{order.filter.strip()} (of {count}): escape clears the filter"
    return "no runs yet: highlight a profile and press r to start one"


class RunsTable(DataTable):
    """The runs table: Enter on it with no rows says why there are none (a DataTable would keep still)."""

    class Empty(Message):
        """Enter on the table while it has no rows."""

    def action_select_cursor(self) -> None:
        if self.row_count == 0:
            self.post_message(self.Empty())
            return
        super().action_select_cursor()


class HomeScreen(Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    CSS_PATH = "home.tcss"
    BINDINGS = [
        Binding("r", "run_profile", "Run", tooltip="Launch the highlighted profile"),
        Binding("n", "new_profile", "New", tooltip="Create a profile in the editor"),
        Binding("e", "edit_profile", "Edit", tooltip="Edit the highlighted profile"),
        Binding("enter", "open_run", "Open", tooltip="Open the selected run's monitor", show=False),
        Binding("R", "resume_run", "Resume", tooltip="Resume the selected run from its latest complete checkpoint "
                "(a dialog: the checkpoint, --set overrides)"),
        Binding("s", "stop_run", "Stop", tooltip="Ask the selected run to save a checkpoint and stop"),
        Binding("space", "mark_run", "Mark", show=False, tooltip="Mark the highlighted run for compare (again: unmark)"),
        Binding("C", "compare", "Compare",
                tooltip="Overlay the marked runs' curves (none marked: the highlighted run)"),
        Binding("slash", "filter_runs", "Filter", show=False, key_display="/",
                tooltip="Filter the runs by id, profile or status as you type (enter keeps it, escape clears it)"),
        Binding("o", "sort_runs", "Sort", show=False, tooltip="Sort the runs by the next column: started, status, profile, loss"),
        Binding("O", "reverse_runs", "Reverse", show=False, tooltip="Reverse the runs' order"),
        Binding("escape", "clear_filter", "Clear filter", show=False, tooltip="Clear the runs filter"),
        Binding("a", "import_accelerate", "Import accelerate config", show=False,
                tooltip="A new profile from accelerate's default config (what `accelerate config` wrote)"),
        # Textual's own Tab, which the help lists once among the keys of every screen
        Binding("tab", "app.focus_next", "", show=False),
        Binding("shift+tab", "app.focus_previous", "", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.profiles: list[ProfileEntry] = []
        self._columns: tuple[str, ...] = ()
        self._widths: tuple[int | None, ...] = ()
        self._rows: list[RunRow] = []
        self._ready = False
        self._profiles_stamp: object = None
        self.marked: list[str] = []  # run ids marked for compare, in the order marked
        self.labels: dict[str, str] = {}  # run id → what the RUN column shows of it (run_table.run_labels)
        self.saved: dict[str, str] = {}  # run id → its newest checkpoint still news (the app's CheckpointNews)
        self._count = 0
        self.order = RunOrder()  # the table's sort and filter, kept across refreshes

    def compose(self) -> ComposeResult:
        yield TextLine(f"tuitrain · runs in {self.app.show_path(self.app.runs_root)}", classes="title-bar", id="title")
        yield HardwareStrip(self.app.hardware_line, id="hardware")
        with Horizontal(id="home-body"):
            with Vertical(id="profiles-pane"):
                yield Static("Profiles", classes="pane-title")
                yield OptionList(id="profiles")
            with Vertical(id="runs-pane"):
                yield TextLine("Runs", classes="pane-title", id="runs-title")
                yield Input(placeholder="filter runs: id, profile or status", id="runs-filter")
                table: DataTable = RunsTable(id="runs", cursor_type="row", zebra_stripes=False)
                yield table
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#runs-filter", Input).display = False
        self._ready = True
        self.call_after_refresh(self.load_profiles)
        self.call_after_refresh(self.offer_accelerate_config)
        self._ensure_columns()
        self.runs_polled(self.app.rows)
        self.query_one("#runs", DataTable).focus()

    # ------------------------------------------------------------------------------ profiles
    @work(thread=True, exclusive=True, group="profiles", exit_on_error=False)
    def load_profiles(self, only_if_changed: bool = False) -> None:
        """List the profiles; on each runs poll, only when a profile folder changed (a file added,
        removed or renamed there, by the editor or by hand)."""
        from tuitrain.tui.profiles import find_profiles, profile_folders_stamp

        stamp = profile_folders_stamp(self.app.cwd)
        if only_if_changed and stamp == self._profiles_stamp:
            return
        entries = find_profiles(self.app.cwd)
        self._profiles_stamp = stamp
        self.app.call_from_thread(self._show_profiles, entries)

    def _show_profiles(self, entries: list[ProfileEntry]) -> None:
        self.profiles = entries
        options = self.query_one("#profiles", OptionList)
        highlighted = options.highlighted
        options.clear_options()
        for entry in entries:
            prompt = Text.assemble((entry.name, "bold"), ("  " + entry.where, "dim"))
            options.add_option(Option(prompt, id=str(entry.path)))
        if entries:
            options.highlighted = min(highlighted or 0, len(entries) - 1)

    def selected_profile(self) -> ProfileEntry | None:
        options = self.query_one("#profiles", OptionList)
        if options.highlighted is None or not self.profiles:
            return None
        return self.profiles[min(options.highlighted, len(self.profiles) - 1)]

    def on_screen_resume(self) -> None:
        self.load_profiles()
        self.runs_polled(self.app.rows)
        self.hardware_sampled(self.app.hardware_line)

    # ------------------------------------------------------------------------------ runs
    def _wanted_columns(self) -> tuple[str, ...]:
        return NARROW_COLUMNS if self.has_class("-narrow") or self.app.size.width < 100 else WIDE_COLUMNS

    def _room(self) -> int:
        """The cells' room in the runs table (less a scrollbar's); before its first layout, the
        screen's width less the profiles pane's."""
        table = self.query_one("#runs", DataTable)
        if table.size.width:
            return table.scrollable_content_region.width
        return self.app.size.width - (0 if self._wanted_columns() == NARROW_COLUMNS else 29)

    def _ensure_columns(self, widths: tuple[int | None, ...] | None = None) -> None:
        columns = self._wanted_columns()
        widths = widths if widths is not None and len(widths) == len(columns) else (None,) * len(columns)
        if (columns, widths) == (self._columns, self._widths):
            return
        table = self.query_one("#runs", DataTable)
        table.clear(columns=True)
        for name, width in zip(columns, widths, strict=True):
            table.add_column(name, key=name, width=width)
        self._columns, self._widths = columns, widths
        self._rows = []

    def on_resize(self) -> None:
        if not self._ready:
            return
        self.runs_polled(self.app.rows)  # the columns' widths follow the table's

    def _cells(self, row: RunRow) -> dict[str, object]:
        cells = self._all_cells(row)
        return {k: cells[k] for k in self._columns}

    def _all_cells(self, row: RunRow) -> dict[str, object]:
        now = self.app.clock()
        end = row.ended or (now if not row.final and row.status != "lost" else None)
        best = f"{short_metric(row.best_metric)} {number(row.best)}" if row.best is not None else "-"
        status = status_text(row.status)
        if row.status == "failed" and row.failed_rank is not None:
            status.append(f" r{row.failed_rank}", style="red")
        if row.job:  # a Slurm run: its job's state beside tuitrain's own
            status.append(f" · {row.job}", style="dim" if row.final else "")
        if row.id in self.saved and not row.final:  # a live run's checkpoint written lately (run_table.NEWS_SECONDS)
            status.append(f" · ckpt {checkpoint_step(self.saved[row.id])}", style="bold green")
        marked = row.id in self.marked
        label = self.labels.get(row.id, row.id)
        return {
            "RUN": Text(("✓ " if marked else "") + label, style="bold" if marked else "", no_wrap=True,
                        overflow="ellipsis", end=""),
            "STATUS": status,
            "STEP": step_text(row.step, row.max_steps, 5),
            "LOSS": number(row.loss),
            "BEST": Text(best, no_wrap=True, overflow="ellipsis", end=""),
            "STARTED": clock(row.started or row.created),
            "TIME": duration(end - row.started) if row.started and end else "-",
        }

    def runs_polled(self, rows: list[RunRow]) -> None:
        if not self._ready or not self.shown:
            return  # a hidden Home catches up when shown (on_screen_resume)
        table = self.query_one("#runs", DataTable)
        selected = self.selected_run_id()  # before new column widths rebuild the table
        self.marked = [i for i in self.marked if any(r.id == i for r in rows)]
        count = len(rows) if self.app.polls else None
        self._count = len(rows)
        now = self.app.clock()
        self.labels = run_labels([r.id for r in rows], now)
        saved = self.app.checkpoint_news.marks(now)
        news_changed, self.saved = saved != self.saved, saved
        rows = arrange(rows, self.order)
        columns = self._wanted_columns()
        self._ensure_columns(column_widths(columns, [self._all_cells(r) for r in rows], self._room()))
        ids = [r.id for r in rows]
        self.query_one("#runs-title", TextLine).set(
            runs_title(count, self.order, len(rows), self.app.checkpoint_news.summary(now)))
        if self.app.polls:
            self.load_profiles(only_if_changed=True)
        if ids != [r.id for r in self._rows]:
            table.clear()
            for row in rows:
                table.add_row(*self._cells(row).values(), key=row.id)
            if selected in ids:
                table.move_cursor(row=ids.index(selected), animate=False)
        else:
            for old, row in zip(self._rows, rows, strict=True):
                new = self._cells(row)
                if old != row or not row.final or news_changed:
                    for column, value in new.items():
                        # a column left to the table grows with its cells ("running" → "finished · COMPLETED")
                        grows = _cell_len(value) > table.columns[ColumnKey(column)].content_width
                        table.update_cell(row.id, column, value, update_width=grows)
        self._rows = list(rows)

    @property
    def shown(self) -> bool:
        """On top, or under a dialog (Textual's is_current also counts a screen under a full one)."""
        top = self.app.screen
        return top is self or (isinstance(top, ModalScreen) and self.app.screen_stack[-2:-1] == [self])

    def hardware_sampled(self, line: str) -> None:
        if self._ready and self.shown:
            self.query_one(HardwareStrip).set(line)

    def selected_run_id(self) -> str | None:
        table = self.query_one("#runs", DataTable)
        if table.row_count == 0:
            return None
        try:
            return table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        except Exception:  # noqa: BLE001 - an empty or moving table
            return None

    def selected_run_dir(self) -> Path | None:
        run_id = self.selected_run_id()
        return self.app.runs_root / run_id if run_id else None

    # ------------------------------------------------------------------------------ actions
    @on(DataTable.RowSelected, "#runs")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_run()

    @on(RunsTable.Empty)
    def _no_run_to_open(self, event: RunsTable.Empty) -> None:
        self.notify(empty_runs_hint(self._count, self.order), severity="warning")

    @on(OptionList.OptionSelected, "#profiles")
    def _profile_selected(self, event: OptionList.OptionSelected) -> None:
        # Enter opens the profile; a run starts only from r (then the launch dialog's Enter)
        self.action_edit_profile()

    def action_mark_run(self) -> None:
        """Mark or unmark the highlighted run, then move down (as htop tags)."""
        run_id = self.selected_run_id()
        if run_id is None:
            self.notify("no run to mark", severity="warning")
            return
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked.append(run_id)
        row = next((r for r in self._rows if r.id == run_id), None)
        table = self.query_one("#runs", DataTable)
        if row is not None:
            table.update_cell(run_id, "RUN", self._cells(row)["RUN"], update_width=True)
        table.action_cursor_down()

    def action_compare(self) -> None:
        ids = list(self.marked) or [i for i in [self.selected_run_id()] if i is not None]
        if not ids:
            self.notify("no run to compare: mark runs with space", severity="warning")
            return
        profiles = {r.id: r.profile for r in self._rows}
        self.app.open_compare([(self.app.runs_root / i, profiles.get(i, "?")) for i in ids])

    def _arrange(self, order: RunOrder) -> None:
        self.order = order
        self.runs_polled(self.app.rows)

    def action_sort_runs(self) -> None:
        self._arrange(dataclasses.replace(self.order, sort=SORTS[(SORTS.index(self.order.sort) + 1) % len(SORTS)]))

    def action_reverse_runs(self) -> None:
        self._arrange(dataclasses.replace(self.order, reverse=not self.order.reverse))

    def action_filter_runs(self) -> None:
        box = self.query_one("#runs-filter", Input)
        box.display = True
        box.value = self.order.filter
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#runs-filter", Input)
        if not box.display and not self.order.filter:
            return
        box.display = False
        box.value = ""
        self._arrange(dataclasses.replace(self.order, filter=""))
        self.query_one("#runs", DataTable).focus()

    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if event.value != self.order.filter:
            self._arrange(dataclasses.replace(self.order, filter=event.value))

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#runs-filter", Input).display = False
        self.query_one("#runs", DataTable).focus()

    def action_open_run(self) -> None:
        run_dir = self.selected_run_dir()
        if run_dir is None:
            self.notify("no run selected", severity="warning")
            return
        self.app.open_run(run_dir)

    def action_run_profile(self) -> None:
        from tuitrain.tui.screens.launch import LaunchScreen

        entry = self.selected_profile()
        if entry is None:
            self.notify("no profile: create one with n", severity="warning")
            return
        self.app.push_screen(LaunchScreen(entry.path, self.app.launch_overrides))

    def action_new_profile(self) -> None:
        self.app.open_editor(None)

    @work(thread=True, exclusive=True, group="accelerate-config", exit_on_error=False)
    def offer_accelerate_config(self) -> None:
        """Users of `accelerate config` have a default config: say once that it can come in."""
        from tuitrain.launch.accelerate_default_config import existing_default_config

        path = existing_default_config()
        if path is not None:
            self.app.call_from_thread(
                self.notify, f"accelerate's default config is at {path}: press a to make a profile from it",
                title="accelerate config found", timeout=10)

    def action_import_accelerate(self) -> None:
        from tuitrain.launch.accelerate_default_config import default_config_path, existing_default_config

        path = existing_default_config()
        if path is None:
            self.notify(f"accelerate has no default config here ({default_config_path()}); "
                        "`accelerate config` writes one", severity="warning")
            return
        self.app.open_editor(None, accelerate_config=path)

    def action_edit_profile(self) -> None:
        entry = self.selected_profile()
        if entry is None:
            self.notify("no profile to edit: create one with n", severity="warning")
            return
        self.app.open_editor(entry.path)

    def action_stop_run(self) -> None:
        run_dir = self.selected_run_dir()
        if run_dir is None:
            self.notify("no run selected", severity="warning")
            return
        self.request(run_dir, "stop")

    def action_resume_run(self) -> None:
        """The resume dialog for the selected run from its latest complete checkpoint, as the monitor's R
        (which can also pick another checkpoint)."""
        from tuitrain.tui.screens.resume import ResumeScreen

        run_dir = self.selected_run_dir()
        if run_dir is None:
            self.notify("no run selected", severity="warning")
            return
        row = next((r for r in self._rows if r.id == run_dir.name), None)
        if row is not None and not row.final:
            self.notify(f"run {row.id} is still {row.status}; stop it first (s)", severity="warning")
            return
        self.app.push_screen(ResumeScreen(run_dir, "latest", self.app.launch_overrides))

    @work(thread=True, group="control", exit_on_error=False)
    def request(self, run_dir: Path, what: str) -> None:
        run_request(self.app, run_dir, what)

