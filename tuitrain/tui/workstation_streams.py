"""Home's streams of the workstations of the settings (remote.runs_stream), one per box, kept in step with the
settings file: read again when it changes, a box added is watched, a box removed or changed is let go (and watched
anew), without a restart of the app. A box's GPU report is checked here, where it enters the app (`box_gpus`): it
comes from another host, maybe another version, and one that does not check is the box's problem, not a crash."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuitrain.hardware.report import GpuReport, read_report

if TYPE_CHECKING:
    from tuitrain.remote.runs_stream import HostNews, RunsStream
    from tuitrain.remote.workstations import Workstation

SETTINGS_SECONDS = 2.0  # how often Home looks whether the settings file changed ([[workstations]] edited)


@dataclass(frozen=True)
class BoxGpus:
    """What the app knows of a watched box's GPUs: its latest report (None: none heard), and why its stream or its
    report failed (None: neither)."""

    host: str
    gpus: GpuReport | None = None
    problem: str | None = None


def box_gpus(news: HostNews) -> BoxGpus:
    """A stream's GPU news, its report checked."""
    if news.gpus is None:
        return BoxGpus(news.host, problem=news.problem)
    report = read_report(news.gpus)
    if isinstance(report, str):
        return BoxGpus(news.host, problem=f"{news.host}: its GPU report does not read ({report})")
    return BoxGpus(news.host, report, news.problem)


def settings_stamp() -> tuple[int, int] | None:
    """The settings file's (mtime, size), None when there is none: what tells that it was edited."""
    from tuitrain.user_config import config_path

    try:
        info = config_path().stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class WorkstationStreams:
    def __init__(self, on_news: Callable[[HostNews], None], on_gpus: Callable[[BoxGpus], None]) -> None:
        self.on_news = on_news
        self.on_gpus = on_gpus
        self.streams: dict[str, RunsStream] = {}  # each box watched, by host
        self.stamp: tuple[int, int] | None = None  # the settings file as the boxes were last read from it

    def changed(self) -> bool:
        """Whether the settings file changed since it was last read (one stat)."""
        return settings_stamp() != self.stamp

    def read(self) -> tuple[list[Workstation], str | None]:
        """The workstations of the settings (or none and why not), the file's stamp taken first."""
        from tuitrain.remote.workstations import configured

        self.stamp = settings_stamp()
        return configured()

    def follow(self, stations: Sequence[Workstation]) -> list[str]:
        """Watch these boxes and no others; their hosts, in the settings' order."""
        from tuitrain import __version__
        from tuitrain.remote.runs_stream import RunsStream

        wanted = {station.host: station for station in stations}
        for host, stream in list(self.streams.items()):
            if wanted.get(host) != stream.station:
                stream.stop()
                del self.streams[host]
        for host, station in wanted.items():
            if host not in self.streams:
                self.streams[host] = RunsStream(station, __version__, self.on_news,
                                                on_gpus=lambda news: self.on_gpus(box_gpus(news)))
                self.streams[host].start()
        return list(wanted)

    def stop(self) -> None:
        for stream in self.streams.values():
            stream.stop()
