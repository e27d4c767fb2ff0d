"""The CLI's own refusal (a `TuitrainError` with its exit code) and the line for a permission error."""

from __future__ import annotations

from tuitrain.errors import TuitrainError


class CliError(TuitrainError):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def permission_line(exc: PermissionError) -> str:
    """A permission error met anywhere (another user's run, a runs root we cannot write): the
    path, whose it is, and what would fix it."""
    import os
    from pathlib import Path

    from tuitrain.runs.catalog import permission_message

    if not exc.filename:
        return f"permission denied: {exc}"
    readable = os.access(exc.filename, os.R_OK)  # then it was writing that was refused
    return permission_message(Path(exc.filename), "write to" if readable else "read")
