"""Numbers, sizes and durations as people read them; shared by the command line and the app."""

from __future__ import annotations

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


def size(num_bytes: int) -> str:
    """1.5 MiB; binary units, as `du -h` and nvidia-smi use."""
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def gib(num_bytes: Any, digits: int = 1, unit: bool = False) -> str:
    """Bytes in GiB ("46.2", or "46.2 GiB" with `unit`); "N/A" when unknown (None, or the
    hardware layer's NA)."""
    if not isinstance(num_bytes, (int, float)):
        return "N/A"
    return f"{num_bytes / 2**30:.{digits}f}" + (" GiB" if unit else "")


def percent(value: Any, width: int = 0) -> str:
    """"97%", right-aligned in `width` digits; "N/A" when unknown."""
    if not isinstance(value, (int, float)):
        return "N/A".rjust(width + 1)
    return f"{value:>{width}.0f}%" if width else f"{value:.0f}%"
