"""Numbers, sizes and durations as people read them; shared by the command line and the app."""

from __future__ import annotations

import math
from typing import Any


def duration(seconds: float | None) -> str:
    """45s, 3m07s, 2h05m, 1d03h."""
    if seconds is None:
        return "-"
    seconds = int(max(seconds, 0))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def number(value: Any, digits: int = 4) -> str:
    """A metric: floats to `digits` significant digits, anything else as it is."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _known(value: Any) -> bool:
    """A number to show: not None, not the hardware layer's NA (a str), not nan."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def size(num_bytes: Any) -> str:
    """1.5 MiB; binary units, as `du -h` and nvidia-smi use; "N/A" when unknown."""
    if not _known(num_bytes):
        return "N/A"
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def gib(num_bytes: Any, digits: int = 1, unit: bool = False) -> str:
    """Bytes in GiB ("46.2", or "46.2 GiB" with `unit`); "N/A" when unknown (None, or the
    hardware layer's NA)."""
    if not _known(num_bytes):
        return "N/A"
    return f"{num_bytes / 2**30:.{digits}f}" + (" GiB" if unit else "")


def gpu_memory(used: Any, total: Any, lost: bool = False, sep: str = "/") -> str:
    """A GPU's memory, the one rule every view follows: "12.1/80.0 GiB"; an unknown figure is
    "—" ("—/80.0 GiB"), both unknown "N/A", never nan; a lost GPU "LOST", whatever it said before."""
    if lost:
        return "LOST"
    if not _known(used) and not _known(total):
        return "N/A"
    used_text = gib(used) if _known(used) else "—"
    total_text = gib(total) if _known(total) else "—"
    return f"{used_text}{sep}{total_text} GiB"


def percent(value: Any, width: int = 0) -> str:
    """"97%", right-aligned in `width` digits; "N/A" when unknown."""
    if not _known(value):
        return "N/A".rjust(width + 1)
    return f"{value:>{width}.0f}%" if width else f"{value:.0f}%"
