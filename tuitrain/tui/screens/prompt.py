"""Ask for one line of text (a file name, say), optionally saying beneath it what the answer
would do ("writes profiles/x.toml") as it is typed."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.words import Words


class PromptScreen(QuitSafe, ModalScreen[str | None]):
    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 76; max-width: 95%; height: auto; border: thick $primary; background: $surface; padding: 0 1;
    }
    PromptScreen Static { height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", describe: Callable[[str], str] | None = None) -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.describe = describe

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Words(self.question)
            yield Field(self.value, id="answer")
            if self.describe is not None:
                yield Words(self.describe(self.value), id="outcome")
            yield Words(Text("enter: ok · escape: cancel", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#answer", Input).focus()

    @on(Input.Changed, "#answer")
    def _typed(self, event: Input.Changed) -> None:
        if self.describe is not None:
            self.query_one("#outcome", Static).update(self.describe(event.value))

    @on(Input.Submitted, "#answer")
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
