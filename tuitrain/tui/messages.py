"""Messages the app posts to itself (workers to the event loop). Widget messages live in the widgets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from tuitrain.runs.live import Change, RunRow


class RunsPolled(Message):
    """A poll of the runs root: every run (newest first) and what changed since the last poll."""

    def __init__(self, rows: list[RunRow], changes: list[Change]) -> None:
        super().__init__()
        self.rows = rows
        self.changes = changes


class HardwareSampled(Message):
    """One line about the machine: CPU, RAM, GPUs."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line


class RunStarted(Message):
    """A run was started from the app (a launch or a resume): open it."""

    def __init__(self, run_dir: str, note: str = "") -> None:
        super().__init__()
        self.run_dir = run_dir
        self.note = note
