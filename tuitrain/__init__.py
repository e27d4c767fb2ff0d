"""tuitrain: launch and watch Hugging Face training runs from a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__version__ = "0.1.0"


def report(step: int, **metrics: Any) -> Any:
    """A script's metrics at `step`; returns the run's requests (save, evaluate, stop). See tuitrain.script.api."""
    from tuitrain.script.api import report as _report

    return _report(step, **metrics)


def saved(path: str | Path, step: int) -> None:
    """A checkpoint of `step` is complete in `path`. See tuitrain.script.api."""
    from tuitrain.script.api import saved as _saved

    _saved(path, step)
