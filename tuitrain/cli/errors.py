"""The errors a user can cause, and how each reaches them: one or two lines, never a traceback."""

from __future__ import annotations


class CliError(Exception):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def user_errors() -> tuple[type[BaseException], ...]:
    from tuitrain.hardware.recorded import RecordedTableError
    from tuitrain.profile import ProfileError
    from tuitrain.rundir.record import RunRecordError
    from tuitrain.runs.catalog import RunNotFound, RunsRootError
    from tuitrain.runs.control import ControlError
    from tuitrain.runs.queue.options import QueueOptionsError
    from tuitrain.runs.start.from_profile import ResumeError
    from tuitrain.runs.start.new_run import StartError
    from tuitrain.user_config import UserConfigError

    return (CliError, ProfileError, RunNotFound, RunsRootError, ControlError, RunRecordError, StartError, ResumeError,
            UserConfigError, RecordedTableError, QueueOptionsError)


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
