"""Small formatting helpers shared by the commands."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tuitrain.humanize import duration


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def age(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    return duration(time.time() - timestamp) + " ago"


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines)
