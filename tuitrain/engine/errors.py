"""Errors a rank explains in one line naming the profile key and the fix (no traceback needed in
`status`, the app's header or the foreground run; the rank log keeps the cause's traceback)."""

from __future__ import annotations

import os
from pathlib import Path

from tuitrain.errors import TuitrainError


class EngineError(TuitrainError):
    """A problem this rank can explain in one line (no traceback needed)."""


class DataError(EngineError):
    """A profile's data settings that do not fit the data actually loaded."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def not_loadable(key: str, source: str, what: str, exc: BaseException) -> str:
    """Why a Hub id or folder named by `key` could not be loaded, and what to do."""
    path = Path(source).expanduser()
    if path.is_file():  # validate refuses this first; a file put there after it is said the same way
        return (f"{key}: {path} is a file, not a {what} folder; give the folder save_pretrained wrote, or a Hub id such "
                'as "bert-base-uncased"')
    if path.exists():
        return f"{key} = {source!r}: the folder holds no loadable {what} ({first_line(exc)}); give a folder saved with save_pretrained"
    if offline():
        return (f"{key} = {source!r}: not a local folder, and not in the Hugging Face cache while offline "
                f"(HF_HUB_OFFLINE=1); download it once online (`hf download {source}`), or give a local folder")
    return f"{key} = {source!r}: cannot load the {what} ({first_line(exc)}); give a local folder or a Hub id that exists"
