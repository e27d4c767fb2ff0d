"""One line about the machine at the foot of Home (the text comes from `gpu_panel.strip_line`), then a short part
per other workstation whose GPUs its Home stream carries (`node1: 2 GPUs, 1 busy`): the strip keeps each box's
latest sample, told by that stream (`gpus_heard`, from the stream's thread). Its `HostGpus` message goes on up to
the app, which keeps each box's GPUs for every screen (`TuitrainAppApi.host_gpus`: the GPUs screen, a remote run's
monitor), so that no screen opens a connection of its own to a box Home already streams."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.message import Message

from tuitrain.tui.widgets.text_line import TextLine

if TYPE_CHECKING:
    from tuitrain.remote.runs_stream import HostNews


def host_part(host: str, sample: Mapping[str, Any]) -> str:
    """What the strip says of another box's GPUs: how many, and how many have a process on them."""
    from tuitrain.hardware.report import gpus_from_json

    gpus = gpus_from_json(sample)
    if not gpus:
        return f"{host}: no GPUs"
    busy = sum(1 for gpu in gpus if gpu.processes)
    return f"{host}: {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}, {busy} busy"


def strip_text(line: Text | str, hosts: Mapping[str, Mapping[str, Any]], width: int | None = None) -> Text | str:
    """This machine's line, then each other box's part (in the order they were first heard). In `width` cells, this
    machine's line gives way first (an ellipsis in it), so that every box's part shows."""
    if not hosts:
        return line
    parts = " · ".join(host_part(host, sample) for host, sample in hosts.items())
    if width is not None:
        here = line.copy() if isinstance(line, Text) else Text(line)
        if here.cell_len + 3 + len(parts) > width and width - 3 - len(parts) > 1:
            here.truncate(width - 3 - len(parts), overflow="ellipsis")
        line = here
    return Text.assemble(line, " · ", parts) if isinstance(line, Text) else f"{line} · {parts}"


class HardwareStrip(TextLine):
    DEFAULT_CSS = """
    HardwareStrip { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """

    class HostGpus(Message):
        """A workstation's latest GPU sample (`news.gpus`: `hardware.report.gpu_sample`), or why its stream failed
        (`news.problem`); it bubbles up to the app (`host_gpus`)."""

        def __init__(self, news: HostNews) -> None:
            super().__init__()
            self.news = news

    def __init__(self, text: Text | str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(text, id=id, classes=classes)
        self.line = text  # this machine's part
        self.hosts: dict[str, dict[str, Any]] = {}  # each other box's latest sample

    def set(self, text: Text | str) -> None:
        self.line = text
        super().set(strip_text(text, self.hosts))

    def render(self) -> Text:
        """As TextLine's, but with this machine's line cut first (`strip_text`): every box's part shows."""
        text = strip_text(self.line, self.hosts, self.content_region.width or None)
        return self.one_line(text)

    def keep_hosts(self, hosts: list[str]) -> None:
        """The workstations of the settings now: a box no longer in them leaves the strip."""
        if set(self.hosts) - set(hosts):
            self.hosts = {host: sample for host, sample in self.hosts.items() if host in hosts}
            self.set(self.line)

    def gpus_heard(self, news: HostNews) -> None:
        """A workstation stream's GPUs or failure (its own thread): shown on the app's loop."""
        if news.gpus is not None or news.problem is not None:
            self.post_message(self.HostGpus(news))

    def on_hardware_strip_host_gpus(self, message: HostGpus) -> None:
        if message.news.gpus is not None:
            self.hosts[message.news.host] = message.news.gpus
            self.set(self.line)
