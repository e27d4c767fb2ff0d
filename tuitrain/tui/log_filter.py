"""Only the lines that hold a term (less's `&`): a line source over another one (a rank's log, the
merged or folded view), itself a source a log view shows.

`sync()` judges the source's new lines a budget at a time (a worker calls it, as the monitor's
follow loop does for its runs), so a long log is filtered over a few polls without holding up the
screen. Complete lines are judged once; the lines at the end that may still change (a tqdm bar
being redrawn, a fold not settled) are judged again on each sync. A line matches when the term is
in what the view shows of it (after its last carriage return, without colour codes), in any case.
Indexes only grow between generations, as the sources' do, so the screen may read while a worker
syncs."""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from tuitrain.runs.logfile import plain_text

if TYPE_CHECKING:
    from tuitrain.tui.widgets.log_view import LineSource


class FilteredLog:
    def __init__(self, source: LineSource, term: str, budget: int = 50_000) -> None:
        self.source = source
        self.term = term
        self.needle = term.lower()
        self.budget = budget
        self.generation = 0
        self._source_generation = getattr(source, "generation", 0)
        self._reset()

    def _reset(self) -> None:
        self.hits = array("q")  # source indexes of the complete lines that match
        self.tail: list[int] = []  # matching lines past the judged ones (judged again each sync)
        self.judged = 0  # the source's lines judged for good
        self.scanned = 0  # the source's lines looked at (judged, or in the unsettled end)

    @property
    def pending(self) -> int:
        """Lines of the source not looked at yet."""
        return max(0, self.source.count - self.scanned)

    @property
    def count(self) -> int:
        return len(self.hits) + len(self.tail)

    def source_index(self, index: int) -> int:
        hits = len(self.hits)
        return self.hits[index] if index < hits else self.tail[index - hits]

    def raw(self, index: int) -> tuple[int | str | None, bytes]:
        try:
            return self.source.raw(self.source_index(index))
        except IndexError:  # the unsettled end shrank under a view that has not caught up yet
            return None, b""

    def cacheable(self, index: int) -> bool:
        return index < len(self.hits) and self.source.cacheable(self.hits[index])

    def _matches(self, index: int) -> bool:
        return self.needle in plain_text(self.source.raw(index)[1]).lower()

    def sync(self, budget: int | None = None) -> bool:
        """Judge the source's new lines (at most `budget`, else the filter's own); True when what
        the view shows changed."""
        generation = getattr(self.source, "generation", 0)
        if generation != self._source_generation:
            self._source_generation = generation
            self.generation += 1
            self._reset()
        before = (len(self.hits), list(self.tail))
        end = self.source.count
        budget = budget or self.budget
        stop = min(end, self.judged + budget)
        i = self.judged
        while i < stop and self.source.cacheable(i):
            if self._matches(i):
                self.hits.append(i)
            i += 1
        self.judged = i
        if i < stop:  # stopped at a line that may still change: it and the rest are judged again next time
            self.scanned = min(end, i + budget)
            self.tail = [j for j in range(i, self.scanned) if self._matches(j)]
        else:
            self.scanned = i
            self.tail = []
        return (len(self.hits), self.tail) != before

    def find(self, needle: bytes, start: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None:
        """The first shown line at or after `start` (at or before, backwards) holding `needle`."""
        if not needle:
            return None
        if ignore_case:
            needle = needle.lower()
        indexes = range(min(start, self.count - 1), -1, -1) if backwards else range(max(0, start), self.count)
        for index in indexes:
            raw = self.raw(index)[1]
            if needle in (raw.lower() if ignore_case else raw):
                return index
        return None
