"""Export a checkpoint's model: which one (the best, the last, the one selected) and where to
(prefilled `<output_dir>/export-<step>`). The export itself is `tuitrain export` in a child
process (it needs torch, which the app never imports), run by the monitor in a worker; for another
workstation's run, `tuitrain export HOST:RUN OUT`, which exports there into a folder of that box."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, RadioButton, RadioSet, Static

from tuitrain.tui.plain import plain
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.tui.app_api import TuitrainAppApi


@dataclass(frozen=True)
class ExportChoice:
    """One checkpoint the dialog offers: `kind` is best, last or selected."""

    kind: str
    path: Path
    step: int


@dataclass(frozen=True)
class ExportRequest:
    checkpoint: Path
    out: Path


def default_folder(output_dir: Path, step: int) -> Path:
    return output_dir / f"export-{step}"


def export_command(runs_root: Path, run_id: str, request: ExportRequest) -> list[str]:
    """`tuitrain export RUN OUT --checkpoint PATH` as an argv for this interpreter."""
    return [sys.executable, "-m", "tuitrain", "export", "--runs-dir", str(runs_root), run_id, str(request.out),
            "--checkpoint", str(request.checkpoint)]


def run_export(runs_root: Path, run_id: str, request: ExportRequest) -> tuple[bool, str]:
    """Run the export; (done, one line): where the model is, or why it is not there."""
    result = subprocess.run(export_command(runs_root, run_id, request), capture_output=True, text=True)
    if result.returncode == 0:
        lines = result.stdout.strip().splitlines()
        return True, lines[-1] if lines else f"{request.out}: exported"
    errors = [line.removeprefix("tuitrain: error: ") for line in result.stderr.splitlines()
              if line.startswith("tuitrain: error: ")]
    tail = result.stderr.strip().splitlines()
    return False, errors[0] if errors else (tail[-1] if tail else f"exit {result.returncode}")


class Choice(RadioButton):
    """A radio button whose mark says on or off without colour: ● chosen, ○ not (Textual draws ● in both)."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # the name ToggleButton draws its mark from
        return "●" if self.value else "○"


class ExportScreen(QuitSafe, ModalScreen[ExportRequest | None]):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical {
        width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    ExportScreen #export-title { text-style: bold; height: auto; }
    ExportScreen RadioSet { width: 100%; }
    ExportScreen #export-problem { height: auto; color: $text-error; }
    ExportScreen .buttons { height: 3; align-horizontal: right; }
    ExportScreen Button { margin-left: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    LABELS = {"best": "the best", "last": "the last", "selected": "the selected"}

    def __init__(self, run_id: str, output_dir: Path, choices: list[ExportChoice], host: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.host = host  # another workstation's run: its paths are that box's, checked there
        self.output_dir = Path(output_dir)
        self.choices = choices
        self.chosen = choices[0]
        self._prefilled = str(default_folder(self.output_dir, self.chosen.step))

    def compose(self) -> ComposeResult:
        with Vertical():
            on = f" on {self.host}" if self.host else ""
            yield Words(f"Export a model of run {self.run_id}{on}", id="export-title")
            with RadioSet(id="export-which"):
                for i, choice in enumerate(self.choices):
                    label = f"{self.LABELS[choice.kind]}: {choice.path.name} (step {choice.step})"
                    yield Choice(plain(label), value=i == 0, id=f"export-{choice.kind}")
            yield Words(f"Into the folder on {self.host} (new or empty; a relative path is from your home there):"
                        if self.host else "Into the folder (new or empty):", classes="hint")
            yield Field(self._prefilled, id="export-out")
            yield Words("", id="export-problem")
            with Horizontal(classes="buttons"):
                yield Button("Export", variant="primary", id="export")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#export-out", Input).focus()

    @on(RadioSet.Changed, "#export-which")
    def _picked(self, event: RadioSet.Changed) -> None:
        self.chosen = self.choices[event.index]
        field = self.query_one("#export-out", Input)
        if field.value == self._prefilled:  # a folder the user typed is kept
            self._prefilled = field.value = str(default_folder(self.output_dir, self.chosen.step))

    def pick(self, kind: str) -> None:
        """Choose the checkpoint of `kind` (best, last, selected), as a click on its button does."""
        self.query_one(f"#export-{kind}", Choice).value = True

    @on(Input.Submitted, "#export-out")
    @on(Button.Pressed, "#export")
    def action_export(self) -> None:
        raw = self.query_one("#export-out", Input).value.strip()
        if not raw:
            self.query_one("#export-problem", Static).update(Text("give a folder to export into"))
            return
        if self.host:  # a folder of that box: `tuitrain export` there reads it and refuses it in one line
            self.dismiss(ExportRequest(self.chosen.path, Path(raw)))
            return
        out = Path(raw).expanduser()
        out = out if out.is_absolute() else self.app.cwd / out  # as `tuitrain export` reads it
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            self.query_one("#export-problem", Static).update(
                Text(f"{out} already exists and is not an empty folder; give a new folder to export into"))
            return
        self.dismiss(ExportRequest(self.chosen.path, out))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
