"""Where every rank of a live run is: its stacks, all threads, taken as `tuitrain stacks` takes them
(tuitrain.runs.view.stacks.gather, in a worker) and shown as the digest, then each rank's main thread, or with `a`
every thread (`tuitrain stacks --all-threads`). Another workstation's run (its mirror here) is asked there,
`tuitrain stacks RUN --json` on its box, and drawn the same."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import Static

from tuitrain.errors import TuitrainError
from tuitrain.rundir.layout import RunPaths
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from tuitrain.runs.view.stacks import RankStacks

REMOTE_STACKS_SECONDS = 60.0  # ssh, then the box's ranks' answers (as runs.view.stacks.MACHINE_SECONDS)


@dataclass(frozen=True)
class Stacks:
    """What was taken: the digest's lines, each rank's stacks and where it is, and where the files keep them."""

    digest: list[str]
    taken: Mapping[int, RankStacks]
    where: Mapping[int, str]
    files: str


def stacks_text(stacks: Stacks, all_threads: bool = False) -> Text:
    """The digest first (one line a group of ranks, those elsewhere first), then each rank's block: its main thread
    (runs.view.stacks.rank_block), or every thread (threads_block, as `tuitrain stacks --all-threads`)."""
    from tuitrain.runs.view.stacks import rank_block, threads_block

    block_of = threads_block if all_threads else rank_block
    out = Text()
    out.append("digest\n", style="bold")
    for line in stacks.digest:
        out.append(f"  {line}\n", style="yellow")
    for rank, taken in stacks.taken.items():
        block = block_of(taken, stacks.where[rank])
        out.append("\n")
        out.append(block[0] + "\n", style="bold")
        out.append("\n".join(block[2:]) + "\n")
    out.append(f"\nevery thread of each rank: {stacks.files}", style="dim")
    return out


def remote_stacks(host: str, answer: str) -> Stacks | str:
    """What another workstation's `tuitrain stacks RUN --json` answered, as a run of this machine's is taken; a
    reply that is no such JSON is one line naming the host."""
    from tuitrain.runs.view.stacks_json import ranks_from_json, read_stacks_json

    try:
        data = read_stacks_json(json.loads(answer))
    except (ValueError, RecursionError) as exc:
        return f"{host}: `tuitrain stacks --json` there printed no stacks JSON this tuitrain reads ({exc})"
    taken, where = ranks_from_json(data["ranks"])
    files = [file for entry in data["ranks"].values() if (file := entry.get("file"))]
    folder = f"{Path(files[0]).parent}/rank-K.txt on {host}" if files else f"the run's stacks/ folder on {host}"
    return Stacks(data["digest"], taken, where, folder)


class StacksScreen(PassesFailedWorkUp, QuitSafe, ModalScreen[None]):
    DEFAULT_CSS = """
    StacksScreen { align: center middle; }
    StacksScreen > Vertical {
        width: 95%; max-width: 140; height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    StacksScreen #stacks-title { text-style: bold; height: auto; }
    StacksScreen #stacks { height: auto; }
    """
    BINDINGS = [Binding("escape", "close", "Close"), Binding("r", "take", "Take again"),
                Binding("a", "all_threads", "All threads", tooltip="Every thread of each rank, every frame, or the "
                        "main threads again (tuitrain stacks --all-threads)")]

    # the latest taken (a retake that finds the same stacks still replaces "taking…"), and whether every thread shows
    stacks: var[Stacks | str | None] = var(None, always_update=True, init=False)
    all_threads = var(False, init=False)

    class Taken(Message):
        """The worker's result: the stacks, or why none could be taken (one line)."""

        def __init__(self, stacks: Stacks | str) -> None:
            super().__init__()
            self.stacks = stacks

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
            yield Words(Text.assemble(f"Stacks of run {self.paths.id}{on}  ",
                                      ("r: take again · a: all threads · escape: close", "dim")), id="stacks-title")
            with VerticalScroll(id="stacks-box"):
                yield Words("", id="stacks")

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
            self.post_message(self.Taken(take_there(*self.elsewhere)))
            return
        from tuitrain.backends import for_run
        from tuitrain.runs.catalog import load_record
        from tuitrain.runs.view.stacks import gather

        try:
            record = load_record(self.paths)
            taken, summary = gather(self.paths, record, for_run(record).take_stacks)
        except (TuitrainError, OSError) as exc:  # said in the screen, in place of the stacks
            self.post_message(self.Taken(str(exc)))
            return
        where = {rank: summary["ranks"][str(rank)] for rank in taken}
        self.post_message(self.Taken(Stacks(summary["lines"], taken, where, f"{self.paths.stacks}/rank-K.txt")))

    def on_stacks_screen_taken(self, message: Taken) -> None:
        self.taking = False
        self.stacks = message.stacks

    def action_all_threads(self) -> None:
        """Every thread of each rank, or each rank's main thread again: the stacks taken, drawn again."""
        self.all_threads = not self.all_threads

    def show(self) -> None:
        if self.stacks is None:
            return
        text = (Text(self.stacks, style="red") if isinstance(self.stacks, str)
                else stacks_text(self.stacks, self.all_threads))
        self.shown = text.plain
        self.query_one("#stacks", Static).update(text)

    watch_stacks = watch_all_threads = show

    def action_close(self) -> None:
        self.dismiss(None)


def take_there(host: str, run_id: str) -> Stacks | str:
    """Another workstation's run's stacks, taken there by its tuitrain (`tuitrain stacks RUN --json` through the
    workstation's python and runs folder); why not in one line."""
    from tuitrain.remote.workstations import find, problem_line, run_on, workstations
    from tuitrain.user_config import UserConfigError

    try:
        station = find(host, workstations())
    except UserConfigError as exc:
        return str(exc)
    done = run_on(station, ["stacks", run_id, "--json"], REMOTE_STACKS_SECONDS)
    return problem_line(station, done) or remote_stacks(host, done.stdout)
