"""One line about the machine: CPU and RAM (psutil), the NVIDIA GPUs detect_hardware() found."""

from __future__ import annotations

from typing import Any

from tuitrain.tui.widgets.text_line import TextLine

from tuitrain.humanize import size
from tuitrain.tui.format import bar


def sample_line(hardware: Any | None) -> str:
    """A blocking read (run it in a worker): 'CPU 12% ▕██··▏ 2 cores · RAM 3.1/23.4 GiB · no NVIDIA GPU'."""
    import psutil

    cpu = psutil.cpu_percent(interval=None)
    mem = psutil.virtual_memory()
    cores = getattr(hardware, "cpu_count", None) or psutil.cpu_count() or 1
    parts = [f"CPU {cpu:3.0f}% {bar(cpu / 100, 5)} {cores} cores",
             f"RAM {size(mem.total - mem.available)}/{size(mem.total)}"]
    gpus = tuple(getattr(hardware, "gpus", ()) or ())
    if gpus:
        names = sorted({g.name for g in gpus})
        parts.append(f"{len(gpus)} GPU{'s' if len(gpus) > 1 else ''}: {', '.join(names)}")
    elif getattr(hardware, "mps", False):
        parts.append("Apple MPS")
    else:
        parts.append("no NVIDIA GPU")
    return " · ".join(parts)


class HardwareStrip(TextLine):
    DEFAULT_CSS = """
    HardwareStrip { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """
