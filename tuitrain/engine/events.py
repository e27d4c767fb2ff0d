"""events.jsonl: one JSON object per line, appended with single writes so lines never interleave."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tuitrain.rundir.events import figure


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return figure(value)  # a non-finite one as its word, the rule readers take it by
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):
        return _clean(value.item())
    return str(value)


class EventLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)  # the umask decides

    def write(self, event: str, step: int | None, **fields: Any) -> None:
        record = {"event": event, "time": time.time(), "step": step, **_clean(fields)}
        os.write(self._fd, (json.dumps(record) + "\n").encode("utf-8"))

    def close(self) -> None:
        os.close(self._fd)
