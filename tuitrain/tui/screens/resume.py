"""Resume a run from one of its checkpoints, with `--set` overrides: the checkpoint it continues
from, the overrides checked as you type (the CLI's own parser and validator), then the run's own
backend resumes it as `tuitrain resume` does, in a worker. Problems show here, one line each; nothing
starts until they are gone. Another workstation's run (its mirror here) is resumed on its box, as `tuitrain resume
HOST:RUN --set …` does: its overrides are checked there, and a refusal is the box's one line."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from tuitrain.errors import TuitrainError
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.messages import RunStarted
from tuitrain.tui.plain import problem_lines
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.rundir.checkpoints import Checkpoint
    from tuitrain.tui.app_api import TuitrainAppApi


def split_overrides(text: str) -> list[str]:
    """The overrides as a shell would split them (unbalanced quotes: on white space)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def override_problems(profile: Path, overrides: Sequence[str], checkpoint: Checkpoint | None = None) -> list[str]:
    """Each problem the CLI would refuse these overrides for, one line each ([] when none); with the
    `checkpoint` to resume from, also what `tuitrain resume` refuses against it (another base, nothing left
    to train)."""
    from tuitrain.profile import ProfileError, load_profile
    from tuitrain.runs.start.from_profile import checkpoint_refusal

    try:
        loaded = load_profile(profile, list(overrides))
    except ProfileError as exc:
        return [str(p) for p in exc.problems if getattr(p, "severity", "error") != "note"]
    except OSError as exc:
        return [f"{profile}: cannot be read ({exc.strerror or exc})"]
    if checkpoint is None:
        return []
    against = checkpoint_refusal(profile, loaded.data, checkpoint)
    return [against] if against else []


def box_checkpoint(found: Sequence[Checkpoint], ref: str) -> Checkpoint | None:
    """Of another workstation's run's checkpoints as its box sees them, the one `ref` names: `latest` (the newest
    complete), `checkpoint-N` or its path there."""
    complete = [c for c in found if c.complete]
    if ref == "latest":
        return max(complete, key=lambda c: c.step, default=None)
    return next((c for c in complete if ref in (str(c.path), c.path.name)), None)


class ResumeScreen(PassesFailedWorkUp, QuitSafe, ModalScreen[None]):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    DEFAULT_CSS = """
    ResumeScreen { align: center middle; }
    ResumeScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    ResumeScreen #resume-title { text-style: bold; height: auto; }
    ResumeScreen #checkpoint { height: auto; }
    ResumeScreen #resume-problems { height: auto; color: $text-error; }
    ResumeScreen .buttons { height: 3; align-horizontal: right; }
    ResumeScreen Button { margin-left: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, run_dir: Path, checkpoint: str, overrides: Sequence[str] = ()) -> None:
        """`checkpoint`: `latest`, `checkpoint-N` or a path, as `tuitrain resume --checkpoint` takes."""
        from tuitrain.remote.run_mirror import mirrored_run

        super().__init__()
        self.run_dir = Path(run_dir)
        self.elsewhere = mirrored_run(self.run_dir)  # (host, run id) of another workstation's run
        self.checkpoint = checkpoint
        self.initial = " ".join(shlex.quote(o) for o in overrides)
        self.busy = False
        self._checks = 0
        self.problems: list[str] = []
        self.chosen: Checkpoint | None = None  # the checkpoint found, once found

    def compose(self) -> ComposeResult:
        with Vertical():
            on = f" on {self.elsewhere[0]}" if self.elsewhere else ""
            yield Words(f"Resume run {self.run_dir.name}{on}", id="resume-title")
            yield Words("finding the checkpoint…", id="checkpoint")
            yield Words("Overrides, like --set (section.key=value, space separated):", classes="hint")
            yield Field(self.initial, placeholder="section.key=value …", id="resume-set")
            yield Words("", id="resume-problems")
            with Horizontal(classes="buttons"):
                yield Button("Resume", variant="primary", id="resume")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#resume-set", Input).focus()
        self._find_checkpoint()
        self.check(self.initial)

    def overrides(self) -> list[str]:
        return split_overrides(self.query_one("#resume-set", Input).value)

    @work(thread=True, group="resume-checkpoint", exit_on_error=False)
    def _find_checkpoint(self) -> None:
        from tuitrain.rundir.layout import RunPaths
        from tuitrain.rundir.record import read_record
        from tuitrain.runs.start.from_profile import choose_checkpoint

        if self.elsewhere is not None:
            self.app.call_from_thread(self._show_checkpoint, self._box_checkpoint_line(*self.elsewhere))
            return
        try:
            chosen = choose_checkpoint(read_record(RunPaths(self.run_dir)), self.checkpoint)
        except (TuitrainError, OSError, KeyError) as exc:  # said in the dialog, where the checkpoint would be
            self.app.call_from_thread(self._show_checkpoint, Text(str(exc), style="red"))
            return
        self.app.call_from_thread(self._show_checkpoint, Text.assemble(
            "from ", (chosen.path.name, "bold"), f" (step {chosen.step}): the new run starts at step {chosen.step + 1}  ",
            (self.app.show_path(chosen.path), "dim")), chosen)

    def _box_checkpoint_line(self, host: str, run_id: str) -> Text:
        from tuitrain.remote.run_mirror import read_checkpoints
        from tuitrain.rundir.checkpoints import checkpoints_from_json

        chosen = box_checkpoint(checkpoints_from_json(read_checkpoints(self.run_dir)), self.checkpoint)
        if chosen is None:
            return Text(f"from {Path(self.checkpoint).name}, as {host} finds it: a new run starts there")
        return Text.assemble("from ", (chosen.path.name, "bold"), f" (step {chosen.step}): a new run starts on {host} "
                             f"at step {chosen.step + 1}; the overrides are checked there  ", (str(chosen.path), "dim"))

    def _show_checkpoint(self, text: Text, chosen: Checkpoint | None = None) -> None:
        self.query_one("#checkpoint", Static).update(text)
        if chosen is not None:
            self.chosen = chosen
            # an example resume accepts: more steps than the checkpoint has (as nothing_left's fix suggests)
            self.query_one("#resume-set", Input).placeholder = f"training.max_steps={chosen.step * 2}"
            self.check(self.query_one("#resume-set", Input).value)  # again, against it

    @on(Input.Changed, "#resume-set")
    def _changed(self, event: Input.Changed) -> None:
        self.check(event.value)

    def check(self, value: str) -> None:
        """Validate again in a worker; only the latest answer is shown. Another workstation's run's overrides are
        checked by its box as it resumes (its profile's data paths are there, not here)."""
        self._checks += 1
        if self.elsewhere is not None:
            return
        self._validate(split_overrides(value), self._checks, self.chosen)

    @work(thread=True, group="resume-check", exit_on_error=False)
    def _validate(self, overrides: list[str], number: int, chosen: Checkpoint | None) -> None:
        from tuitrain.rundir.layout import RunPaths

        problems = override_problems(RunPaths(self.run_dir).profile, overrides, chosen)
        self.app.call_from_thread(self._show_problems, problems, number)

    def _show_problems(self, problems: list[str], number: int) -> None:
        if number != self._checks:
            return
        self.problems = problems
        self.query_one("#resume-problems", Static).update(problem_lines(problems))

    @on(Input.Submitted, "#resume-set")
    @on(Button.Pressed, "#resume")
    def action_resume(self) -> None:
        if not self.busy:
            self.busy = True
            self.query_one("#resume-problems", Static).update("starting…")
            self.start(self.overrides())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @work(thread=True, exclusive=True, group="resume", exit_on_error=False)
    def start(self, overrides: list[str]) -> None:
        """Checked once more as the CLI checks them, then the run's own backend resumes it, as `tuitrain resume`
        does (a Slurm run is submitted again; a run on several machines starts on them)."""
        from tuitrain.rundir.layout import RunPaths
        from tuitrain.tui.actions import resume_here

        if self.elsewhere is not None:
            self._start_there(*self.elsewhere, overrides)
            return
        problems = override_problems(RunPaths(self.run_dir).profile, overrides)
        if problems:
            self.app.call_from_thread(self._failed, problems)
            return
        new_dir, said = resume_here(self.run_dir, self.app.runs_root, self.checkpoint, overrides, self.app.cwd)
        if new_dir is None:
            self.app.call_from_thread(self._failed, said.splitlines())
            return
        self.app.call_from_thread(self._started, str(new_dir), said)

    def _start_there(self, host: str, run_id: str, overrides: list[str]) -> None:
        from tuitrain.tui.actions import remote_resume

        new_dir, said = remote_resume(host, run_id, self.checkpoint, overrides)
        if new_dir is None:
            self.app.call_from_thread(self._failed, [said])
            return
        self.app.call_from_thread(self._started, str(new_dir), said)

    def _failed(self, problems: list[str]) -> None:
        self.busy = False
        self.problems = problems
        self.query_one("#resume-problems", Static).update("not started:\n" + problem_lines(problems))

    def _started(self, run_dir: str, note: str) -> None:
        self.dismiss(None)
        self.app.post_message(RunStarted(run_dir, note))

