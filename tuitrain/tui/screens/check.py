"""Check a profile without starting anything: what `tuitrain validate` says of it on this machine, or with
`--offline` the profile alone (one meant for another machine), and what `tuitrain doctor` says of the machines of a
multi-machine profile. Worked out in a worker by `backends.checks`, the same lines and verdict as the command's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.backends.checks import Said
    from tuitrain.tui.app_api import TuitrainAppApi

COMMANDS = {"here": "validate", "offline": "validate --offline", "doctor": "doctor"}  # mode → the command it is


class CheckScreen(QuitSafe, ModalScreen[None]):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    DEFAULT_CSS = """
    CheckScreen { align: center middle; }
    CheckScreen > Vertical {
        width: 95%; max-width: 130; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    CheckScreen #check-title { text-style: bold; height: auto; }
    CheckScreen #check-keys { color: $text-muted; height: auto; }
    CheckScreen #check-box { height: auto; }
    """
    BINDINGS = [Binding("escape", "close", "Close"),
                Binding("v", "check('here')", "Validate", tooltip="Every problem `tuitrain run` would refuse for, "
                        "checked on this machine (tuitrain validate)"),
                Binding("o", "check('offline')", "Offline", tooltip="The profile alone, not checked against this "
                        "machine: for a profile meant for another one (tuitrain validate --offline)"),
                Binding("d", "check('doctor')", "Doctor", tooltip="Reach every machine of a multi-machine profile "
                        "over ssh and check it before a launch (tuitrain doctor)")]

    def __init__(self, path: Path, overrides: Sequence[str] = (), mode: str = "here") -> None:
        super().__init__()
        self.path = Path(path)
        self.overrides = list(overrides)
        self.mode = mode
        self._checks = 0
        self.shown = ""  # the plain text on screen, for tests and copying

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Words("", id="check-title")
            yield Words("v: validate here · o: --offline · d: the doctor · escape: close", id="check-keys")
            with VerticalScroll(id="check-box"):
                yield Words("", id="check-lines")

    def on_mount(self) -> None:
        self.action_check(self.mode)

    def action_check(self, mode: str) -> None:
        """Check again as `mode` says (here, offline, doctor); only the latest check's answer is shown."""
        self.mode = mode
        self._checks += 1
        sets = "".join(f" --set {o}" for o in self.overrides)
        self.query_one("#check-title", Static).update(Text(f"tuitrain {COMMANDS[mode]} {self.path.name}{sets}"))
        waiting = "reaching every machine over ssh…" if mode == "doctor" else "checking…"
        self.query_one("#check-lines", Static).update(Text(waiting, style="dim"))
        self.shown = ""
        self.check(mode, self._checks)

    @work(thread=True, group="check", exit_on_error=False)
    def check(self, mode: str, number: int) -> None:
        from tuitrain.backends.checks import Said, doctor, validation
        from tuitrain.errors import TuitrainError, error_lines

        try:
            if mode == "doctor":
                said = doctor(self.path, self.overrides, self.app.runs_root)
            else:
                said = validation(self.path, self.overrides, self.app.runs_root, mode == "offline", self.app.hardware)
        except (TuitrainError, OSError) as exc:  # said in the screen, in place of the check's lines
            lines = error_lines(exc)
            said = Said(tuple(lines[:-1]), lines[-1], ok=False)
        self.app.call_from_thread(self._show, said, number)

    def _show(self, said: Said, number: int) -> None:
        if number != self._checks:
            return
        out = Text()
        for line in said.lines:
            out.append(line + "\n")
        out.append(said.verdict, style="bold green" if said.ok else "bold red")
        self.shown = out.plain
        self.query_one("#check-lines", Static).update(out)

    def action_close(self) -> None:
        self.dismiss(None)
