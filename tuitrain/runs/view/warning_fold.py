"""Repeated Python warnings folded: one rule for the app's log views (tui.log_filter.FoldedWarnings) and
`tuitrain logs`. A Python warning (`path:line: SomeWarning: message`, and the source line under it) shows in
full the first time; each later print of the same warning is one short line, "… (same warning ×5)
FutureWarning: …" (FSDP's state_dict_type warning on every save)."""

from __future__ import annotations

import re

# Python's warnings.formatwarning: "path:line: Category: message", then "  source line" when the source is found
_WARNING = re.compile(r"([^\s/\\]*):(\d+): ([A-Za-z_]\w*Warning): (.*)$")
_SOURCE_LINE = re.compile(r"^  \S")
DIM = "\x1b[2m{}\x1b[0m"  # how a folded line shows where colours do


def fold_line(times: int, category: str, message: str, width: int = 72) -> str:
    """The line that stands for a warning printed the `times`-th time."""
    short = message if len(message) <= width else message[: width - 1].rstrip() + "…"
    return f"… (same warning ×{times}) {category}: {short}"


class WarningFold:
    """Repeated Python warnings folded, one line at a time (lines in the order shown, each with its rank: a
    warning's source line is the next line of the same rank). `fold(rank, text)` says what to show of a line: the
    text itself (the same object), a `fold_line` for a warning printed before, or None for the source line under
    it. The first print of a warning shows whole; a warning is the same when its file name, line, category and
    message are (whatever a progress bar drew before it on its line)."""

    def __init__(self) -> None:
        self.times: dict[str, int] = {}  # warning → times printed so far
        self.source: dict[str, str] = {}  # warning → the source line under its first print
        self._after: dict[object, tuple[str, bool]] = {}  # rank → (warning, folded) its last line printed
        self.folded = 0  # lines folded so far (shortened or left out)

    def copy(self) -> WarningFold:
        other = WarningFold()
        other.times, other.source, other._after = dict(self.times), dict(self.source), dict(self._after)
        other.folded = self.folded
        return other

    def expects(self, rank: object) -> bool:
        """Whether the next line of `rank` may be a warning's source line (else only a warning changes)."""
        return rank in self._after

    def fold(self, rank: object, text: str) -> str | None:
        after = self._after.pop(rank, None)
        if after is not None and _SOURCE_LINE.match(text):
            warning, folded = after
            if not folded:
                self.source.setdefault(warning, text)
                return text
            if self.source.get(warning) == text:
                self.folded += 1
                return None
        found = _WARNING.search(text)
        if found is None:
            return text
        warning = found.group(0)
        times = self.times.get(warning, 0) + 1
        self.times[warning] = times
        self._after[rank] = (warning, times > 1)
        if times == 1:
            return text
        self.folded += 1
        return fold_line(times, found[3], found[4])
