"""One line about the machine at the foot of Home (the text comes from `gpu_panel.strip_line`), then a short part
per other workstation whose GPUs its Home stream carries (`node1: 2 GPUs, 1 busy`): the strip keeps each box's
latest sample, told by that stream (`gpus_heard`, from the stream's thread). Its `HostGpus` message goes on up to
the app, which keeps each box's GPUs for every screen (`TuitrainAppApi.host_gpus`: the GPUs screen, a remote run's
monitor), so that no screen opens a connection of its own to a box Home already streams.

Each machine's GPUs' recent utilisation and memory follow its part as sparklines (`util ▁▃▅▇ ▂▂▂▂ mem ▅▅▅▅ ▁▁▁▁`:
one a GPU, in index order), in the room the words leave; the history is the app's (`tui.gpu_history`), handed down by
Home (`show_history`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message

from tuitrain.tui.widgets.text_line import TextLine

if TYPE_CHECKING:
    from tuitrain.hardware.report import GpuReport
    from tuitrain.tui.gpu_history import Trace
    from tuitrain.tui.workstation_streams import BoxGpus

SPARK_CELLS = 8  # at most, a sparkline on the strip
LEAST_CELLS = 2  # at least: less says nothing of a trend
HERE_FLOOR = 40  # this machine's line gives way to the history down to this (its CPU and RAM stay)


def host_part(host: str, report: GpuReport) -> str:
    """What the strip says of another box's GPUs: how many, and how many have a process on them."""
    gpus = report.gpus
    if not gpus:
        return f"{host}: no GPUs"
    busy = sum(1 for gpu in gpus if gpu.processes)
    return f"{host}: {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}, {busy} busy"


def history_words(gpus: int) -> int:
    """The cells of a history that are not sparklines: its two words, a space between GPUs."""
    return len("util ") + len(" mem ") + 2 * (gpus - 1)


def history_text(traces: Sequence[Trace], room: int | None) -> str:
    """'util ▁▃▅▇ ▂▂▂▂ mem ▅▅▅▅ ▁▁▁▁': each GPU's recent utilisation, then its memory in use, in at most `room` cells
    (None: any), each sparkline SPARK_CELLS wide at most; '' where no history is known or LEAST_CELLS do not fit."""
    from tuitrain.tui.widgets.gpu_panel import spark

    if not traces or not any(traces):
        return ""
    fixed = history_words(len(traces))
    cells = SPARK_CELLS if room is None else min(SPARK_CELLS, (room - fixed) // (2 * len(traces)))
    if cells < LEAST_CELLS:
        return ""
    util = " ".join(spark(t.utilization, 1.0, cells) for t in traces)
    memory = " ".join(spark(t.memory, 1.0, cells) for t in traces)
    return f"util {util} mem {memory}"


def strip_text(line: Text | str, hosts: Mapping[str, GpuReport], width: int | None = None,
               history: Mapping[str, Sequence[Trace]] | None = None) -> Text | str:
    """This machine's line, then each other box's part (in the order they were first heard), each followed by its
    GPUs' history (`history`: by host, this machine's under LOCAL) in the room the words leave, shared alike. In
    `width` cells, this machine's line gives way first (an ellipsis in it), so that every box's part shows."""
    from tuitrain.remote.workstations import LOCAL

    history = history or {}
    if not hosts and not history.get(LOCAL):
        return line
    parts = [(host, host_part(host, report)) for host, report in hosts.items()]
    words = sum(3 + len(part) for _, part in parts)
    here = line.copy() if isinstance(line, Text) else Text(line)
    if width is not None and here.cell_len + words > width and width - words > 1:
        here.truncate(width - words, overflow="ellipsis")
    least = {host: (3 if host == LOCAL else 1) + history_words(len(history[host])) + 2 * LEAST_CELLS * len(history[host])
             for host in (LOCAL, *hosts) if history.get(host)}  # the least each machine's history takes, with its separator
    budget = None if width is None else width - words - min(here.cell_len, HERE_FLOOR)
    drawn_for = []  # the machines whose history fits (this machine's first), at least at its least
    for host, cells in least.items():
        if budget is None or cells <= budget:
            drawn_for.append(host)
            budget = None if budget is None else budget - cells
    need = sum(least[host] for host in drawn_for)
    if width is not None and here.cell_len + words + need > width:
        here.truncate(max(HERE_FLOOR, width - words - need), overflow="ellipsis")
    rooms: dict[str, int | None] = dict.fromkeys(drawn_for)
    if width is not None and drawn_for:  # what is left over, shared by the number of GPUs
        spare = max(0, width - here.cell_len - words - need)
        gpus = sum(len(history[host]) for host in drawn_for)
        for host in drawn_for:
            rooms[host] = least[host] + spare * len(history[host]) // gpus - (3 if host == LOCAL else 1)

    def drawn(host: str) -> str:
        return history_text(history.get(host, ()), rooms.get(host)) if host in rooms else ""

    out = Text.assemble(here)
    if drawn(LOCAL):
        out.append(f" · {drawn(LOCAL)}")
    for host, part in parts:
        out.append(f" · {part}")
        if drawn(host):
            out.append(f" {drawn(host)}")
    return out if isinstance(line, Text) else out.plain


class HardwareStrip(TextLine):
    DEFAULT_CSS = """
    HardwareStrip { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """

    class HostGpus(Message):
        """A workstation's latest GPU report (`news.gpus`, checked where the stream brought it:
        `workstation_streams.box_gpus`), or why its stream or its report failed (`news.problem`); it bubbles up to
        the app (`host_gpus`)."""

        def __init__(self, news: BoxGpus) -> None:
            super().__init__()
            self.news = news

    def __init__(self, text: Text | str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(text, id=id, classes=classes)
        self.line = text  # this machine's part
        self.hosts: dict[str, GpuReport] = {}  # each other box's latest sample
        self.history: Mapping[str, Sequence[Trace]] = {}  # each machine's GPUs' history as last handed down

    def show_history(self, history: Mapping[str, Sequence[Trace]]) -> None:
        """Each machine's GPUs' recent utilisation and memory (the app's gpu_history), drawn after its part."""
        if history != self.history:
            self.history = history
            self.refresh()

    def set(self, text: Text | str) -> None:
        self.line = text
        super().set(strip_text(text, self.hosts))

    def render(self) -> Text:
        """As TextLine's, but with this machine's line cut first (`strip_text`): every box's part shows."""
        text = strip_text(self.line, self.hosts, self.content_region.width or None, self.history)
        return self.one_line(text)

    def keep_hosts(self, hosts: list[str]) -> None:
        """The workstations of the settings now: a box no longer in them leaves the strip."""
        if set(self.hosts) - set(hosts):
            self.hosts = {host: sample for host, sample in self.hosts.items() if host in hosts}
            self.set(self.line)

    def gpus_heard(self, news: BoxGpus) -> None:
        """A workstation stream's GPUs or failure (its own thread): shown on the app's loop."""
        if news.gpus is not None or news.problem is not None:
            self.post_message(self.HostGpus(news))

    def on_hardware_strip_host_gpus(self, message: HostGpus) -> None:
        if message.news.gpus is not None:
            self.hosts[message.news.host] = message.news.gpus
            self.set(self.line)
