"""Run monitor: progress, every rank's log (merged and one by one), curves, checkpoints, and the
requests a live run honours (save, evaluate, stop, kill) or a new run (resume from a checkpoint).

Over 600 lines on purpose: it is one screen's keys and the header they change, over one run's watch (`RunWatch`);
what does not need the screen already lives apart (the log views, search bar, checkpoints table and GPU panel
widgets, `runs.view.hang`, `runs.queue.look`, `tui.run_command`), and a further split would hand the screen's state
around by reference."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static, TabbedContent, TabPane

from tuitrain.humanize import duration, number
from tuitrain.rundir.exits import end_cause
from tuitrain.rundir.record import FINAL_STATUSES
from tuitrain.rundir.run import Run, elapsed
from tuitrain.runs.view.attempts import attempt_line, earlier_lines
from tuitrain.runs.view.hang import HUNG_LABEL, Hang, describe, waits_for
from tuitrain.runs.view.live import RunWatch
from tuitrain.runs.view.logfile import TRACEBACK
from tuitrain.tui.actions import run_request, wait_or_cancel
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.format import bar, short_metric, status_text
from tuitrain.tui.machines import Machine, machine_of_rank, machines_line, run_machines, this_host
from tuitrain.tui.plain import plain
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.checkpoints import CheckpointList
from tuitrain.tui.widgets.field import open_field_key
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.log_view import LogView
from tuitrain.tui.widgets.metrics import MetricsPanel
from tuitrain.tui.widgets.search_bar import SearchBar
from tuitrain.tui.widgets.tabs import SteadyTabbedContent
from tuitrain.tui.widgets.text_line import TextLine
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.hardware.report import GpuReport
    from tuitrain.remote.run_mirror import MirrorNews
    from tuitrain.runs.view.lineage import Lineage
    from tuitrain.tui.app_api import TuitrainAppApi


EARLIER_SHOWN = 3  # the earlier attempts' ends the header shows (status shows them all)


def restart_lines(run: Run, now: float) -> list[Text]:
    """A restarted run's attempt and its latest restart (runs.view.attempts), the earlier attempts' ends (the last
    EARLIER_SHOWN), and why a run that failed was not restarted: as `tuitrain status` says them."""
    lines = []
    attempt = attempt_line(run, now)
    if attempt:
        lines.append(Text(attempt, style="yellow", no_wrap=True))
        lines += [Text(line, style="dim", no_wrap=True) for line in earlier_lines(run)[-EARLIER_SHOWN:]]
    if run.not_restarted:
        lines.append(Text(run.not_restarted, style="red", no_wrap=True))
    return lines


def log_range(top: int, height: int, count: int) -> str:
    """'lines 28-47 of 47' for the rows in view; 'no lines yet' for an empty log."""
    if not count:
        return "no lines yet"
    top = max(0, min(top, count - 1))
    return f"lines {top + 1}-{min(count, top + height)} of {count}"


class MonitorScreen(PassesFailedWorkUp, QuitSafe, Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    CSS_PATH = "monitor.tcss"
    HELP_TITLE = "Run monitor"
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Close the search, clear the filter, or go back to the runs"),
        Binding("c", "save_now", "Save now", tooltip="Ask the run to save a checkpoint at the next step end"),
        Binding("e", "evaluate_now", "Evaluate", tooltip="Ask the run to evaluate at the next step end"),
        Binding("s", "stop", "Stop", tooltip="Ask the run to save a checkpoint and stop"),
        Binding("k", "kill", "Kill", tooltip="End every process of the run now (asks first)"),
        Binding("o", "output_folder", "Output folder", show=False,
                tooltip="Show the run's output folder (checkpoints, model) and copy its path"),
        Binding("R", "resume", "Resume", tooltip="A new run from the selected checkpoint (Checkpoints tab) or the latest, "
                "with --set overrides (asks)"),
        Binding("x", "export", "Export", tooltip="Export the best, the last or the selected checkpoint's model (asks)"),
        Binding("slash", "search", "Search", key_display="/", priority=True,
                tooltip="Search the log in view (from any tab: the log's)"),
        Binding("ampersand", "filter_lines", "Only matching", show=False, key_display="&", priority=True,
                tooltip="Show only the lines holding a term, as less's & (empty: every line; escape clears)"),
        Binding("w", "wrap", "Wrap", show=False, tooltip="Wrap long lines, each row with its rank (or not)"),
        Binding("n", "next_match", "Next", show=False, tooltip="Next match of the search"),
        Binding("N", "previous_match", "Previous", show=False, tooltip="Previous match of the search"),
        Binding("t", "traceback", "Traceback", tooltip="Jump to the first traceback of the log in view"),
        Binding("f", "follow", "Follow", show=False, tooltip="Follow the end of the log in view"),
        Binding("z", "fold", "Fold alike", show=False,
                tooltip="All ranks: show a line that several ranks print alike once, marked with their ranks (or not)"),
        Binding("right_square_bracket", "tab(1)", "Next tab", show=False, tooltip="Next tab", key_display="]"),
        Binding("left_square_bracket", "tab(-1)", "Previous tab", show=False, tooltip="Previous tab", key_display="["),
        Binding("m", "show('tab-metrics')", "Metrics", show=False, tooltip="Show the curves"),
        Binding("p", "show('tab-checkpoints')", "Checkpoints", show=False, tooltip="Show the checkpoints"),
        Binding("u", "show('tab-gpus')", "GPUs", show=False, tooltip="Show the devices, ranks and host in use"),
        Binding("h", "stacks", "Stacks", show=False,
                tooltip="Where every rank is: its stacks, all threads, and a digest (as `tuitrain stacks`)"),
    ]
    HANG_POLL_SECONDS = 2.0  # how often the heartbeats are judged (runs.view.hang), as the supervisor does

    class Updated(Message):
        """The worker read something new; the screen refreshes from its RunWatch."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, MonitorScreen.Updated)

    def __init__(self, run_dir: Path, tab: str | None = None) -> None:
        """`tab`: the pane to open on (`tab-rank-3`: that rank's log), in place of every rank's."""
        super().__init__()
        self.run_dir = Path(run_dir)
        self.first_tab = tab
        self.run_watch = RunWatch(self.run_dir)
        self.lineage: Lineage | None = None  # a resumed run's ancestors' curves, read by the first poll
        self._landed = False
        self._ready = False
        self._gpus_of: object = None
        self._gpus_live = False  # the GPUs tab was drawn while the run went on ("so far")
        self._status_at = 0.0
        self._status_lines = 0
        self.fold = self.run_watch.num_ranks > 1
        # a run on several machines: each machine's ranks, and its agent's log (logs/machine-M.log)
        from tuitrain.backends import for_run
        from tuitrain.runs.view.logfile import LogFile

        self.backend = for_run(self.run_watch.record)  # what carries the run: its machines, its scheduler's job
        self.hostname = this_host()
        self.machines: list[Machine] = run_machines(self.backend.machines(self.run_watch.record), self.run_watch.record,
                                                    hostname=self.hostname)
        self.machine_logs = [LogFile(self.run_watch.paths.logs / f"machine-{m.index}.log") for m in self.machines]
        self._rank_records_at = 0.0
        self.machine_samples: dict[int, GpuReport | str] = {}  # machine rank → what its agent sampled there
        self._log_views: list[LogView] = []  # read by the worker: the views whose filters it fills
        self._log_tab = "tab-all"  # the log tab last shown: where `/`, `&` and `t` go from a tab without a log
        self._shown = threading.Event()  # what the worker read last is on screen
        self._samples_changed = False
        self.job: str | None = None  # a Slurm run's job state, as the app's runs watcher reads it ("RUNNING", …)
        self.hang: Hang | None = None  # runs.view.hang's verdict on the live run, read by the worker
        self.hang_digest: str | None = None  # the digest of the stacks taken during this hang (stacks/digest.json)
        self.hang_names: dict[int, str] = {}  # rank -> its process ("pid P on HOST"), for what a stop waits for
        self._hang_at = 0.0
        # another workstation's run: a cache folder kept fresh by its mirror (remote.run_mirror), its host named
        from tuitrain.remote.run_mirror import mirror_of, mirrored_run

        self.host = (mirrored_run(self.run_dir) or (None, None))[0]
        self.mirror, self.mirror_problem = mirror_of(self.run_dir, self._mirror_news)
        self.heard_at: float | None = None  # its box not heard: when the cache was last written (what it last said)
        if self.mirror_problem is not None:
            self._mirror_news(None)

    # ------------------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        w = self.run_watch
        on = f" · on {self.host}" if self.host else ""
        yield TextLine(f"run {w.paths.id} · profile {w.run.profile}{on}", classes="title-bar", id="title")
        yield TextLine("", id="header")
        with SteadyTabbedContent(id="tabs"):
            with TabPane("All ranks", id="tab-all"):
                yield LogView(w.folded if self.fold else w.merged, ranks=True, id="log-all")
            for rank, log in enumerate(w.ranks):
                with TabPane(plain(f"Rank {rank}"), id=f"tab-rank-{rank}"):
                    yield LogView(log, id=f"log-rank-{rank}")
            with TabPane("Launcher", id="tab-launcher"):
                yield LogView(w.launcher, id="log-launcher")
            for position, (machine, log) in enumerate(zip(self.machines, self.machine_logs, strict=True)):
                with TabPane(plain(machine.host), id=f"tab-machine-{position}"):
                    yield LogView(log, id=f"log-machine-{position}")
            with TabPane("Metrics", id="tab-metrics"):
                yield MetricsPanel(w.paths.profile, id="metrics")
            with TabPane("Checkpoints", id="tab-checkpoints"):
                yield CheckpointList(id="checkpoint-list")
            with TabPane("GPUs", id="tab-gpus"):
                yield Words("", id="gpus")
        yield TextLine("", id="log-status")
        yield SearchBar(id="search")
        yield KeyBar()

    def on_mount(self) -> None:
        if self.mirror is not None:
            self.mirror.start()
        self._log_views = list(self.query(LogView))
        self._ready = True
        self.runs_polled(getattr(self.app, "rows", None) or [])
        self.show_gpus()
        self.update_header()
        self.set_interval(1.0, self.update_header)
        self.call_after_refresh(self.follow_run)  # once the tabs have settled on their first pane
        self.query_one("#log-all", LogView).focus()
        if self.first_tab is not None and self.query(f"#{self.first_tab}"):
            self._landed = True  # asked for a pane: a failed run does not move it to its traceback's
            self.action_show(self.first_tab)
        elif self.first_tab is not None:
            ranks = self.run_watch.num_ranks
            self.notify(f"this run has {ranks} rank{'s' if ranks != 1 else ''} (0 to {ranks - 1}): every rank's log "
                        "here, ] moves to the next tab", title=self.first_tab.removeprefix("tab-").replace("-", " "),
                        severity="warning", markup=False)

    def on_unmount(self) -> None:
        if self.mirror is not None:
            if self._forget_mirror():
                self.mirror.stop_and_forget()
            else:
                self.mirror.stop()
        elif self.host is not None and self._forget_mirror():  # its box left the settings: nothing mirrors it
            from tuitrain.remote.run_mirror import remove_cache

            remove_cache(self.run_dir)
        self.run_watch.close()
        for log in self.machine_logs:
            log.close()

    # ------------------------------------------------------------------------------ data
    def _forget_mirror(self) -> bool:
        """Whether the cache of this workstation's run goes as its monitor closes: the run has ended, and no other
        monitor on the app's stack reads the same folder."""
        others = [s for s in self.app.screen_stack if isinstance(s, MonitorScreen) and s is not self]
        return self.run_watch.status in FINAL_STATUSES and all(s.run_dir != self.run_dir for s in others)

    def _mirror_news(self, news: MirrorNews | None) -> None:
        """The mirror's thread: the box heard again (None), or why not; the header says it on its next second. While
        the box is not heard, what it said last is as of the cache's last write (None: the problem the mirror
        could not start with)."""
        from tuitrain.remote.run_mirror import last_written

        if news is not None:
            self.mirror_problem = news.problem
        self.heard_at = last_written(self.run_dir) if self.mirror_problem is not None else None

    def poll_mirrored_checkpoints(self) -> bool:
        """Another workstation's run: its checkpoints as the box sees them (the cache holds none)."""
        from tuitrain.remote.run_mirror import read_checkpoints
        from tuitrain.rundir.checkpoints import checkpoints_from_json

        found = checkpoints_from_json(read_checkpoints(self.run_dir))
        if found == self.run_watch.checkpoints:
            return False
        self.run_watch.checkpoints = found
        return True

    @work(thread=True, exclusive=True, group="monitor", exit_on_error=False)
    def follow_run(self) -> None:
        from tuitrain.runs.view.lineage import read_lineage

        self.lineage = read_lineage(self.run_watch.paths, self.run_watch.record)  # ancestors have ended: read once
        while True:
            changed = self.run_watch.poll()
            if self.mirror is not None:
                changed |= self.poll_mirrored_checkpoints()
            if self.machines:
                changed |= self.poll_machines()
            changed |= self.poll_hang()
            for view in self._log_views:
                changed |= view.sync()  # its repeated warnings folded, its filter filled
            self._shown.clear()
            if changed:
                self.post_message(self.Updated())
            # a big log's front is counted on the poll after the one that showed its end: as soon as that end is
            # on screen, not a poll later (a search right after opening waits for the count)
            indexing = changed and any(view.source.indexing for view in self._log_views)
            if not wait_or_cancel(self.app.monitor_interval, self._shown if indexing else None):
                return

    def poll_machines(self) -> bool:
        """The machine logs, and (every few seconds) the rank records that say where each rank runs."""
        import time

        from tuitrain.rundir.ranks import read_rank_records

        changed = False
        for log in self.machine_logs:
            before = log.size
            changed |= log.update() != 0 or log.size != before
        now = time.monotonic()
        if now - self._rank_records_at > 3.0:
            self._rank_records_at = now
            from tuitrain.runs.keeper.mirror import read_machine_samples

            samples = read_machine_samples(self.run_watch.paths)
            if samples != self.machine_samples:
                self.machine_samples = samples
                self._samples_changed = True
                changed = True
            record = self.run_watch.record
            machines = run_machines(self.backend.machines(record), record, read_rank_records(self.run_watch.paths),
                                    self.hostname)
            if [(m.index, m.ranks, m.here) for m in machines] == [(m.index, m.ranks, m.here) for m in self.machines]:
                self.machines = machines  # same layout (the log tabs follow self.machine_logs, made once)
            elif len(machines) == len(self.machines):
                self.machines = machines
                changed = True
        return changed

    def poll_hang(self) -> bool:
        """Every HANG_POLL_SECONDS: is the run hung? (runs.view.hang, which ranks, since when, stragglers) and the digest of
        the stacks taken since its ranks stopped; True when the verdict changed."""
        now = time.monotonic()
        if now - self._hang_at < self.HANG_POLL_SECONDS:
            return False
        self._hang_at = now
        from tuitrain.runs.view.hang import process_names, run_hang
        from tuitrain.runs.view.stacks import digest_text, read_digest

        hang = run_hang(self.run_watch.paths, self.run_watch.record, now=self.app.clock())
        if hang is not None and hang.hung and self.run_watch.run.status == "stopping":
            self.hang_names = process_names(self.run_watch.paths, self.run_watch.record)
        digest = read_digest(self.run_watch.paths) if hang is not None and hang.hung else None
        text = None
        if digest and hang is not None and digest["time"] >= (hang.since or 0):
            text = digest_text(digest)
        changed = (hang, text) != (self.hang, self.hang_digest)
        self.hang, self.hang_digest = hang, text
        return changed

    def hang_lines(self) -> list[Text]:
        """What the header says of a hang or a straggler, as `tuitrain status` says it (runs.view.hang.describe)."""
        if self.hang is None or self.run_watch.status not in ("running", "stopping"):
            return []
        said = describe(self.hang, self.app.clock())
        if self.hang.hung and self.run_watch.status == "stopping":  # asked to stop: what that waits for, instead
            said = [said[0], *waits_for(self.hang, self.hang_names, self.app.clock())]
        lines = [Text(line, style="yellow", no_wrap=True) for line in said]
        if self.hang.hung:
            lines[0].append(" · h: stacks", style="bold")
            if self.run_watch.status == "stopping":
                lines[-1].append(" · k: kill every process now", style="bold")
            if self.hang_digest:
                lines.append(Text(f"stacks: {self.hang_digest}", style="yellow", no_wrap=True))
        return lines

    def runs_polled(self, rows: list[Any]) -> None:
        """The app's runs watcher polled the runs root: a Slurm run's job state is read there (one squeue for every
        run), never here."""
        job = next((row.job for row in rows if row.id == self.run_watch.paths.id), None)
        if job != self.job:
            self.job = job
            if self._ready:
                self.update_header()

    def on_monitor_screen_updated(self, _message: Updated) -> None:
        view = self.active_view()
        if view is not None:  # hidden views catch up when shown
            view.refresh_source()
        self.call_after_refresh(self._shown.set)
        self.update_header()
        self.update_metrics()
        self.update_checkpoints()
        self.update_log_status(throttle=self._status_lines > 0)
        ended = self._gpus_live and self.run_watch.status in FINAL_STATUSES
        if (self._samples_changed or ended) and self._ready and self.query_one("#tabs", TabbedContent).active == "tab-gpus":
            self.show_gpus()  # another machine's figures arrived, or the run ended: what it used while it ran
        if not self._landed:
            self._landed = True
            if self.run_watch.status == "failed":
                self.call_after_refresh(self.land_on_failure)

    def land_on_failure(self) -> None:
        """A failed run opens on its failing rank's first traceback (the launcher's log when no rank failed)."""
        rank = self.run_watch.run.failed_rank
        tab = f"tab-rank-{rank}" if rank is not None and 0 <= int(rank) < self.run_watch.num_ranks else "tab-launcher"
        if tab == "tab-launcher" and (failed := self.failed_machine()) is not None:
            tab = f"tab-machine-{failed[0]}"
        self.query_one("#tabs", TabbedContent).active = tab
        view = self.active_view()
        if view is not None:
            view.focus()
            self.search.find(view, TRACEBACK.decode(), 0, False, announce=False, fallback_end=True)

    def update_header(self) -> None:
        w = self.run_watch
        p = w.events.progress
        record = w.record
        status = w.status
        total = p.get("max_steps") or w.run.max_steps
        step = p["step"]
        hang_lines = self.hang_lines()
        hung = self.hang is not None and self.hang.hung and bool(hang_lines)
        # another box's live run, the box not heard: its status now is not known, only what it said last
        heard_at = self.heard_at if self.mirror_problem is not None and status not in FINAL_STATUSES else None
        if heard_at is not None:
            line1 = Text.assemble("● ", ("not heard", "bold red"),
                                  f" · {status} when last heard ({time.strftime('%H:%M:%S', time.localtime(heard_at))})",
                                  no_wrap=True, overflow="ellipsis")
        else:
            line1 = Text.assemble("● ", status_text(HUNG_LABEL if hung else status), no_wrap=True,
                                  overflow="ellipsis")
        if status == "failed":
            line1.append(f" ({self.failed_where()})", style="red")
        job = self.backend.job_words(record)
        if job is not None:
            line1.append(f" · {job} {self.job or '?'}")
        # fields apart by a visible " · " (as the title bar's): a reader that drops the blanks where a style ends
        # (a copied SVG screenshot, a screen reader) still sees "running · step", never "runningstep"
        line1.append(f" · step {step}/{total or '?'}")
        if p.get("epoch") is not None:
            line1.append(f" · epoch {number(p['epoch'], 3)}")
        if p.get("loss") is not None:
            line1.append(f" · loss {number(p['loss'])}")
        if w.events.best is not None:
            line1.append(f" · best {short_metric(w.events.metric)} {number(w.events.best)} @{w.events.best_step}")
        if w.run.parent:
            line1.append(f" · resumed from {w.run.parent}", style="dim")
        fraction = step / total if total else None
        width = max(10, min(40, self.size.width - 44))
        line2 = Text(no_wrap=True, overflow="ellipsis")
        line2.append(bar(fraction, width), style="green")
        line2.append(f" {fraction:4.0%}" if fraction is not None else "   ?%")
        rate = w.events.steps_per_second
        if hung or heard_at is not None:  # no step now, or none heard of: not known
            line2.append("  steps/s and ETA unknown" + (" (no progress: hung?)" if hung else ""))
        elif rate:
            line2.append(f"  {rate:.2f} steps/s")
            if total and status == "running" and step < total:  # a stopping run ends at its next step
                line2.append(f"  ETA {duration((total - step) / rate)}")
        if heard_at is not None and (ran := elapsed(record, heard_at, "running")) is not None:
            line2.append(f"  elapsed ≥ {duration(max(0.0, ran))}")  # it went on for at least as long as the box was heard
        elif heard_at is None and (ran := elapsed(record, self.app.clock(), status)) is not None:
            line2.append(f"  elapsed {duration(ran)}")
        lines = [line1, line2, *hang_lines]
        if w.queue is not None:  # queued: its place and what it waits for (runs.queue.look), read by the worker
            place, *waits = w.queue.words()
            lines += [Text.assemble(place, (" · s: cancel", "bold"), style="yellow", no_wrap=True),
                      *(Text(wait, style="yellow", no_wrap=True) for wait in waits)]
        # its error, else what a lost or killed run's status tells, as status and logs -f say it (a failed one's
        # first line names its rank already)
        cause = w.run.error if status == "failed" else end_cause(w.record, status) if status in ("killed", "lost") else ""
        if cause:
            lines.append(Text(cause, style="red" if status != "killed" else "magenta", no_wrap=True))
        lines += restart_lines(w.run, self.app.clock())
        if w.damaged is not None:
            lines.append(Text(f"run.json is damaged ({w.damaged}): its state is not known until it is restored", style="red",
                              no_wrap=True))
        if self.machines:
            lines.append(Text.assemble(("machines  ", "bold"), machines_line(self.machines), no_wrap=True))
        if self.mirror_problem:  # another workstation's run, its box not heard: what is shown may be old
            lines.append(Text(self.mirror_problem, style="red", no_wrap=True))
        width = max(10, self.size.width - 2)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        header = Text("\n").join(lines)
        self.query_one("#header", TextLine).styles.height = len(lines)
        self._set("#header", header)

    def failed_where(self) -> str:
        """'rank 3 on node2', 'machine 1, node2' (its agent's error), or 'launcher'."""
        rank = self.run_watch.run.failed_rank
        if rank is not None:
            machine = machine_of_rank(self.machines, rank)
            return f"rank {rank}" + (f" on {machine.host}" if machine is not None else "")
        failed = self.failed_machine()
        return f"machine {failed[1].index}, {failed[1].host}" if failed is not None else "launcher"

    def failed_machine(self) -> tuple[int, Machine] | None:
        """The machine whose agent's error ended the run ("node2: no word from its agent …"), and its tab's place."""
        error = self.run_watch.run.error or ""
        return next(((i, m) for i, m in enumerate(self.machines) if error.startswith(f"{m.host}:")), None)

    def _set(self, selector: str, content: Text | str) -> None:
        self.query_one(selector, TextLine).set(content)

    def update_metrics(self) -> None:
        lineage = self.lineage
        series = lineage.joined(self.run_watch.events.series) if lineage is not None else self.run_watch.events.series
        status = self.run_watch.status
        self.query_one(MetricsPanel).show(series, live=status not in FINAL_STATUSES,
                                          lineage=lineage.note() if lineage is not None else None,
                                          ended=status if status in FINAL_STATUSES else None)

    def update_checkpoints(self) -> None:
        self.query_one(CheckpointList).show(self.run_watch, self.app.show_path(self.run_watch.output_dir))

    def selected_checkpoint(self) -> Path | None:
        return self.query_one(CheckpointList).selected()

    def show_gpus(self) -> None:
        """The GPUs tab: this run's devices, ranks and the host, as last sampled (see gpu_panel); another
        workstation's run: its devices there, as Home's one stream of that box carries them (`app.host_gpus`)."""
        from tuitrain.tui.widgets.gpu_panel import box_panel, run_panel

        w = self.run_watch
        live = self._gpus_live = w.status not in FINAL_STATUSES
        if self.host is not None:
            self._gpus_of = self.app.host_gpus.get(self.host)
            panel = box_panel(self.host, self._gpus_of, w.record, w.paths.id, live, run_dir=w.paths.root)
        else:
            self._gpus_of = self.app.hardware_view
            panel = run_panel(self._gpus_of, w.record, w.paths.id, live=live, machines=self.machines,
                              samples=self.machine_samples, run_dir=w.paths.root, now=self.app.clock())
        self._samples_changed = False
        self.query_one("#gpus", Static).update(panel)

    def box_gpus_heard(self, host: str) -> None:
        """The app heard a workstation's GPUs: this run's box's are drawn when its GPUs tab shows."""
        if host == self.host:
            self.hardware_sampled("")

    def hardware_sampled(self, _line: str) -> None:
        tabs = self.query_one("#tabs", TabbedContent) if self._ready else None
        latest = self.app.hardware_view if self.host is None else self.app.host_gpus.get(self.host)
        if tabs is not None and tabs.active == "tab-gpus" and latest is not self._gpus_of:
            self.show_gpus()

    # ------------------------------------------------------------------------------ logs
    def active_view(self) -> LogView | None:
        active = self.query_one("#tabs", TabbedContent).active
        if not active.startswith(("tab-all", "tab-rank", "tab-launcher", "tab-machine")):
            return None
        return self.query_one("#log-" + active.removeprefix("tab-"), LogView)

    def update_log_status(self, throttle: bool = False) -> None:
        """Where the view is in its log. While following a busy log the line count changes on every
        read; it is then shown once a second (each repaint of this line costs a repaint of the screen)."""
        import time

        now = time.monotonic()
        if throttle and now - self._status_at < 1.0:
            return
        self._status_at = now
        view = self.active_view()
        self._status_lines = view.line_count if view is not None else 0
        if view is None:
            self._set("#log-status", "")
            return
        first, last = view.shown_lines()
        if not view.scrollable_content_region.height or (view.wrap and view.line_count and last < first):
            # a tab just shown has no size (and a wrapped view no rows) until its first layout: ask again then
            self.call_after_refresh(self.update_log_status)
            where = f"{view.line_count} lines"
        else:
            where = log_range(first, last - first + 1, view.line_count)
        mode = "following the end" if view.follow else "paused (End or f follows)"
        if view.id == "log-all" and self.run_watch.num_ranks > 1:
            mode += " · folded (z unfolds)" if self.fold else " · unfolded (z folds)"
        filtered = view.filter
        if filtered is not None:
            waiting = " (filtering…)" if filtered.pending else ""
            mode += f" · only lines with {filtered.term!r}{waiting} (escape: all)"
        if view.wrap:
            mode += " · wrapped"
        search = f" · /{self.term} (n next, N previous)" if self.term else ""
        self._set("#log-status", f"{self.log_owner(view.id)}{where} · {mode}{search}")

    def log_owner(self, view_id: str | None) -> str:
        """Whose log is in view, for a run on several machines: 'rank 2 on node2 · ', 'node2: … · '."""
        if not self.machines or not view_id:
            return ""
        kind, _, number = view_id.removeprefix("log-").partition("-")
        if kind == "rank" and number.isdecimal():
            machine = machine_of_rank(self.machines, int(number))
            return f"rank {number} on {machine.label} · " if machine is not None else ""
        if kind == "machine" and number.isdecimal() and int(number) < len(self.machines):
            machine = self.machines[int(number)]
            return f"machine {machine.index} ({machine.label}): its agent and accelerate launch · "
        if kind == "launcher":
            return "the run's supervisor here (it starts every machine) · "
        return ""

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        if self.query_one("#tabs", TabbedContent).active == "tab-gpus":
            self.show_gpus()
        view = self.active_view()
        if view is not None:
            self._log_tab = self.query_one("#tabs", TabbedContent).active
            view.refresh_source()
            view.set_term(self.term)
        self.update_log_status()

    def on_log_view_moved(self, message: LogView.Moved) -> None:
        view = self.active_view()
        self.update_log_status(throttle=view is not None and view.follow)
        if view is not None and view.wrap:  # the rows in view are known once painted
            self.call_after_refresh(self.update_log_status, view.follow)

    def action_follow(self) -> None:
        view = self.active_view()
        if view is not None:
            view.action_follow()
            self.update_log_status()

    def action_fold(self) -> None:
        if self.run_watch.num_ranks < 2:
            self.notify("one rank: nothing to fold", severity="warning")
            return
        self.fold = not self.fold
        view = self.query_one("#log-all", LogView)
        view.set_source(self.run_watch.folded if self.fold else self.run_watch.merged)
        self.update_log_status()
        self.notify("lines printed alike by several ranks show once" if self.fold else "every rank's every line",
                    title="All ranks")

    def action_tab(self, delta: int) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        panes = [pane.id for pane in tabs.query(TabPane) if pane.id is not None]
        index = panes.index(tabs.active) if tabs.active in panes else 0
        tabs.active = panes[(index + delta) % len(panes)]
        self._focus_active()

    def action_show(self, pane: str) -> None:
        self.query_one("#tabs", TabbedContent).active = pane
        self._focus_active()

    def _focus_active(self) -> None:
        view = self.active_view()
        if view is not None:
            view.focus()
        elif self.query_one("#tabs", TabbedContent).active == "tab-checkpoints":
            self.query_one(CheckpointList).focus_table()

    @property
    def search(self) -> SearchBar:
        return self.query_one("#search", SearchBar)

    @property
    def term(self) -> str | None:
        return self.search.term

    def _on_a_log(self) -> LogView:
        """The log in view; from the GPUs, Metrics or Checkpoints tab, the log tab last shown (its focus left to the
        search or the find that asked: a late focus on the log would take the keys typed next)."""
        view = self.active_view()
        if view is None:
            self.query_one("#tabs", TabbedContent).active = self._log_tab
            view = self.active_view()
        assert view is not None
        return view

    def action_search(self) -> None:
        open_field_key(self)
        self._on_a_log()
        self.search.open()

    def action_filter_lines(self) -> None:
        open_field_key(self)
        view = self._on_a_log()
        self.search.open(filtering=True, value=view.filter.term if view.filter is not None else "")

    def on_search_bar_filter_changed(self, message: SearchBar.FilterChanged) -> None:
        view = self.active_view()
        if view is None:
            return
        view.focus()
        view.set_filter(message.term)
        self.update_log_status()

    def action_wrap(self) -> None:
        wrap = not any(view.wrap for view in self._log_views)
        for view in self._log_views:
            view.set_wrap(wrap)
        self.call_after_refresh(self.update_log_status)

    def on_search_bar_term_changed(self, message: SearchBar.TermChanged) -> None:
        view = self.active_view()
        if view is None:
            self.notify("search works in a log tab", severity="warning")
            return
        view.focus()
        view.set_term(message.term)
        if message.term:
            start = (view.current + 1) if view.current is not None else view.scroll_offset.y
            self.search.find(view, message.term, start, False)
        self.update_log_status()

    def on_search_bar_done(self, _message: SearchBar.Done) -> None:
        self.call_after_refresh(self.update_log_status)

    def action_next_match(self) -> None:
        view = self.active_view()
        if view is not None:
            self.search.next(view)

    def action_previous_match(self) -> None:
        view = self.active_view()
        if view is not None:
            self.search.previous(view)

    def action_traceback(self) -> None:
        view = self._on_a_log()
        view.focus()
        self.search.find(view, TRACEBACK.decode(), 0, False)

    # ------------------------------------------------------------------------------ requests
    def action_back(self) -> None:
        view = self.active_view()
        if self.search.close():
            if view is not None:
                view.focus()
            return
        if view is not None and view.filter is not None:
            view.set_filter(None)
            self.update_log_status()
            return
        self.app.pop_screen()

    def action_save_now(self) -> None:
        self._request("save")

    def action_evaluate_now(self) -> None:
        unevaluated = self.query_one(MetricsPanel).no_evaluation
        if unevaluated is not None and unevaluated.validation == "none":  # the rank would refuse it too (ControlCallback)
            self.notify("this run has no validation data: nothing to evaluate on. Resume it (R) with "
                        "data.validation_file=<file> and training.eval_strategy=steps to evaluate", severity="warning")
            return
        self._request("evaluate")

    def action_stop(self) -> None:
        self._ask_then_request("stop")

    def action_kill(self) -> None:
        self._ask_then_request("terminate")

    def _ask_then_request(self, what: str) -> None:
        """A stop or a kill asks once (screens.confirm.ask_first); an ended run has nothing to stop."""
        from tuitrain.tui.screens.confirm import ask_first

        if self.run_watch.status in FINAL_STATUSES:
            self.notify(f"run {self.run_watch.paths.id} has already ended ({self.run_watch.status})", severity="warning")
            return
        ask_first(self.app, what, self.run_watch.paths.id, lambda: self._request(what))

    def _request(self, what: str) -> None:
        self.run_worker(lambda: run_request(self.app, self.run_dir, what), thread=True, group="control",
                        exit_on_error=False)

    def action_stacks(self) -> None:
        """Every rank's stacks and their digest, taken in the stacks screen's worker (another workstation's run's
        there, by its tuitrain)."""
        from tuitrain.tui.screens.stacks import StacksScreen

        if self.run_watch.status in FINAL_STATUSES:
            self.notify(f"run {self.run_watch.paths.id} has ended ({self.run_watch.status}): no stacks to take",
                        severity="warning")
            return
        self.app.push_screen(StacksScreen(self.run_dir))

    def action_output_folder(self) -> None:
        """Over SSH there is no file manager to open: show the path and put it on the clipboard
        (OSC 52, which most terminals pass through)."""
        out = self.run_watch.output_dir
        if out is None:
            self.notify("this run has no output folder", severity="warning")
            return
        self.app.copy_to_clipboard(str(out))
        state = f" (on {self.host})" if self.host is not None else "" if out.is_dir() else " (not created yet)"
        self.notify(f"{out}{state}\ncopied to the clipboard", title="Output folder", timeout=8)

    def action_resume(self) -> None:
        """The resume dialog: the selected checkpoint (Checkpoints tab) or the latest, and --set overrides."""
        from tuitrain.tui.screens.resume import ResumeScreen

        if self.run_watch.status not in FINAL_STATUSES:
            self.notify(f"run {self.run_watch.paths.id} is still {self.run_watch.status}; stop it first (s)", severity="warning")
            return
        tabs = self.query_one("#tabs", TabbedContent)
        chosen = self.selected_checkpoint() if tabs.active == "tab-checkpoints" else None
        checkpoint = str(chosen) if chosen is not None else "latest"
        self.app.push_screen(ResumeScreen(self.run_dir, checkpoint, self.app.launch_overrides))

    def action_export(self) -> None:
        """The export dialog (best, last or selected checkpoint; a folder), then `tuitrain export` in a worker;
        another workstation's run's checkpoints (as its box sees them) into a folder there."""
        from tuitrain.rundir.checkpoints import latest_complete
        from tuitrain.tui.screens.export import ExportChoice, ExportScreen
        from tuitrain.tui.widgets.checkpoints import best_checkpoint

        w = self.run_watch
        complete = {c.path: c for c in w.checkpoints if c.complete}
        last = latest_complete(list(complete.values()))
        if w.output_dir is None or last is None:
            self.notify(f"run {w.paths.id} has no complete checkpoint yet; nothing to export", severity="warning")
            return
        picked = [("best", best_checkpoint(w)), ("last", last.path), ("selected", self.selected_checkpoint())]
        choices = [ExportChoice(kind, path, complete[path].step) for kind, path in picked if path is not None and path in complete]
        self.app.push_screen(ExportScreen(w.paths.id, w.output_dir, choices, self.host), self._export)

    def _export(self, request: object) -> None:
        from tuitrain.tui.screens.export import ExportRequest, run_export

        if not isinstance(request, ExportRequest):
            return
        if self.host:  # `tuitrain export HOST:RUN OUT`: run there, its folder that box's
            runs_root, run_id = self.app.runs_root, f"{self.host}:{self.run_watch.paths.id}"
            where = f"{request.out} on {self.host}"
        else:
            runs_root, run_id = self.run_dir.parent, self.run_watch.paths.id
            where = self.app.show_path(request.out)
        self.notify(f"{request.checkpoint.name} into {where}…", title="Exporting")

        def work() -> None:
            done, line = run_export(runs_root, run_id, request)
            if done:
                self.app.notify(line, title="Exported", timeout=15)
            else:
                self.app.notify(line, title="Cannot export", severity="error", timeout=15)

        self.run_worker(work, thread=True, group="export", exit_on_error=False)
