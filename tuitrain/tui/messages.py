"""Messages the app posts to itself (workers to the event loop). Widget messages live in the widgets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from tuitrain.hardware.sampler import SampledView
    from tuitrain.runs.view.live import Change, RunRow
    from tuitrain.tui.run_table import HostRuns


class RunsPolled(Message):
    """A poll of the runs root: every run (newest first) and what changed since the last poll."""

    def __init__(self, rows: list[RunRow], changes: list[Change]) -> None:
        super().__init__()
        self.rows = rows
        self.changes = changes


class HardwareSampled(Message):
    """A sample of the machine: one line about it (CPU, RAM, GPUs) and the figures with history."""

    def __init__(self, line: str, view: SampledView | None = None) -> None:
        super().__init__()
        self.line = line
        self.view = view


class RunStarted(Message):
    """A run was started from the app (a launch or a resume): open it."""

    def __init__(self, run_dir: str, note: str = "") -> None:
        super().__init__()
        self.run_dir = run_dir
        self.note = note


class WorkstationsListed(Message):
    """The workstations of the user's settings, in order (Home shows a HOST column when there are any)."""

    def __init__(self, hosts: list[str]) -> None:
        super().__init__()
        self.hosts = hosts


class WorkstationHeard(Message):
    """One workstation's runs, or why it cannot be watched (from its stream's thread)."""

    def __init__(self, host: str, state: HostRuns) -> None:
        super().__init__()
        self.host = host
        self.state = state
