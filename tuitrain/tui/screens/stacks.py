"""Where every rank of a live run is: its stacks, all threads, taken as `tuitrain stacks` takes them
(tuitrain.runs.view.stacks.gather, in a worker) and shown as the digest, then each rank's main thread. Another
workstation's run (its mirror here) is asked there, `tuitrain stacks RUN --json` on its box, and drawn the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from tuitrain.errors import TuitrainError
from tuitrain.rundir.layout import RunPaths
from tuitrain.tui.failed_work import PassesFailedWorkUp

if TYPE_CHECKING:
    pass

REMOTE_STACKS_SECONDS = 60.0  # ssh, then the box's ranks' answers (as runs.view.stacks.MACHINE_SECONDS)


def stacks_text(digest: list[str], blocks: list[list[str]], files: str) -> Text:
    """The digest first (one line a group of ranks, those elsewhere first), then each rank's block; `files` says
    where every thread of each rank is kept."""
    out = Text()
    out.append("digest\n", style="bold")
    for line in digest:
        out.append(f"  {line}\n", style="yellow")
    for block in blocks:
        out.append("\n")
        out.append(block[0] + "\n", style="bold")
        out.append("\n".join(block[2:]) + "\n")
    out.append(f"\nevery thread of each rank: {files}", style="dim")
    return out


def remote_stacks_text(host: str, answer: str) -> tuple[Text, bool]:
    """What another workstation's `tuitrain stacks RUN --json` answered, drawn as a run of this machine's is; a
    reply that is no such JSON is one line naming the host."""
    from tuitrain.runs.view.stacks import rank_block
    from tuitrain.runs.view.stacks_json import ranks_from_json

    try:
        data = json.loads(answer)
        taken, where = ranks_from_json(data["ranks"])
        digest = [str(line) for line in data["digest"]]
    except (ValueError, KeyError, TypeError, IndexError):
        return Text(f"{host}: `tuitrain stacks --json` there printed no stacks JSON (another tuitrain version?)",
                    style="red"), False
    files = [entry["file"] for entry in data["ranks"].values() if entry.get("file")]
    folder = f"{Path(files[0]).parent}/rank-K.txt on {host}" if files else f"the run's stacks/ folder on {host}"
    return stacks_text(digest, [rank_block(s, where[r]) for r, s in taken.items()], folder), True


class StacksScreen(PassesFailedWorkUp, ModalScreen[None]):
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
        from tuitrain.remote.run_mirror import mirrored_run

        super().__init__()
        self.paths = RunPaths(Path(run_dir))
        self.elsewhere = mirrored_run(self.paths.root)  # (host, run id) of another workstation's run
        self.taking = False
        self.shown = ""  # the plain text on screen, for tests and copying

    def compose(self) -> ComposeResult:
        with Vertical():
            on = f" on {self.elsewhere[0]}" if self.elsewhere else ""
            yield Static(f"Stacks of run {self.paths.id}{on}  [dim]r: take again · escape: close[/]", id="stacks-title")
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
        if self.elsewhere is not None:
            self.post_message(self.Taken(*take_there(*self.elsewhere)))
            return
        from tuitrain.backends import for_run
        from tuitrain.runs.catalog import load_record
        from tuitrain.runs.view.stacks import gather, rank_block

        try:
            record = load_record(self.paths)
            taken, summary = gather(self.paths, record, for_run(record).take_stacks)
        except (TuitrainError, OSError) as exc:  # said in the screen, in place of the stacks
            self.post_message(self.Taken(Text(str(exc), style="red"), ok=False))
            return
        blocks = [rank_block(s, summary["ranks"][str(r)]) for r, s in taken.items()]
        self.post_message(self.Taken(stacks_text(summary["lines"], blocks, f"{self.paths.stacks}/rank-K.txt"),
                                     ok=True))

    def on_stacks_screen_taken(self, message: Taken) -> None:
        self.taking = False
        self.shown = message.text.plain
        self.query_one("#stacks", Static).update(message.text)

    def action_close(self) -> None:
        self.dismiss(None)


def take_there(host: str, run_id: str) -> tuple[Text, bool]:
    """Another workstation's run's stacks, taken there by its tuitrain (`tuitrain stacks RUN --json` through the
    workstation's python and runs folder); why not in one line."""
    from tuitrain.remote.workstations import find, problem_line, run_on, workstations
    from tuitrain.user_config import UserConfigError

    try:
        station = find(host, workstations())
    except UserConfigError as exc:
        return Text(str(exc), style="red"), False
    done = run_on(station, ["stacks", run_id, "--json"], REMOTE_STACKS_SECONDS)
    problem = problem_line(station, done)
    if problem:
        return Text(problem, style="red"), False
    return remote_stacks_text(host, done.stdout)
