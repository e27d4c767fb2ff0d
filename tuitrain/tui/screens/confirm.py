"""Yes or no, before something that cannot be undone."""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button

from tuitrain.tui.plain import plain
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.words import Words


class ConfirmScreen(QuitSafe, ModalScreen[bool]):
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


# A request that cannot be taken back asks once, the same words wherever its key is. Asked rather than undoable: a run
# acts on a stop at its next step end, often within a second, and a stopped run only goes on as a new run.
QUESTIONS = {
    "stop": ("Stop", "Stop run {run}?\nIt saves a checkpoint at the next step end, then ends (R resumes it from there)."),
    "terminate": ("Kill", "Kill run {run}?\nEvery process ends now: no checkpoint is saved (SIGTERM, then SIGKILL)."),
    "cancel": ("Drop it", "Drop queued run {run} from the queue?\nIt never starts; its folder stays."),
}


def ask_first(app: Any, what: str, run_id: str, then: Callable[[], object]) -> None:
    """Ask before `what` (a QUESTIONS key) is done to run `run_id`: `y` does it (`then`); `n`, escape and enter (No has
    the focus) do not."""
    yes, question = QUESTIONS[what]

    def answered(answer: bool | None) -> None:
        if answer:
            then()

    app.push_screen(ConfirmScreen(question.format(run=run_id), yes=yes), answered)
