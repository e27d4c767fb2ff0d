"""Where every rank of a live run is: its stacks, all threads, taken as `tuitrain stacks` takes them
(tuitrain.runs.stacks.gather, in a worker) and shown as the digest, then each rank's main thread."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from tuitrain.runs.layout import RunPaths


def stacks_text(digest: list[str], blocks: list[list[str]], folder: Path) -> Text:
    """The digest first (one line a group of ranks, those elsewhere first), then each rank's block."""
    out = Text()
    out.append("digest\n", style="bold")
    for line in digest:
        out.append(f"  {line}\n", style="yellow")
    for block in blocks:
        out.append("\n")
        out.append(block[0] + "\n", style="bold")
        out.append("\n".join(block[2:]) + "\n")
    out.append(f"\nevery thread of each rank: {folder}/rank-K.txt", style="dim")
    return out


class StacksScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    StacksScreen { align: center middle; }
    StacksScreen > Vertical {
        width: 95%; max-width: 140; height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    StacksScreen #stacks-title { text-style: bold; height: auto; }
    StacksScreen #stacks { height: auto; }
    """
    BINDINGS = [Binding("escape", "close", "Close"), Binding("r", "take", "Take again")]

    class Taken(Message):
        """The worker's result: the text to show (the stacks, or why none could be taken)."""

        def __init__(self, text: Text, ok: bool) -> None:
            super().__init__()
            self.text = text
            self.ok = ok

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.paths = RunPaths(Path(run_dir))
        self.taking = False
        self.shown = ""  # the plain text on screen, for tests and copying

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Stacks of run {self.paths.id}  [dim]r: take again · escape: close[/]", id="stacks-title")
            with VerticalScroll(id="stacks-box"):
                yield Static("", id="stacks")

    def on_mount(self) -> None:
        self.query_one("#stacks-box").focus()
        self.action_take()

    def action_take(self) -> None:
        if self.taking:
            return
        self.taking = True
        self.query_one("#stacks", Static).update("taking every rank's stacks (each rank has a few seconds to answer)…")
        self.take()

    @work(thread=True, exclusive=True, group="stacks", exit_on_error=False)
    def take(self) -> None:
        from tuitrain.runs.catalog import load_record
        from tuitrain.runs.record import RunRecordError
        from tuitrain.runs.stacks import StacksError, gather, rank_block

        try:
            taken, summary = gather(self.paths, load_record(self.paths))
        except (StacksError, RunRecordError, OSError) as exc:
            self.post_message(self.Taken(Text(str(exc), style="red"), ok=False))
            return
        blocks = [rank_block(s, summary["ranks"][str(r)]) for r, s in taken.items()]
        self.post_message(self.Taken(stacks_text(summary["lines"], blocks, self.paths.stacks), ok=True))

    def on_stacks_screen_taken(self, message: Taken) -> None:
        self.taking = False
        self.shown = message.text.plain
        self.query_one("#stacks", Static).update(message.text)

    def action_close(self) -> None:
        self.dismiss(None)
