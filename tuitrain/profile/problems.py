"""Problems found in a profile, and the error that carries them.

A `Problem` names the file, the dotted key, what is wrong and how to fix it, so that a
terminal, a TUI list or a JSON consumer can each show it the way it likes.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Literal

from tuitrain.errors import TuitrainError

Severity = Literal["error", "warning", "note"]


# control characters shown escaped, so a problem stays one line and cannot move a terminal's cursor
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7f]} | {0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t"}


@dataclass(frozen=True)
class Problem:
    """One finding about a profile.

    `key` is dotted ("training.learning_rate"), or "" for the whole file.
    `str(problem)` gives one line, e.g.
    ``profiles/x.toml:12:1: training.learning_rat: unknown TrainingArguments key; did you mean 'learning_rate'?``
    Warnings and notes carry a ``warning:`` / ``note:`` marker after the location.
    """

    file: str
    key: str
    message: str
    fix: str | None = None
    severity: Severity = "error"
    line: int | None = None
    column: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def location(self) -> str:
        loc = self.file or "<profile>"
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        return loc

    def __str__(self) -> str:
        parts = [self.location()]
        if self.severity != "error":
            parts.append(self.severity)
        if self.key:
            parts.append(self.key)
        text = ": ".join(parts) + ": " + self.message
        if self.fix:
            text += "; " + self.fix
        return text.translate(_CONTROLS)  # a quoted TOML key or value may hold a newline or an escape

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProfileError(TuitrainError):
    """A profile that cannot be used; `.problems` lists every error found (one per line in str())."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


def close_matches(word: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """The candidates closest to `word` (difflib), trying case-insensitively second."""
    pool = [str(c) for c in candidates]
    prefixed = sorted((c for c in pool if c != word and c.startswith(word) and len(word) >= 3), key=len)
    matches = difflib.get_close_matches(word, pool, n=n, cutoff=0.6)
    matches = list(dict.fromkeys(prefixed[:n] + matches))[:n]
    if not matches:
        lowered = {c.lower(): c for c in pool}
        hit = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.6)
        matches = [lowered[h] for h in hit]
    return matches


def did_you_mean(word: str, candidates: Iterable[str], n: int = 1, fmt: str = "'{}'") -> str | None:
    """"did you mean 'x'?" for the closest candidate(s), or None when none is close."""
    matches = close_matches(word, candidates, n)
    if not matches:
        return None
    return "did you mean " + " or ".join(fmt.format(m) for m in matches) + "?"
