"""The Textual app: `tuitrain` with no command.

The app polls the runs root in a worker (runs started anywhere appear and stay live), samples
the machine for the hardware strip, announces runs that finish or fail, keeps the checkpoints written
lately as news (Home marks their rows; a run's own monitor says them, once a poll), and hands screens
their data (messages up, method calls down). Quitting never stops a run: runs are
detached processes that only ever read control files.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from textual import work
from textual.app import ScreenStackError, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from tuitrain.errors import TuitrainError
from tuitrain.tui.actions import wait_or_cancel
from tuitrain.tui.app_api import TuitrainAppApi
from tuitrain.tui.failed_work import PassesFailedWorkUp, WorkFailed
from tuitrain.tui.gpu_history import GpuHistory
from tuitrain.tui.messages import HardwareSampled, RunsPolled, RunStarted
from tuitrain.tui.plain import TOAST_CHARS, cut, visible
from tuitrain.tui.run_table import CheckpointNews, checkpoints_written

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from tuitrain.hardware.sampler import SampledView
    from tuitrain.runs.view.live import Change, RunRow
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip
    from tuitrain.tui.workstation_streams import BoxGpus


class TuitrainApp(PassesFailedWorkUp, TuitrainAppApi):
    TITLE = "tuitrain"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit", priority=False),
        Binding("question_mark", "help", "Help"),
        Binding("g", "gpus", "GPUs", show=False, tooltip="Every process on every GPU of this machine"),
        Binding("Q", "queues", "Queues", show=False,
                tooltip="Every machine's queue: this one's and each workstation's (tuitrain queue --all-hosts)"),
    ]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    def __init__(
        self,
        runs_root: Path,
        *,
        cwd: Path | None = None,
        launch_overrides: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
        hardware_line: str | None = None,
        hardware: Any = None,
        poll_interval: float = 1.0,
        monitor_interval: float = 0.3,
        hardware_interval: float = 2.0,
        open_run: Path | None = None,
    ) -> None:
        super().__init__()
        self.runs_root = Path(runs_root).resolve()
        self.cwd = Path(cwd or Path.cwd()).resolve()
        self.launch_overrides = list(launch_overrides)
        self.clock = clock
        self.fixed_hardware_line = hardware_line
        self.poll_interval = poll_interval
        self.monitor_interval = monitor_interval
        self.hardware_interval = hardware_interval
        self.initial_run = Path(open_run) if open_run is not None else None
        self.hardware_view: "SampledView | None" = None
        self.rows: list["RunRow"] = []
        self.polls = 0
        self.hardware: Any = hardware
        self.hardware_line = hardware_line or "…"
        self.host_gpus: dict[str, "BoxGpus"] = {}
        self.gpu_history = GpuHistory()
        self._poke = threading.Event()
        self.checkpoint_news = CheckpointNews()
        self.terminal_word: tuple[str, ...] = ()  # the run endings [notify] terminal = true rings for (read once)

    # ------------------------------------------------------------------------------ lifecycle
    def on_mount(self) -> None:
        from tuitrain.tui.screens.home import HomeScreen

        self.push_screen(HomeScreen())
        if self.initial_run is not None:
            self.open_run(self.initial_run)
        # the first frame is painted before any worker starts (threads compete for the GIL)
        self.call_after_refresh(self._start_watching)

    def _start_watching(self) -> None:
        if not self.is_running:  # quit before the first frame (a browser tab closed at once): its shutdown has
            return  # cancelled the workers already, and a loop started now would hold the process for ever
        self.poll_runs()
        if self.fixed_hardware_line is None:
            self.sample_hardware()
        self.prune_mirrors()

    @work(thread=True, group="mirrors", exit_on_error=False)
    def prune_mirrors(self) -> None:
        """Other workstations' runs mirrored here and not written for a long while: removed (the run opened at
        start kept)."""
        from tuitrain.remote.run_mirror import prune_cache

        prune_cache(keep=self.initial_run)

    def show_path(self, path: Path | str | None) -> str:
        """A path as the user thinks of it: relative to the working folder when inside it."""
        if path is None:
            return "-"
        path = Path(path)
        try:
            return "./" + str(path.resolve().relative_to(self.cwd))
        except ValueError:
            return str(path)

    def poke(self) -> None:
        """Poll the runs root now (after starting or stopping a run)."""
        self._poke.set()

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def poll_runs(self) -> None:
        from tuitrain.backends import settle_runs
        from tuitrain.runs.view.live import RunsWatcher

        watcher = RunsWatcher(self.runs_root, settle_runs)
        self.terminal_word = terminal_endings()
        while True:
            rows, changes = watcher.poll()
            self.post_message(RunsPolled(rows, changes))
            if not wait_or_cancel(self.poll_interval, self._poke):
                return

    @work(thread=True, exclusive=True, group="hardware", exit_on_error=False)
    def sample_hardware(self) -> None:
        """GPUs (NVML), host and the live ranks of every run, every `hardware_interval` seconds."""
        import os

        from tuitrain.hardware import detect_hardware
        from tuitrain.hardware.recorded import library_from_env
        from tuitrain.hardware.sampler import Sampler
        from tuitrain.runs.view.owners import OwnerIndex
        from tuitrain.tui.widgets.gpu_panel import strip_line

        # ranks of this machine only: a rank on another machine has a pid that means nothing here
        with Sampler(library_from_env(os.environ), owners=OwnerIndex(self.runs_root).get) as sampler:
            while True:
                view = sampler.view()
                if self.hardware is None:  # the sampler has read the GPUs: no second NVML session for them
                    self.hardware = detect_hardware(discovery=view.snapshot.discovery)
                self.post_message(HardwareSampled(strip_line(view), view))
                if not wait_or_cancel(self.hardware_interval):
                    return

    def on_runs_polled(self, message: RunsPolled) -> None:
        self.rows = message.rows
        self.polls += 1
        self.checkpoint_news.add(message.changes, self.clock())
        self.say_checkpoints([c for c in message.changes if c.kind == "checkpoint"])
        for change in message.changes:
            self.announce(change)
        self._to_screens("runs_polled", message.rows)

    def on_hardware_sampled(self, message: HardwareSampled) -> None:
        from tuitrain.remote.workstations import LOCAL

        self.hardware_line = message.line
        self.hardware_view = message.view
        if message.view is not None:
            self.gpu_history.local(LOCAL, message.view)
        self._to_screens("hardware_sampled", message.line)

    def on_hardware_strip_host_gpus(self, message: HardwareStrip.HostGpus) -> None:
        """A workstation's GPUs (or why its stream failed), up from Home's strip: kept for every screen. A failure
        keeps the GPUs last heard (shown as old, under the problem); a sample clears the problem."""
        news = message.news
        if news.gpus is not None:
            self.gpu_history.add(news.host, news.gpus.gpus)
        before = self.host_gpus.get(news.host)
        gpus = news.gpus if news.gpus is not None else (before.gpus if before is not None else None)
        self.host_gpus[news.host] = dataclasses.replace(news, gpus=gpus)
        self._to_screens("box_gpus_heard", news.host)

    def _to_screens(self, method: str, *args: Any) -> None:
        """Method calls down: every screen on the stack that has `method` gets the news."""
        from textual.css.query import NoMatches

        for screen in self.screen_stack:
            handler = getattr(screen, method, None)
            if handler is not None and screen.is_attached:
                try:
                    handler(*args)
                except NoMatches:  # a screen being taken down while the app closes
                    pass

    def say_checkpoints(self, saved: list["Change"]) -> None:
        """A run's checkpoints of this poll, in one toast, on its own monitor only: elsewhere they are news
        on Home (a mark on the run's row), and no toast covers another screen's table or another run's log."""
        if not saved:
            return
        from tuitrain.tui.screens.monitor import MonitorScreen

        screen = self.screen
        if not isinstance(screen, MonitorScreen):
            return
        own = [c.detail for c in saved if c.run_id == screen.run_watch.paths.id]
        if own:
            self.notify(checkpoints_written(own), title="Checkpoint")

    def announce(self, change: "Change") -> None:
        if change.kind in self.terminal_word:
            import os

            from tuitrain.notify.terminal import terminal_alert

            self.write_to_terminal(terminal_alert(f"tuitrain: run {change.kind}",
                                                  f"{change.run_id}" + (f": {change.detail}" if change.detail else ""),
                                                  os.environ))
        if change.kind == "finished":
            self.notify(f"{change.run_id} finished", title="Run finished")
        elif change.kind == "stopped":
            self.notify(f"{change.run_id} stopped", title="Run stopped")
        elif change.kind == "killed":
            self.notify(f"{change.run_id} killed (nothing saved)", title="Run killed", severity="warning")
        elif change.kind == "failed":
            self.notify(f"{change.run_id}: {change.detail}", title="Run failed", severity="error", timeout=10)
        elif change.kind == "lost":
            self.notify(f"{change.run_id}: {change.detail}", title="Run lost",
                        severity="warning", timeout=10)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast of the app, whoever asks for it (a screen's or a widget's notify comes here): text, never
        markup, and cut where it would cover the screen (tui.plain)."""
        super().notify(cut(visible(message), TOAST_CHARS), title=visible(title), severity=severity, timeout=timeout,
                       markup=False)

    def write_to_terminal(self, sequence: str) -> None:
        """Raw escape sequences to the terminal, as Textual's own bell and clipboard write theirs (its driver; no
        public call does it)."""
        if not self.is_headless and self._driver is not None:
            self._driver.write(sequence)

    def on_work_failed(self, message: WorkFailed) -> None:
        """Every failed worker of the app or a screen, said in one toast, as text (its words are no markup): a
        refusal (`TuitrainError`) as its own words, any other error with its kind and what it was doing."""
        error = message.error
        if isinstance(error, TuitrainError):
            self.notify("\n".join(error.lines()), title="Refused", severity="warning", timeout=15, markup=False)
        else:
            self.notify(f"{type(error).__name__}: {error}", title=f"{message.worker_name or 'work'} failed",
                        severity="error", timeout=15, markup=False)

    # ------------------------------------------------------------------------------ navigation
    def on_run_started(self, message: RunStarted) -> None:
        self.poke()
        if message.note:
            self.notify(message.note, title="Run started")
        # a resume from a monitor takes that monitor's place: escape goes back to where it was opened from
        self.open_run(Path(message.run_dir), replace=True)

    def open_run(self, run_dir: Path, replace: bool = False, tab: str | None = None) -> None:
        from tuitrain.rundir.record import RunRecordError
        from tuitrain.tui.screens.monitor import MonitorScreen

        try:
            screen = MonitorScreen(Path(run_dir), tab)
        except RunRecordError as exc:  # a damaged run.json: say so, the app goes on
            self.notify(str(exc), title="Cannot open this run", severity="error", timeout=15)
            return
        try:
            current = self.screen
        except ScreenStackError:  # the app is closing: a start said as it quits opens nothing (the run goes on)
            return
        if replace and isinstance(current, MonitorScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def open_compare(self, runs: list[tuple[Path, str]]) -> None:
        """The compare screen on (run directory, profile) pairs."""
        from tuitrain.tui.screens.compare import CompareScreen

        self.push_screen(CompareScreen(runs))

    def open_editor(self, path: Path | None, accelerate_config: Path | None = None) -> None:
        from tuitrain.tui.screens.editor import EditorScreen

        self.push_screen(EditorScreen(path, accelerate_config))

    def action_help(self) -> None:
        from tuitrain.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_gpus(self) -> None:
        from tuitrain.tui.screens.gpus import GpusScreen

        if not isinstance(self.screen, GpusScreen):
            self.push_screen(GpusScreen())

    def action_queues(self) -> None:
        from tuitrain.tui.screens.queue import QueueScreen

        if not isinstance(self.screen, QueueScreen):
            self.push_screen(QueueScreen())

    async def action_quit(self) -> None:
        """Quit (runs go on); asks first when an editor holds unsaved changes."""
        from tuitrain.tui.screens.confirm import ConfirmScreen

        if any(getattr(s, "dirty", False) for s in self.screen_stack):
            def answered(yes: bool | None) -> None:
                if yes:
                    self.exit(0)

            self.push_screen(ConfirmScreen("Quit? The profile editor has unsaved changes.\nRuns go on either way.",
                                           yes="Quit"), answered)
            return
        self.exit(0)

    def _command_help(self, binding: Binding) -> str:
        """'Next tab (])': the binding's help and its first key as Textual shows keys, unless the help
        already names the key ('Next section (ctrl+pagedown)' is not given it twice)."""
        first = binding.key.split(",")[0]
        key = binding.key_display or self.get_key_display(dataclasses.replace(binding, key=first))
        text = getattr(binding, "tooltip", "") or binding.description
        if f"({key})" in text or f"({first})" in text:
            return text
        return f"{text} ({key})"

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action of the screen (its key bindings) is a command, then Textual's own."""
        seen: set[str] = set()
        for node in (screen, self):
            for binding in getattr(node, "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.description or binding.action in seen:
                    continue
                seen.add(binding.action)
                yield SystemCommand(binding.description, self._command_help(binding),
                                    lambda n=node, a=binding.action: n.run_action(a))
        for command in super().get_system_commands(screen):
            if command.title not in ("Quit",):
                yield command


def run_app(runs_root: Path, overrides: Sequence[str] = (), open_run: Path | None = None) -> int:
    """Open the app on a runs root (and on one run's monitor); returns the exit status (runs go on
    after it)."""
    app = TuitrainApp(runs_root, launch_overrides=overrides, open_run=open_run)
    app.run()
    return app.return_code or 0


def terminal_endings() -> tuple[str, ...]:
    """The run endings to ring the terminal for: [notify] `on`, when `terminal = true` (a bad settings file is
    `run`'s to refuse: the app rings for nothing then)."""
    from tuitrain.notify import read_notify_config
    from tuitrain.profile import ProfileError

    try:
        config = read_notify_config()
    except ProfileError:
        return ()
    return config.on if config.terminal else ()
