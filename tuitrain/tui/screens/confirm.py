"""Yes or no, before something that cannot be undone."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 60; max-width: 95%; height: auto; border: thick $error; background: $surface; padding: 0 1;
    }
    ConfirmScreen #question-box { height: auto; max-height: 20; margin-bottom: 1; }
    ConfirmScreen #question { height: auto; }
    ConfirmScreen Horizontal { height: 3; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 1; }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str | Text, yes: str = "Yes") -> None:
        """`question`: a Text for words that hold brackets (run names, paths): never read as markup."""
        super().__init__()
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll(id="question-box"):  # a long list of runs scrolls; the buttons stay in view
                yield Static(self.question, id="question")
            with Horizontal():
                yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
