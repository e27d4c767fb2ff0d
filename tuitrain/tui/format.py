"""Small text helpers for the screens (no clock inside: callers pass `now`)."""

from __future__ import annotations

import time

from rich.text import Text

BAR = " ▏▎▍▌▋▊▉█"
STATUS_STYLES = {
    "hung?": "bold yellow reverse",
    "running": "bold green",
    "starting": "yellow",
    "planned": "yellow",
    "stopping": "yellow",
    "queued": "blue",
    "finished": "cyan",
    "stopped": "magenta",
    "killed": "bold magenta",
    "failed": "bold red",
    "lost": "bold red",
    "unreadable": "bold red",
}
RANK_STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red", "bright_cyan", "bright_magenta")


def clock(timestamp: float | None, with_date: bool = True) -> str:
    if not timestamp:
        return "-"
    return time.strftime("%m-%d %H:%M" if with_date else "%H:%M:%S", time.localtime(timestamp))


def bar(fraction: float | None, width: int) -> str:
    """A bar of `width` cells in eighths of a cell."""
    if fraction is None:
        return "·" * width
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (BAR[part] if part and full < width else "")
    return text.ljust(width, "·") if full < width else text[:width]


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))


def step_text(step: int, total: int | None, width: int = 6) -> Text:
    fraction = step / total if total else None
    out = Text(f"{step}/{total or '?'} ")
    out.append(bar(fraction, width), style="green")
    return out


def short_metric(name: str) -> str:
    """eval_accuracy -> accuracy; eval_loss stays itself (beside the training loss it must)."""
    return name[5:] if name.startswith("eval_") and name != "eval_loss" else name
