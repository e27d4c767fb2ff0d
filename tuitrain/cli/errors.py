"""The errors a user can cause, and how each reaches them: one or two lines, never a traceback."""

from __future__ import annotations


class CliError(Exception):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def user_errors() -> tuple[type[BaseException], ...]:
    from tuitrain.profile import ProfileError
    from tuitrain.runs.catalog import RunNotFound
    from tuitrain.runs.control import ControlError
    from tuitrain.runs.record import RunRecordError
    from tuitrain.runs.start import StartError

    return (CliError, ProfileError, RunNotFound, ControlError, RunRecordError, StartError)
