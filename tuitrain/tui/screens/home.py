"""Home: profiles beside runs, the hardware strip, and the keys that start, open, resume and stop runs: the
highlighted one, or every run marked with space at once (one question first, tui.bulk)."""

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
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Input, OptionList, Static
from textual.widgets.data_table import ColumnKey
from textual.widgets.option_list import Option

from tuitrain.errors import TuitrainError
from tuitrain.tui.actions import run_request
from tuitrain.tui.bulk import TITLES, BulkPlan, plan_for
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.messages import WorkstationHeard, WorkstationsListed
from tuitrain.tui.plain import visible_text
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.run_cells import RunCells
from tuitrain.tui.run_columns import COLUMNS, Layout, cell_len, empty_runs_hint, fit_columns, header, runs_title
from tuitrain.tui.run_table import (
    SORTS,
    Entry,
    HostRuns,
    RunOrder,
    host_entries,
    queue_line,
    restart_line,
    run_labels,
    run_rows,
)
from tuitrain.tui.widgets.field import Field, open_field_key
from tuitrain.tui.widgets.hardware_strip import HardwareStrip
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.runs_table import RunsTable
from tuitrain.tui.widgets.text_line import TextLine
from tuitrain.tui.widgets.words import Words
from tuitrain.tui.workstation_streams import SETTINGS_SECONDS, WorkstationStreams

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.remote.runs_stream import HostNews
    from tuitrain.runs.view.live import RunRow
    from tuitrain.tui.app_api import TuitrainAppApi
    from tuitrain.tui.profiles import ProfileEntry

class HomeScreen(PassesFailedWorkUp, QuitSafe, Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    CSS_PATH = "home.tcss"
    order: var[RunOrder] = var(RunOrder, init=False)  # the table's sort and filter: a change lays the table out again
    BINDINGS = [
        Binding("r", "run_profile", "Run", tooltip="Launch the highlighted profile"),
        Binding("n", "new_profile", "New", tooltip="Create a profile in the editor"),
        Binding("e", "edit_profile", "Edit", tooltip="Edit the highlighted profile"),
        Binding("v", "check_profile", "Check", show=False,
                tooltip="Check the highlighted profile without starting it: `tuitrain validate` (o there: --offline, "
                        "the profile alone; d: `tuitrain doctor`, its machines over ssh)"),
        Binding("enter", "open_run", "Open", tooltip="Open the selected run's monitor", show=False),
        Binding("R", "resume_run", "Resume", tooltip="Resume the selected run from its latest complete checkpoint "
                "(a dialog: the checkpoint, --set overrides); with runs marked, each of them from its latest (asks once)"),
        Binding("s", "stop_run", "Stop", tooltip="Ask the selected run to save a checkpoint and stop; with runs marked, "
                "each of them (asks once, naming any that cannot be stopped and why)"),
        Binding("t", "queue_top", "First in queue", show=False,
                tooltip="Put the selected queued run (yours) first in this machine's queue, as `tuitrain queue move --top`"),
        Binding("x", "cancel_run", "Cancel", show=False,
                tooltip="Drop the selected queued run (yours) from the queue: it never starts, as `tuitrain cancel`; "
                "with runs marked, each of them (asks once)"),
        Binding("space", "mark_run", "Mark", tooltip="Mark the highlighted run (again: unmark): s, x, R and C then "
                "act on every marked run"),
        Binding("C", "compare", "Compare",
                tooltip="Overlay the marked runs' curves (none marked: the highlighted run, or its whole sweep)"),
        Binding("l", "open_log", "Log", tooltip="Open the run's monitor on a rank's log: the failed rank's "
                "(on its traceback), else rank 0's"),
        Binding("0", "open_log(0)", "Rank log", show=False, key_display="0-9",
                tooltip="Open the run's monitor on rank N's log (0 to 9)"),
        *(Binding(str(rank), f"open_log({rank})", "", show=False) for rank in range(1, 10)),
        Binding("slash", "filter_runs", "Filter", show=False, key_display="/", priority=True,
                tooltip="Filter the runs by id, profile or status as you type (enter keeps it, escape clears it)"),
        Binding("o", "sort_runs", "Sort", show=False, tooltip="Sort the runs by the next column: started, status, "
                "profile, loss, best, step, time (or click a column's header; again: reversed)"),
        Binding("O", "reverse_runs", "Reverse", show=False, tooltip="Reverse the runs' order"),
        Binding("escape", "clear_filter", "Clear filter", show=False, tooltip="Clear the runs filter"),
        Binding("a", "import_accelerate", "Import accelerate config", show=False,
                tooltip="A new profile from an accelerate config file (offered: accelerate's default one, what "
                        "`accelerate config` wrote)"),
        # Textual's own Tab, which the help lists once among the keys of every screen
        Binding("tab", "app.focus_next", "", show=False),
        Binding("shift+tab", "app.focus_previous", "", show=False),
    ]
    # the key bar shows a pane's keys while that pane has the focus (widgets.key_bar); the others always
    PANE_KEYS = {
        "profiles-pane": frozenset({"run_profile", "edit_profile", "import_accelerate"}),
        "runs-pane": frozenset({"open_run", "resume_run", "stop_run", "queue_top", "cancel_run", "mark_run", "compare",
                                "open_log", "filter_runs", "sort_runs", "reverse_runs"}),
    }

    def __init__(self) -> None:
        super().__init__()
        self.profiles: list[ProfileEntry] = []
        self._columns: tuple[str, ...] = ()
        self._headers: tuple[str, ...] = ()  # the columns' headers as shown (the sort's arrow on one)
        self._layout = Layout(())
        self._rows: list[Entry] = []  # what the table shows, in its order
        self.remote: dict[str, HostRuns] = {}  # each workstation of the settings, in their order
        self._streams: WorkstationStreams | None = None  # made on mount (its news goes to the strip, a widget)
        self._problems = ""
        self._queue_said = ""
        self._watching = False
        self._ready = False
        self._profiles_stamp: object = None
        self.marked: list[str] = []  # run ids marked (space), in the order marked: s, x, R and C act on them
        self.labels: dict[str, str] = {}  # run id → what the RUN column shows of it (run_table.run_labels)
        self.saved: dict[str, str] = {}  # run id → its newest checkpoint still news (the app's CheckpointNews)
        self._count = 0

    def compose(self) -> ComposeResult:
        yield TextLine(f"tuitrain · runs in {self.app.show_path(self.app.runs_root)}", classes="title-bar", id="title")
        yield HardwareStrip(self.app.hardware_line, id="hardware")
        with Horizontal(id="home-body"):
            with Vertical(id="profiles-pane"):
                yield Words("Profiles", classes="pane-title")
                yield OptionList(id="profiles", markup=False)
            with Vertical(id="runs-pane"):
                yield TextLine("Runs", classes="pane-title", id="runs-title")
                yield Field(placeholder="filter runs: id, profile or status", id="runs-filter")
                table: DataTable = RunsTable(id="runs", cursor_type="row", zebra_stripes=False)
                yield table
                yield Words(id="queue-waits")  # the highlighted queued run: its place and what it waits for
                yield Words(id="host-problems")  # each workstation that cannot be watched: why, in full
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#runs-filter", Input).display = False
        self.query_one("#host-problems", Static).display = False
        self.query_one("#queue-waits", Static).display = False
        self._ready = True
        self.call_after_refresh(self.load_profiles)
        self.call_after_refresh(self.offer_accelerate_config)
        self._ensure_columns()
        self.runs_polled(self.app.rows)
        self.query_one("#runs", DataTable).focus()
        self._streams = WorkstationStreams(self._heard, self.query_one(HardwareStrip).gpus_heard)
        self.set_interval(SETTINGS_SECONDS, self._settings_changed)

    def on_unmount(self) -> None:
        if self._streams is not None:
            self._streams.stop()

    # ------------------------------------------------------------------------------ workstations
    @work(thread=True, exclusive=True, group="workstations", exit_on_error=False)
    def watch_workstations(self) -> None:
        """One stream per workstation of the settings (remote.runs_stream), started once this machine's runs are
        on screen (ssh and the settings never delay them): the other boxes' runs fill in as they come. Again
        whenever the settings file changes (`_settings_changed`): a box added is watched, a box removed or changed
        is let go (and watched anew), without a restart of the app."""
        streams = self._streams
        if streams is None:
            return
        stations, problem = streams.read()
        if problem:  # the boxes watched so far stay watched until the file is right
            self.notify(problem, title="Workstations", severity="error", timeout=15)
            return
        if not self.is_attached:
            return
        hosts = streams.follow(stations)
        if hosts or self.remote:
            self.post_message(WorkstationsListed(hosts))
        if not self.is_attached:  # the app closed meanwhile: on_unmount may have missed these
            streams.stop()

    def _settings_changed(self) -> None:
        """Every SETTINGS_SECONDS once the boxes are watched: the settings file edited (one stat) is read again."""
        if self._watching and self._streams is not None and self._streams.changed():
            self.watch_workstations()

    def _heard(self, news: HostNews) -> None:
        """A stream's news (its own thread): rows made here, shown on the app's loop."""
        state = HostRuns(run_rows(news.rows), answered=True) if news.rows is not None else \
            HostRuns(problem=news.problem or f"{news.host}: no answer", answered=True)
        self.post_message(WorkstationHeard(news.host, state))

    @on(WorkstationsListed)
    def _workstations_listed(self, message: WorkstationsListed) -> None:
        self.remote = {host: self.remote.get(host, HostRuns()) for host in message.hosts}
        self.query_one(HardwareStrip).keep_hosts(message.hosts)
        self._show_problems()
        self.runs_polled(self.app.rows)

    @on(WorkstationHeard)
    def _workstation_heard(self, message: WorkstationHeard) -> None:
        if message.host in self.remote:
            self.remote[message.host] = message.state
            self._show_problems()
            self.runs_polled(self.app.rows)

    def _show_problems(self) -> None:
        problems = "\n".join(state.problem for state in self.remote.values() if state.problem)
        if problems != self._problems:
            self._problems = problems
            box = self.query_one("#host-problems", Static)
            box.update(problems)
            box.display = bool(problems)

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
            options.add_option(Option(visible_text(Text.assemble((entry.name, "bold"), ("  " + entry.where, "dim"))),
                                      id=str(entry.path)))
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
        return ("HOST", *COLUMNS) if self.remote else COLUMNS

    def _room(self) -> int:
        """The cells' room in the runs table (less a scrollbar's); before its first layout, the
        screen's width less the profiles pane's (beside the runs from 100 columns on)."""
        table = self.query_one("#runs", DataTable)
        if table.size.width:
            return table.scrollable_content_region.width
        return self.app.size.width - (0 if self.has_class("-narrow") or self.app.size.width < 100 else 29)

    def _ensure_columns(self, layout: Layout | None = None) -> None:
        columns = self._wanted_columns()
        if layout is None or len(layout.widths) != len(columns):
            layout = Layout((None,) * len(columns))
        headers = tuple(header(name, self.order) for name in columns)
        if (columns, layout, headers) == (self._columns, self._layout, self._headers):
            return
        table = self.query_one("#runs", DataTable)
        table.clear(columns=True)
        for name, label, width in zip(columns, headers, layout.widths, strict=True):
            table.add_column(label, key=name, width=width)
        self._columns, self._layout, self._headers = columns, layout, headers
        self._rows = []

    def on_resize(self) -> None:
        if not self._ready:
            return
        self.runs_polled(self.app.rows)  # the columns' widths follow the table's

    def _cell_maker(self) -> RunCells:
        return RunCells(self.app.clock(), self.labels, self.marked, self.saved, hosts=bool(self.remote))

    def _cells(self, entry: Entry) -> dict[str, object]:
        return self._cell_maker().shown(entry, self._columns, self._layout)

    def runs_polled(self, rows: list[RunRow]) -> None:
        if not self._ready or not self.shown:
            return  # a hidden Home catches up when shown (on_screen_resume)
        table = self.query_one("#runs", DataTable)
        selected = self.selected_run_id()  # before new column widths rebuild the table
        self.marked = [i for i in self.marked if any(r.id == i for r in rows)]
        remote_rows = [r for state in self.remote.values() for r in state.rows]
        count = len(rows) + len(remote_rows) if self.app.polls else None
        self._count = len(rows) + len(remote_rows)
        now = self.app.clock()
        every = [*rows, *remote_rows]
        self.labels = run_labels([r.id for r in every], now, {r.id: r.profile for r in every if r.sweep})
        saved = self.app.checkpoint_news.marks(now)
        news_changed, self.saved = saved != self.saved, saved
        entries = host_entries(rows, self.remote, self.order, now)
        columns = self._wanted_columns()
        cells = self._cell_maker()
        self._ensure_columns(fit_columns(columns, [cells.full(e) for e in entries], [cells.short(e) for e in entries],
                                         self._room(), self.order))
        keys = [e.key for e in entries]
        shown = sum(e.row is not None for e in entries)
        self.query_one("#runs-title", TextLine).set(
            runs_title(count, self.order, shown, self.app.checkpoint_news.summary(now)))
        if self.app.polls:
            self.load_profiles(only_if_changed=True)
            if not self._watching:  # the other boxes once this one's runs are on screen
                self._watching = True
                self.call_after_refresh(self.watch_workstations)
        if [(e.key, e.branch) for e in entries] != [(e.key, e.branch) for e in self._rows]:
            table.clear()
            for entry in entries:
                table.add_row(*self._cells(entry).values(), key=entry.key)
            if selected in keys:
                table.move_cursor(row=keys.index(selected), animate=False)
        else:
            for old, entry in zip(self._rows, entries, strict=True):
                if old != entry or (entry.row is not None and not entry.row.final) or news_changed:
                    for column, value in self._cells(entry).items():
                        # a column left to the table grows with its cells ("running" → "finished · COMPLETED")
                        grows = cell_len(value) > table.columns[ColumnKey(column)].content_width
                        table.update_cell(entry.key, column, value, update_width=grows)
        self._rows = entries
        self._show_queue_waits()

    @on(DataTable.RowHighlighted, "#runs")
    def _show_queue_waits(self) -> None:
        """Under the table, what the highlighted queued run waits for (run_table.queue_line), or how a restarted run
        restarted (run_table.restart_line); hidden otherwise."""
        entry = self.selected_entry()
        line = ""
        if entry is not None and entry.row is not None:
            label = self.labels.get(entry.row.id, entry.row.id)
            line = queue_line(label, entry.row) or restart_line(label, entry.row)
        if line != self._queue_said:
            self._queue_said = line
            box = self.query_one("#queue-waits", Static)
            box.update(Text(line))  # no markup: a process's command line may hold brackets
            box.display = bool(line)

    @property
    def shown(self) -> bool:
        """On top, or under a dialog (Textual's is_current also counts a screen under a full one)."""
        top = self.app.screen
        return top is self or (isinstance(top, ModalScreen) and self.app.screen_stack[-2:-1] == [self])

    def hardware_sampled(self, line: str) -> None:
        if self._ready and self.shown:
            self.query_one(HardwareStrip).set(line)
            self._show_history()

    def box_gpus_heard(self, _host: str) -> None:
        """The app heard a workstation's GPUs (through the strip): their history on the strip."""
        if self._ready and self.shown:
            self._show_history()

    def _show_history(self) -> None:
        from tuitrain.remote.workstations import LOCAL

        self.query_one(HardwareStrip).show_history(self.app.gpu_history.every([LOCAL, *self.remote]))

    def selected_run_id(self) -> str | None:
        table = self.query_one("#runs", DataTable)
        if table.row_count == 0:
            return None
        try:
            return table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        except Exception:  # noqa: BLE001 - an empty or moving table
            return None

    def selected_entry(self) -> Entry | None:
        key = self.selected_run_id()
        return next((e for e in self._rows if e.key == key), None) if key else None

    def selected_run_dir(self) -> Path | None:
        """The selected run's directory here; None when none is selected or the line is another workstation's."""
        entry = self.selected_entry()
        if entry is None or entry.host is not None or entry.row is None:
            return None
        return self.app.runs_root / entry.row.id

    def run_dir_to_act_on(self, missing: str = "no run selected") -> Path | None:
        """The selected run's directory here; else None, and the user is told why (`missing`, or what reaches
        another workstation's run)."""
        entry = self.selected_entry()
        if entry is not None and entry.host is not None:
            self._say_remote(entry)
            return None
        run_dir = self.selected_run_dir()
        if run_dir is None:
            self.notify(missing, severity="warning")
        return run_dir

    def _say_remote(self, entry: Entry) -> None:
        """What reaches another workstation's run (or why that box shows none) instead of acting on it here."""
        host = str(entry.host)
        if entry.row is None:
            self.notify(f"{host}: {entry.note}" if entry.note else f"{host}: asking it for its runs…",
                        title=host, severity="warning" if entry.note else "information", timeout=10)
            return
        self.notify(f"{entry.key} runs on {host}: enter opens its monitor, where s, c, e, k and R act on it there",
                    title=host, timeout=10)

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
        """Mark or unmark the highlighted run, as the help says; the cursor stays on it, so the mark is seen on the run
        just marked (moving down as htop does marked the run below on the next space: the wrong runs three times)."""
        run_dir = self.run_dir_to_act_on("no run to mark")
        if run_dir is None:
            return
        run_id = run_dir.name
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked.append(run_id)
        self._repaint_marks([run_id])

    def _repaint_marks(self, run_ids: list[str]) -> None:
        """The RUN cells of these runs again (marked or not)."""
        table = self.query_one("#runs", DataTable)
        for entry in self._rows:
            if entry.host is None and entry.key in run_ids:
                table.update_cell(entry.key, "RUN", self._cells(entry)["RUN"], update_width=True)

    def act_on_marked(self, verb: str) -> None:
        """`verb` ("stop", "cancel", "resume") on every marked run, after one question that names each run it acts on
        and each it leaves with why (tui.bulk); nothing it can act on: that said, nothing asked."""
        from tuitrain.tui.screens.confirm import ConfirmScreen

        plan = plan_for(verb, self.marked, self.app.rows, self.labels)
        if not plan.runs:
            self.notify(plan.question(), title=TITLES[verb], severity="warning", timeout=10, markup=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                acted = [run_id for run_id, _ in plan.runs]
                self.marked = [i for i in self.marked if i not in acted]  # done with: unmarked
                self._repaint_marks(acted)
                self.act(plan)

        self.app.push_screen(ConfirmScreen(Text(plan.question()), yes=TITLES[verb]), answered)

    @work(thread=True, group="control", exit_on_error=False)
    def act(self, plan: BulkPlan) -> None:
        """The confirmed verb on each run in turn (a stop as `s` asks it, a cancel as `x`, a resume from the latest
        checkpoint with the app's overrides, as `tuitrain resume`); one toast for them all."""
        from tuitrain.rundir.layout import RunPaths
        from tuitrain.runs.queue.look import queue_action
        from tuitrain.tui.actions import request_here, resume_here
        from tuitrain.tui.bulk import outcome

        def say(line: str) -> None:  # a stop's steps along the way (a Slurm job's)
            self.notify(line, title=TITLES[plan.verb], markup=False)

        done: list[str] = []
        failed: list[str] = []
        for run_id, label in plan.runs:
            run_dir = self.app.runs_root / run_id
            try:
                if plan.verb == "stop":
                    done.append(request_here(RunPaths(run_dir), "stop", say))
                elif plan.verb == "cancel":
                    done.append(queue_action(RunPaths(run_dir), "cancel"))
                else:
                    new_dir, said = resume_here(run_dir, self.app.runs_root, "latest", self.app.launch_overrides,
                                                self.app.cwd)
                    (done if new_dir is not None else failed).append(
                        f"{label}: {new_dir.name} started" if new_dir is not None else f"{label}: {said}")
            except (TuitrainError, OSError) as exc:
                failed.append(f"{label}: {exc}")
            self.app.poke()
        self.notify(outcome(plan.verb, done, failed), title=TITLES[plan.verb],
                    severity="warning" if failed else "information", timeout=10, markup=False)

    def action_compare(self) -> None:
        """The marked runs; with none, the highlighted run, or every run of its sweep (marked together)."""
        if self.marked:
            ids = list(self.marked)
        else:
            run_dir = self.run_dir_to_act_on("no run to compare: mark runs with space")
            if run_dir is None:
                return
            entry = self.selected_entry()
            sweep = entry.row.sweep if entry is not None and entry.row is not None and entry.host is None else None
            ids = ([e.row.id for e in self._rows if e.row is not None and e.host is None and e.row.sweep == sweep]
                   if sweep else [run_dir.name])
        profiles = {e.row.id: e.row.profile for e in self._rows if e.row is not None and e.host is None}
        self.app.open_compare([(self.app.runs_root / i, profiles.get(i, "?")) for i in ids])

    def watch_order(self) -> None:
        self.runs_polled(self.app.rows)

    def action_sort_runs(self) -> None:
        self.order = dataclasses.replace(self.order, sort=SORTS[(SORTS.index(self.order.sort) + 1) % len(SORTS)])

    @on(DataTable.HeaderSelected, "#runs")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column's header sorts by it (again: reversed)."""
        order = self.order.clicked(str(event.column_key.value))
        if order is not None:
            self.order = order

    def action_reverse_runs(self) -> None:
        self.order = dataclasses.replace(self.order, reverse=not self.order.reverse)

    def action_filter_runs(self) -> None:
        open_field_key(self)
        box = self.query_one("#runs-filter", Field)
        box.display = True
        box.value = self.order.filter
        box.focus_now()

    def action_clear_filter(self) -> None:
        box = self.query_one("#runs-filter", Input)
        if not box.display and not self.order.filter:
            return
        box.display = False
        box.value = ""
        self.order = dataclasses.replace(self.order, filter="")
        self.query_one("#runs", DataTable).focus()

    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.order = dataclasses.replace(self.order, filter=event.value)

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#runs-filter", Input).display = False
        self.query_one("#runs", DataTable).focus()

    def action_open_run(self) -> None:
        entry = self.selected_entry()
        if entry is not None and entry.host is not None and entry.row is not None:
            self.open_remote_run(entry.host, entry.row.id)
            return
        run_dir = self.run_dir_to_act_on()
        if run_dir is None:
            return
        self.app.open_run(run_dir)

    def action_open_log(self, rank: int | None = None) -> None:
        """The highlighted run's monitor on a rank's log: `rank`'s, or (None) the failed rank's, landed on its
        traceback as the monitor lands a failed run, else rank 0's."""
        entry = self.selected_entry()
        row = entry.row if entry is not None else None
        if row is not None and rank is None and row.status == "failed" and row.failed_rank is not None:
            tab = None  # the monitor lands a failed run on its failing rank's traceback
        else:
            tab = f"tab-rank-{rank or 0}"
        if entry is not None and entry.host is not None and row is not None:
            self.open_remote_run(entry.host, row.id, tab)
            return
        run_dir = self.run_dir_to_act_on()
        if run_dir is not None:
            self.app.open_run(run_dir, tab=tab)

    @work(thread=True, exclusive=True, group="open-remote", exit_on_error=False)
    def open_remote_run(self, host: str, run_id: str, tab: str | None = None) -> None:
        """Another workstation's run: mirrored into its cache folder here until its record is (remote.run_mirror),
        then its monitor opens on that folder (the monitor's own mirror keeps it fresh)."""
        from tuitrain.remote.run_mirror import cache_dir, fetch

        if not (cache_dir(host, run_id) / "run.json").is_file():
            self.notify(f"fetching {run_id} from {host}…", title=host)
        run_dir, problem = fetch(host, run_id)
        if problem:
            self.notify(problem, title=host, severity="warning", timeout=15)
        elif self.is_attached and self.app.screen is self:
            self.app.call_from_thread(self.app.open_run, run_dir, False, tab)

    def action_run_profile(self) -> None:
        from tuitrain.tui.screens.launch import LaunchScreen

        entry = self.selected_profile()
        if entry is None:
            self.notify("no profile: create one with n", severity="warning")
            return
        self.app.push_screen(LaunchScreen(entry.path, self.app.launch_overrides))

    def action_check_profile(self) -> None:
        from tuitrain.tui.screens.check import CheckScreen

        entry = self.selected_profile()
        if entry is None:
            self.notify("no profile to check: create one with n", severity="warning")
            return
        self.app.push_screen(CheckScreen(entry.path, self.app.launch_overrides))

    def action_new_profile(self) -> None:
        self.app.open_editor(None)

    @work(thread=True, exclusive=True, group="accelerate-config", exit_on_error=False)
    def offer_accelerate_config(self) -> None:
        """Users of `accelerate config` have a default config: say once that it can come in."""
        from tuitrain.launch.accelerate_default_config import existing_default_config

        path = existing_default_config()
        if path is not None:
            self.notify(f"accelerate's default config is at {path}: press a to make a profile from it",
                        title="accelerate config found", timeout=10)

    def action_import_accelerate(self) -> None:
        """A new profile from an accelerate config file (accelerate's default one offered), read as `tuitrain
        profile import-accelerate FILE` reads it: the editor opens on it (ctrl+s saves it)."""
        from tuitrain.launch.accelerate_default_config import config_to_import, existing_default_config
        from tuitrain.tui.screens.prompt import PromptScreen

        def outcome(answer: str) -> str:
            if not answer.strip():
                return "a path, or `default` for accelerate's default config"
            path, problem = config_to_import(answer.strip())
            return problem or f"a new profile: [distributed] and [hardware] from {path}, the rest from the built-in demo"

        def chosen(answer: str | None) -> None:
            if not answer:
                return
            path, problem = config_to_import(answer)
            if problem:
                self.notify(problem, title="Cannot import", severity="warning")
                return
            self.app.open_editor(None, accelerate_config=path)

        default = existing_default_config()
        self.app.push_screen(PromptScreen("Import an accelerate config (a YAML file):", str(default or ""), outcome),
                             chosen)

    def action_edit_profile(self) -> None:
        entry = self.selected_profile()
        if entry is None:
            self.notify("no profile to edit: create one with n", severity="warning")
            return
        self.app.open_editor(entry.path)

    def action_stop_run(self) -> None:
        from tuitrain.tui.screens.confirm import ask_first

        if self.marked:
            self.act_on_marked("stop")
            return
        run_dir = self.run_dir_to_act_on()
        if run_dir is None:
            return
        row = next((e.row for e in self._rows if e.host is None and e.key == run_dir.name), None)
        if row is not None and row.final:  # nothing to ask: refused in runs.control's words
            self.request(run_dir, "stop")
            return
        ask_first(self.app, "stop", run_dir.name, lambda: self.request(run_dir, "stop"))

    def action_resume_run(self) -> None:
        """The resume dialog for the selected run from its latest complete checkpoint, as the monitor's R
        (which can also pick another checkpoint)."""
        from tuitrain.tui.screens.resume import ResumeScreen

        if self.marked:
            self.act_on_marked("resume")
            return
        run_dir = self.run_dir_to_act_on()
        if run_dir is None:
            return
        row = next((e.row for e in self._rows if e.host is None and e.key == run_dir.name), None)
        if row is not None and not row.final:
            self.notify(f"run {row.id} is still {row.status}; stop it first (s)", severity="warning")
            return
        self.app.push_screen(ResumeScreen(run_dir, "latest", self.app.launch_overrides))

    @work(thread=True, group="control", exit_on_error=False)
    def request(self, run_dir: Path, what: str) -> None:
        run_request(self.app, run_dir, what)

    def action_queue_top(self) -> None:
        run_dir = self.run_dir_to_act_on("no run selected: t puts a queued run first in the queue")
        if run_dir is not None:
            self.queue_request(run_dir, "top")

    def action_cancel_run(self) -> None:
        from tuitrain.tui.screens.confirm import ask_first

        if self.marked:
            self.act_on_marked("cancel")
            return
        run_dir = self.run_dir_to_act_on("no run selected: x drops a queued run from the queue")
        if run_dir is None:
            return
        row = next((e.row for e in self._rows if e.host is None and e.key == run_dir.name), None)
        if row is None or row.status != "queued":  # not in the queue: refused in `tuitrain cancel`'s words, unasked
            self.queue_request(run_dir, "cancel")
            return
        ask_first(self.app, "cancel", run_dir.name, lambda: self.queue_request(run_dir, "cancel"))

    @work(thread=True, group="control", exit_on_error=False)
    def queue_request(self, run_dir: Path, what: str) -> None:
        """Move a queued run first ("top") or cancel it, as the CLI does (runs.queue.look.queue_action, its
        refusals too): the outcome in one line, titled with what was done or could not be."""
        from tuitrain.rundir.layout import RunPaths
        from tuitrain.runs.queue.look import queue_action

        done, verb = ("First in queue", "move") if what == "top" else ("Cancelled", "cancel")  # as queue_action says
        try:
            said = queue_action(RunPaths(run_dir), what)
        except (TuitrainError, OSError) as exc:
            self.notify(str(exc), title=f"Cannot {verb}", severity="warning", markup=False)
            return
        self.notify(said, title=done)
        self.app.poke()

