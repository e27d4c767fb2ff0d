"""Yes or no, before something that cannot be undone."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button

from tuitrain.tui.plain import plain
from tuitrain.tui.widgets.words import Words


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 60; max-width: 95%; height: auto; border: thick $error; background: $surface; padding: 0 1;
    }
    ConfirmScreen #question { height: auto; margin-bottom: 1; }
    ConfirmScreen Horizontal { height: 3; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 1; }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Words(self.question, id="question")
            with Horizontal():
                yield Button(plain(f"{self.yes} (y)"), variant="error", id="yes")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
