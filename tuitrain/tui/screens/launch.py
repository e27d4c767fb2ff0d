"""Launch a profile: what will run (checked as you type overrides), then start it detached here, queue it (with
`tuitrain run`'s queue options typed: after other runs, or a sweep of runs, as `runs.queue.options` and
`backends.sweep` read them), or submit it to Slurm as `tuitrain submit` does; with workstations in the settings, or
start it on one of them as `tuitrain run --host` does (remote.launch_there), its monitor then opened on its mirror."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static

from tuitrain.errors import TuitrainError, error_lines
from tuitrain.runs.queue.options import QueueOptions, QueueOptionsError, options_from_text
from tuitrain.tui.command_fold import WithCommands
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.messages import RunStarted
from tuitrain.tui.plain import cut, plain, problem_lines
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters
    from textual.timer import Timer

    from tuitrain.tui.app_api import TuitrainAppApi


PLAN_DELAY = 0.2  # seconds of quiet after an edit of the overrides before they are planned (as the editor checks)
SCRIPT_EXAMPLE = "distributed.num_processes=2 run.name=try-2"  # overrides a [script] profile takes (no [training])


class LaunchScreen(PassesFailedWorkUp, QuitSafe, ModalScreen[None]):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    DEFAULT_CSS = """
    LaunchScreen { align: center middle; }
    LaunchScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    LaunchScreen #launch-title { text-style: bold; height: auto; }
    LaunchScreen #plan { height: auto; max-height: 12; color: $text-muted; }
    LaunchScreen #problems { height: auto; color: $text-error; }
    LaunchScreen #queue-said { height: auto; color: $text-muted; }
    LaunchScreen #queue-said.-refused { color: $text-error; }
    LaunchScreen .buttons { height: 3; align-horizontal: right; }
    LaunchScreen #where-row { height: 1; margin-bottom: 1; }
    LaunchScreen #where-row > Static { width: auto; padding: 0 1 0 0; }
    LaunchScreen #where { width: 40; }
    LaunchScreen Button { margin-left: 1; min-width: 0; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel"),
                Binding("ctrl+t", "preview_data", "Preview data",
                        tooltip="The training data as the engine tokenizes it: rows, labels, token lengths"),
                Binding("ctrl+o", "queue", "Queue",
                        tooltip="Queue it on this machine (tuitrain run --queue): it starts by itself when its GPUs "
                                "are free, after the runs of --after/--after-ok typed under Queue options; with "
                                "--sweep, one run per value (--max-parallel N: at most N at once)"),
                Binding("ctrl+l", "doctor", "Doctor",
                        tooltip="Check every machine of a multi-machine profile over ssh, as `tuitrain doctor` "
                                "(with the overrides typed); o there: `validate --offline`, the profile alone"),
                Binding("ctrl+b", "submit", "Submit to Slurm",
                        tooltip="Submit it as a Slurm batch job (tuitrain submit) with the Slurm options below"),
                Binding("ctrl+y", "copy_command", "Copy run command",
                        tooltip="Copy `tuitrain run PROFILE --set …` with the overrides typed here (with Slurm "
                                "options typed: `tuitrain submit …`; with a workstation chosen: `--host HOST`)")]

    def __init__(self, path: Path, overrides: Sequence[str] = ()) -> None:
        super().__init__()
        self.path = Path(path)
        self.initial = " ".join(shlex.quote(o) for o in overrides)
        self.busy = False
        self._previews = 0
        self._plan_timer: Timer | None = None
        self.hosts = configured_hosts()  # the workstations of the settings: where else it may go

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Words(Text.assemble(f"Launch {self.path.stem}  ", (self._where(), "dim")), id="launch-title")
            if self.hosts:  # shown only with workstations in the settings
                with Horizontal(id="where-row"):
                    yield Words("Where:")
                    yield Select([("this machine", ""), *((plain(host), host) for host in self.hosts)], allow_blank=False,
                                 value="", id="where", compact=True)
            yield Words("Overrides, like --set (section.key=value, space separated):", classes="hint")
            yield Field(self.initial, placeholder="training.max_steps=40 training.logging_steps=5", id="overrides")
            yield Words("Queue options (`tuitrain run`'s; with any, Launch queues too):", classes="hint")
            yield Field("", placeholder="--sweep training.learning_rate=1e-5,3e-5 --max-parallel 1 --after RUN",
                        id="queue-options")
            yield Words("", id="queue-said")
            yield Words("Slurm options, for Submit (as `tuitrain submit` takes them):", classes="hint")
            yield Field("", placeholder="--partition gpu --time 2:00:00 --account lab --requeue", id="sbatch")
            with VerticalScroll(id="plan-box"):
                yield Words("planning…", id="plan")
                yield Words("", id="problems")
            with Horizontal(classes="buttons"):
                yield Button("Preview (^t)", id="preview-data")
                yield Button("Slurm (^b)", id="submit")
                yield Button("Queue (^o)", id="queue")
                yield Button("Launch", variant="primary", id="launch")
                yield Button("Cancel", id="cancel")

    def _where(self) -> str:
        from tuitrain.profile.lookup import BUILTIN_DIR

        if self.path.resolve().parent == BUILTIN_DIR.resolve():
            return "(built in to tuitrain)"
        return self.app.show_path(self.path)

    def on_mount(self) -> None:
        self.query_one("#overrides", Input).focus()
        self.preview(self.initial)

    def overrides(self) -> list[str]:
        try:
            return shlex.split(self.query_one("#overrides", Input).value)
        except ValueError:
            return self.query_one("#overrides", Input).value.split()

    @on(Input.Changed, "#overrides")
    def _changed(self, event: Input.Changed) -> None:
        """One plan once the typing pauses, not a plan a key: each plan is a thread that holds the interpreter while
        it plans, and a paste with keys behind it had four of them slow the screen."""
        if self._plan_timer is not None:
            self._plan_timer.stop()
        self._plan_timer = self.set_timer(PLAN_DELAY, lambda: self.preview(event.value))
        self._say_queue()

    def queue_options(self) -> QueueOptions:
        """The queue options typed (none: the defaults); QueueOptionsError for words `tuitrain run` would refuse."""
        return options_from_text(self.query_one("#queue-options", Input).value)

    @on(Input.Changed, "#queue-options")
    @on(Select.Changed, "#where")
    def _say_queue(self) -> None:
        """Under the queue options, as they are typed: what they queue, or why `tuitrain run` would refuse them."""
        from tuitrain.backends.sweep import checked_points, sweep_summary

        said = self.query_one("#queue-said", Static)
        try:
            options = self.queue_options()
            line = sweep_summary(checked_points(options, self.overrides()), options.max_parallel) \
                if options.sweep else "1 run"
        except QueueOptionsError as exc:
            said.set_class(True, "-refused")
            said.update(Text(cut(str(exc))))  # a 3 kB paste named, not printed whole
            return
        said.set_class(False, "-refused")
        waits = [f"after {options.after}" if options.after else "",
                 f"after {options.after_ok} finish(es) well" if options.after_ok else ""]
        where = f" on {self.host()}" if self.host() else ""
        said.update(Text(f"queues {line}{where}" + "".join(f", {w}" for w in waits if w) if options.queues else ""))

    def preview(self, _value: str) -> None:
        """Plan again in a worker; thread workers are not stopped by newer ones, so only the
        latest plan is shown."""
        self._previews += 1
        self._plan(self.overrides(), self._previews)

    @work(thread=True, group="plan", exit_on_error=False)
    def _plan(self, overrides: list[str], number: int) -> None:
        """The profile's own backend plans it, as `tuitrain plan` does: this machine's plan, or one per machine."""
        from tuitrain.backends import for_profile
        from tuitrain.profile import load_profile
        from tuitrain.profile.load import plan_problems

        try:
            profile = load_profile(self.path, overrides)
            preview = for_profile(profile.data, hardware=self.app.hardware).plan(profile, self.app.runs_root)
        except (TuitrainError, OSError) as exc:  # said in the dialog, in place of the plan
            self.app.call_from_thread(self._show, "", error_lines(exc), number)
            return
        notes = [str(p) for p in plan_problems(profile, preview.problems, overrides)]
        if profile.data.get("script"):  # your own script: no [training] to override
            self.app.call_from_thread(setattr, self.query_one("#overrides", Input), "placeholder", SCRIPT_EXAMPLE)
        self.app.call_from_thread(self._show, WithCommands([Text(f"{preview.summary}\n"), preview.command]), notes,
                                  number)

    def _show(self, plan: "str | WithCommands", problems: list[str], number: int) -> None:
        if number != self._previews:
            return
        self.query_one("#plan", Static).update(plan)  # the command folded between its words (tui.command_fold)
        self.query_one("#problems", Static).update(problem_lines(problems))

    def host(self) -> str:
        """The workstation chosen to run it; "" for this machine."""
        return str(self.query_one("#where", Select).value) if self.hosts else ""

    @on(Input.Submitted, "#overrides")
    @on(Button.Pressed, "#launch")
    def action_launch(self) -> None:
        self._go(queue=False)

    @on(Input.Submitted, "#queue-options")
    @on(Button.Pressed, "#queue")
    def action_queue(self) -> None:
        self._go(queue=True)

    def _go(self, queue: bool) -> None:
        """Start it, or queue it (`queue`, or queue options typed: as `tuitrain run` with them), here or there."""
        from tuitrain.runs.queue.options import refusal_there

        if self.busy:
            return
        host = self.host()
        try:
            options = self.queue_options()
            refusal = refusal_there(options, host) if host else None
        except QueueOptionsError as exc:
            refusal = str(exc)
        if refusal:
            self._failed([refusal])
            return
        queue = queue or options.queues
        self.busy = True
        doing = "queueing" if queue else "sending it to" if host else "starting"
        self.query_one("#plan", Static).update(Text(f"{doing} it on {host}…" if host and queue else
                                                    f"{doing} {host}…" if host else f"{doing}…"))
        if host:
            self.start_there(host, self.overrides(), options.words() or (["--queue"] if queue else []))
        else:
            self.start(queue, options)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_copy_command(self) -> None:
        """The command that does from a shell what Launch (or, with Slurm options typed, Submit) does here."""
        from tuitrain.tui.run_command import tuitrain_command

        text = self.query_one("#sbatch", Input).value
        try:
            options = shlex.split(text)
        except ValueError:
            options = text.split()
        verb = "submit" if options else "run"
        try:
            queued = [] if options else self.queue_options().words()
        except QueueOptionsError:
            queued = self.query_one("#queue-options", Input).value.split()
        if self.host() and not options:  # its runs folder is that box's own: no --runs-dir of this one
            command = tuitrain_command("run", self.path, self.app.cwd / "runs", self.app.cwd, self.overrides(),
                                       ["--host", self.host(), *queued])
        else:
            command = tuitrain_command(verb, self.path, self.app.runs_root, self.app.cwd, self.overrides(),
                                       options or queued)
        self.app.copy_to_clipboard(command)
        self.notify(f"copied (through the terminal's clipboard, OSC 52): {command}", title="Command")

    def action_doctor(self) -> None:
        """The doctor alone, on the profile with the overrides typed (the check screen: v, o and d there)."""
        from tuitrain.tui.screens.check import CheckScreen

        self.app.push_screen(CheckScreen(self.path, self.overrides(), "doctor"))

    @on(Button.Pressed, "#preview-data")
    def action_preview_data(self) -> None:
        """The training data with the overrides as typed (tuitrain preview PROFILE --set ...)."""
        from tuitrain.tui.screens.data_preview import DataPreviewScreen

        self.app.push_screen(DataPreviewScreen(self.path, self.overrides()))

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def start(self, queue: bool = False, options: QueueOptions | None = None, slurm: str | None = None) -> None:
        """As `tuitrain run` starts it (tuitrain.backends.start, every check in its order: the doctor for several
        machines); with `queue`, as `tuitrain run --queue` creates it queued (after the runs of `options`); with a
        sweep in `options`, as `tuitrain run --sweep` queues its runs, whole or not at all (backends.sweep); with
        `slurm` (its options as typed), as `tuitrain submit` submits it."""
        from tuitrain.backends.start import Choices, load_for, start_profile
        from tuitrain.runs.queue.entries import QueueRequest
        from tuitrain.runs.queue.options import queue_request
        from tuitrain.slurm.options import options_from_text

        def say(line: str) -> None:
            self.app.call_from_thread(self.query_one("#plan", Static).update, Text(line))

        options = options or QueueOptions()
        try:
            if options.sweep:
                self._sweep(options, say)
                return
            request = (queue_request(self.app.runs_root, options) or QueueRequest()) if queue else None
            choices = Choices(slurm=options_from_text(slurm) if slurm is not None else None, queue=request)
            profile = load_for(self.path, self.overrides(), choices)
            started = start_profile(profile, self.app.runs_root, choices, overrides=self.overrides(), cwd=self.app.cwd,
                                    say=say)
        except (TuitrainError, OSError) as exc:  # said in the dialog, which stays open to change what was typed
            self.app.call_from_thread(self._failed, error_lines(exc))
            return
        self.app.call_from_thread(self._submitted, str(started.paths.root), started.note)

    def _sweep(self, options: QueueOptions, say: "Callable[[str], None]") -> None:
        """The sweep's runs queued whole (backends.sweep.queue_sweep); Home then lists them, each a row."""
        from tuitrain.backends.sweep import queue_sweep, sweep_points, sweep_summary

        queued = queue_sweep(self.path, self.overrides(), options, self.app.runs_root, self.app.cwd, say=say)
        note = (f"queued {sweep_summary(sweep_points(options.sweep), options.max_parallel)}: "
                f"{queued[0].id} … {queued[-1].id}; each run's monitor says what it waits for")
        self.app.call_from_thread(self._swept, note)

    def _swept(self, note: str) -> None:
        self.dismiss(None)
        self.app.notify(note, title="Sweep queued", timeout=15)
        self.app.poke()

    @on(Input.Submitted, "#sbatch")
    def _slurm_options_typed(self, event: Input.Submitted) -> None:
        """Enter in the Slurm options ends the typing there, it submits nothing (it sent a job to Slurm): the Slurm
        button takes the focus, and its enter (or ctrl+b) submits."""
        event.stop()
        self.query_one("#submit", Button).focus()

    @on(Button.Pressed, "#submit")
    def action_submit(self) -> None:
        if self.host():
            self._failed([(f"Slurm: a job is submitted from this machine; choose 'this machine' under Where (or run "
                          f"`tuitrain submit` on {self.host()})")])
            return
        if not self.busy:
            self.busy = True
            self.query_one("#plan", Static).update("submitting…")
            self.start(slurm=self.query_one("#sbatch", Input).value)

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def start_there(self, host: str, overrides: list[str], passed: Sequence[str] = ()) -> None:
        """As `tuitrain run --host HOST PROFILE` starts it (remote.launch_there): sent frozen, checked there, started
        there detached; then mirrored here (remote.run_mirror.fetch) and its monitor opened, as Home's Enter does."""
        from tuitrain.remote.launch_there import launch_there
        from tuitrain.remote.run_mirror import fetch
        from tuitrain.remote.workstations import find, workstations
        from tuitrain.runs.start.new_run import sent_profile_text

        try:
            station = find(host, workstations())
            launched = launch_there(station, self.path, sent_profile_text(self.path, overrides), passed)
        except (TuitrainError, OSError) as exc:
            self.app.call_from_thread(self._failed, error_lines(exc))
            return
        if launched.run_id is None:
            self.app.call_from_thread(self._failed, list(launched.problems))
            return
        self.app.call_from_thread(self.query_one("#plan", Static).update, f"started {host}:{launched.run_id}; "
                                  "fetching its files…")
        run_dir, problem = fetch(host, launched.run_id)
        self.app.call_from_thread(self._started_there, str(run_dir), f"{host}:{launched.run_id} started on {host}",
                                  problem)

    def _started_there(self, run_dir: str, note: str, problem: str | None) -> None:
        if problem:  # it runs there: said, and Home lists it as the box's runs come
            self.dismiss(None)
            self.app.notify(f"{note}; its monitor cannot open yet: {problem}", title="Run started",
                            severity="warning", timeout=15)
            return
        self._submitted(run_dir, note)

    def _submitted(self, run_dir: str, note: str) -> None:
        self.dismiss(None)
        self.app.post_message(RunStarted(run_dir, note))

    def _failed(self, problems: list[str]) -> None:
        self.busy = False
        self._previews += 1  # a plan still on its way would hide why nothing started
        if self._plan_timer is not None:
            self._plan_timer.stop()
        self.query_one("#plan", Static).update("not started:")
        self.query_one("#problems", Static).update(problem_lines(problems))


def configured_hosts() -> list[str]:
    """The workstations of the user's settings, by host; none when the settings cannot be read (Home says why)."""
    from tuitrain.remote.workstations import configured

    stations, _problem = configured()
    return [station.host for station in stations]
