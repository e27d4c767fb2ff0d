"""Every machine's queue, as `tuitrain queue --all-hosts` prints it: this machine's (runs.queue.look: each waiting
run in order and what it waits for, a sweep's runs as one line, the runs that hold GPUs, damaged entries), then
what each workstation of the settings answers to `tuitrain queue` (remote.workstations.answers_everywhere), or why
it did not, in one line. Read in a worker; `e` lists a sweep's runs each on its line (`--expand`), `r` reads again."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Static

from tuitrain.errors import TuitrainError
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.text_line import TextLine
from tuitrain.tui.widgets.words import Words


@dataclass(frozen=True)
class QueueBlock:
    """One machine's queue: its heading (`local`, or the host), and its lines or why it did not answer."""

    heading: str
    lines: tuple[str, ...]
    problem: str | None = None


def read_queues(expand: bool) -> list[QueueBlock]:
    """This machine's queue, then each workstation's (asked at once; a bad settings file is this machine's line)."""
    from tuitrain.remote.workstations import LOCAL, answers_everywhere, workstations
    from tuitrain.runs.queue.look import queue_report, report_lines

    blocks = [QueueBlock(LOCAL, tuple(report_lines(queue_report(), expand)))]
    try:
        stations = workstations()
    except TuitrainError as exc:
        return [*blocks, QueueBlock("workstations", (), str(exc))]
    asked = ["queue", "--expand"] if expand else ["queue"]
    return blocks + [QueueBlock(host, tuple(out.rstrip("\n").splitlines()), problem)
                     for host, problem, out in answers_everywhere(stations, asked)]


def queues_text(blocks: list[QueueBlock]) -> Text:
    out = Text()
    for block in blocks:
        out.append(f"== {block.heading}\n", style="bold")
        if block.problem is not None:
            out.append(block.problem + "\n", style="red")
        for line in block.lines:
            out.append(line + "\n")
        out.append("\n")
    return out


class QueueScreen(PassesFailedWorkUp, QuitSafe, Screen[None]):
    DEFAULT_CSS = """
    QueueScreen #queue-box { padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "back", "Back", tooltip="Back to the screen before"),
                Binding("r", "read", "Read again", tooltip="Read every machine's queue again"),
                Binding("e", "expand", "Expand sweeps", tooltip="Each run of a sweep on its own line, or a sweep as "
                        "one line again (tuitrain queue --expand)")]

    expand = var(False, init=False)  # each run of a sweep on its own line; a change reads the queues again

    class Read(Message):
        def __init__(self, blocks: list[QueueBlock], number: int) -> None:
            super().__init__()
            self.blocks = blocks
            self.number = number

    def __init__(self) -> None:
        super().__init__()
        self._reads = 0
        self.blocks: list[QueueBlock] = []
        self.shown = ""  # the plain text on screen, for tests and copying

    def compose(self) -> ComposeResult:
        yield TextLine("Queues: this machine's, then each workstation's (tuitrain queue --all-hosts)",
                       classes="title-bar", id="queue-title")
        with VerticalScroll(id="queue-box"):
            yield Words("", id="queues")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#queue-box").focus()
        self.action_read()

    def action_read(self) -> None:
        self._reads += 1
        self.query_one("#queues", Static).update(Text("reading every machine's queue…", style="dim"))
        self.shown = ""
        self.read(self.expand, self._reads)

    watch_expand = action_read

    @work(thread=True, group="queues", exit_on_error=False)
    def read(self, expand: bool, number: int) -> None:
        self.post_message(self.Read(read_queues(expand), number))

    def on_queue_screen_read(self, message: Read) -> None:
        if message.number != self._reads:  # an older read, overtaken
            return
        self.blocks = message.blocks
        text = queues_text(message.blocks)
        self.shown = text.plain
        self.query_one("#queues", Static).update(text)

    def action_expand(self) -> None:
        self.expand = not self.expand

    def action_back(self) -> None:
        self.app.pop_screen()
