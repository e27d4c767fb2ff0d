"""The root of every refusal tuitrain says to a person.

A `TuitrainError` is the user's input or state refused (a profile, a run, a settings file, a Slurm command),
in one line a person can act on: the file, key or run, and the fix. Each front end catches it in one place:
the CLI's `main` (one line to stderr, exit `code`) and the app's `on_work_failed` (one toast, as text). So a
new refusal needs no new catch list anywhere; an exception that is an internal signal (caught where it is
raised, never shown) stays outside it, named with its reason in tests/test_errors.py.
"""

from __future__ import annotations

from collections.abc import Sequence


class TuitrainError(Exception):
    """A refusal, said in one line (`str()`); with `problems` (a profile's findings), one line each."""

    code = 2  # the CLI's exit status for it
    problems: Sequence[object] = ()

    def lines(self) -> list[str]:
        """What to show, a line each: the problems where there are, else the message."""
        return [str(p) for p in self.problems] or [str(self)]


def error_lines(exc: BaseException) -> list[str]:
    """A refusal's lines; any other error's message (an OSError's, caught beside the refusals)."""
    return exc.lines() if isinstance(exc, TuitrainError) else [str(exc)]
