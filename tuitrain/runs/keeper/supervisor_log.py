"""The supervisor's own lines in logs/launcher.log (or a node's machine log), each stamped with the time."""

from __future__ import annotations

import time


def log(message: str) -> None:
    try:
        print(f"[tuitrain supervisor {time.strftime('%H:%M:%S')}] {message}", flush=True)
    except OSError:
        pass  # a full disk must not take the supervisor down with it
