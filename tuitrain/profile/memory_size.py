"""A memory size written in a profile ("20GiB", "512 MiB", "40GB"): bytes, or None when it is not one."""

from __future__ import annotations

import re

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
         "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)\s*$")
EXAMPLE = 'e.g. min_free_memory = "20GiB" (units B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)'


def parse_memory_size(text: object) -> int | None:
    """'20GiB' -> 21474836480; None for anything else (a number without a unit is ambiguous, so refused)."""
    if not isinstance(text, str):
        return None
    found = _SIZE.match(text)
    if not found or found.group(2) not in UNITS:
        return None
    return int(float(found.group(1)) * UNITS[found.group(2)])
