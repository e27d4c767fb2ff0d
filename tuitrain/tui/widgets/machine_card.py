"""One [[distributed.machines]] table in the profile editor: its place (the first machine is the main
machine, rank 0), buttons (and keys) to move it earlier or later or remove it, its fields (FieldRows
the screen builds, so the validator's words land beside them as elsewhere), and the validator's words
about the machine as a whole. It edits nothing itself: it asks the screen (Move, Remove)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Static

from tuitrain.tui.widgets.field_row import FieldRow
from tuitrain.tui.widgets.words import Words


def machine_title(index: int) -> str:
    """'machine 0 · main machine (rank 0)', 'machine 1 (rank 1)'."""
    if index == 0:
        return "machine 0 · main machine (rank 0): the others meet it at main_process_ip:main_process_port"
    return f"machine {index} (rank {index})"


class MachineCard(Vertical):
    DEFAULT_CSS = """
    MachineCard { height: auto; margin: 1 1 0 1; padding: 0 0 0 1; border-left: outer $primary-muted; }
    MachineCard.-main { border-left: outer $accent; }
    MachineCard > .machine-head { height: auto; }
    MachineCard .machine-title { width: 1fr; text-style: bold; }
    MachineCard.-main .machine-title { color: $text-accent; }
    MachineCard .machine-head Button { margin-left: 1; }
    MachineCard .machine-error { color: $text-error; height: auto; }
    MachineCard .machine-error.-empty { display: none; }
    """
    BINDINGS = [
        Binding("alt+up", "move(-1)", "Machine earlier", tooltip="Move this machine earlier (the first is the main machine)"),
        Binding("alt+down", "move(1)", "Machine later", tooltip="Move this machine later"),
    ]

    class Move(Message):
        """Move machine `index` by `delta` places (-1 earlier, +1 later)."""

        def __init__(self, index: int, delta: int) -> None:
            super().__init__()
            self.index = index
            self.delta = delta

    class Remove(Message):
        """Remove machine `index`."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, index: int, count: int, rows: list[FieldRow], note: str = "") -> None:
        """`rows`: the machine's fields; `note`: a line for an item that is no table (its fields are then none)."""
        super().__init__(id=f"machine-{index}", classes="-main" if index == 0 else "")
        self.index = index
        self.count = count
        self.rows = rows
        self.note = note
        self._error = ""

    def compose(self) -> ComposeResult:
        with Horizontal(classes="machine-head"):
            yield Words(machine_title(self.index), classes="machine-title")
            yield Button("↑ earlier", classes="machine-up", compact=True, disabled=self.index == 0,
                         tooltip="Move this machine earlier (alt+up); the first is the main machine")
            yield Button("↓ later", classes="machine-down", compact=True, disabled=self.index == self.count - 1,
                         tooltip="Move this machine later (alt+down)")
            yield Button("remove", classes="machine-remove", compact=True, variant="error",
                         tooltip="Remove this machine from the profile")
        if self.note:
            yield Words(self.note, classes="hint")
        yield from self.rows
        yield Words(self._error, classes="machine-error" + ("" if self._error else " -empty"))

    def action_move(self, delta: int) -> None:
        self.post_message(self.Move(self.index, delta))

    @on(Button.Pressed, ".machine-up")
    def _up(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_move(-1)

    @on(Button.Pressed, ".machine-down")
    def _down(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_move(1)

    @on(Button.Pressed, ".machine-remove")
    def _remove(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.Remove(self.index))

    def set_error(self, message: str | None) -> None:
        """The validator's words about the machine as a whole (not about one of its fields); kept
        until the card is composed when it is not yet."""
        self._error = message or ""
        for error in self.query(".machine-error").results(Static):
            error.update(self._error)
            error.set_class(not self._error, "-empty")

    @property
    def error(self) -> str:
        return self._error
