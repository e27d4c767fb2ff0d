"""Help: the keys of the screen underneath, and the ones that work everywhere."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen

from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.words import Words

GLOBAL_KEYS = (
    ("ctrl+p", "command palette: every action by name"),
    ("?", "this help"),
    ("g", "GPUs: every process on every GPU of this machine"),
    ("Q", "queues: this machine's and each workstation's (tuitrain queue --all-hosts)"),
    ("q", "quit (runs go on)"),
    ("tab / shift+tab", "move between panes"),
)


class HelpScreen(QuitSafe, ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 72; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 1), expand=True)
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for binding in getattr(self.under, "BINDINGS", []):
            if isinstance(binding, Binding) and binding.description:
                key = binding.key_display or binding.key.replace(",", " / ")
                table.add_row(Text(key), Text(getattr(binding, "tooltip", "") or binding.description))
        table.add_row("", "")
        for key, what in GLOBAL_KEYS:
            table.add_row(Text(key), Text(what))
        title = getattr(self.under, "HELP_TITLE", type(self.under).__name__.removesuffix("Screen"))
        with VerticalScroll():
            yield Words(Text.assemble((f"{title}: keys", "bold"), "  ", ("(escape closes)", "dim")))
            yield Words(table)

    def action_close(self) -> None:
        self.dismiss(None)
