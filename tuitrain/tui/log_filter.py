"""Only the lines that hold a term (less's `&`): a line source over another one (a rank's log, the
merged or folded view), itself a source a log view shows.

`sync()` judges the source's new lines a budget at a time (a worker calls it, as the monitor's
follow loop does for its runs), so a long log is filtered over a few polls without holding up the
screen. Complete lines are judged once; the lines at the end that may still change (a tqdm bar
being redrawn, a fold not settled) are judged again on each sync. A line matches when the term is
in what the view shows of it (after its last carriage return, without colour codes), in any case.
Indexes only grow between generations, as the sources' do, so the screen may read while a worker
syncs.

Repeated warnings fold (`tuitrain.runs.warning_fold.WarningFold`, one rule for the app's log views and `tuitrain
logs`); `FoldedWarnings` is that fold as a line source over another one, synced as `FilteredLog` is."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from typing import TYPE_CHECKING

from tuitrain.runs.logfile import plain_text
from tuitrain.runs.warning_fold import DIM, WarningFold

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
        _follow_source_generation(self)
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


class FoldedWarnings:
    """A line source with its repeated warnings folded (`WarningFold`): what a log view shows of a rank's log,
    the launcher's, or the merged or folded ranks. `sync()` folds the source's new lines a budget at a time (the
    monitor's worker calls it through `LogView.sync`); complete lines are folded once, the lines at the end that
    may still change are folded again on each sync (on a copy of the fold)."""

    def __init__(self, source: LineSource, budget: int = 50_000) -> None:
        self.source = source
        self.budget = budget
        self.generation = 0
        self._source_generation = getattr(source, "generation", 0)
        self._reset()

    def _reset(self) -> None:
        self.shown = array("q")  # source index of each folded line shown
        self.replaced: dict[int, bytes] = {}  # shown index → the line that stands for a repeated warning
        self.tail: list[tuple[int, bytes | None]] = []  # the unsettled end: (source index, its replacement)
        self.judged = 0  # the source's lines folded for good
        self.scanned = 0  # the source's lines looked at (folded for good, or in the unsettled end)
        self.fold = WarningFold()

    @property
    def pending(self) -> int:
        """Lines of the source not looked at yet."""
        return max(0, self.source.count - self.scanned)

    @property
    def count(self) -> int:
        return len(self.shown) + len(self.tail)

    def raw(self, index: int) -> tuple[int | str | None, bytes]:
        shown = len(self.shown)
        if index < shown:
            at, instead = self.shown[index], self.replaced.get(index)
        else:
            try:
                at, instead = self.tail[index - shown]
            except IndexError:  # the unsettled end shrank under a view that has not caught up yet
                return None, b""
        rank, line = self.source.raw(at)
        return rank, line if instead is None else instead

    def cacheable(self, index: int) -> bool:
        return index < len(self.shown) and self.source.cacheable(self.shown[index])

    def _judge(self, fold: WarningFold, index: int) -> tuple[bool, bytes | None]:
        """(shown, its replacement) for the source's line `index`."""
        rank, raw = self.source.raw(index)
        if b"Warning: " not in raw and not fold.expects(rank):
            return True, None
        text = plain_text(raw)
        shown = fold.fold(rank, text)
        if shown is None:
            return False, None
        return True, None if shown is text else DIM.format(shown).encode()

    def sync(self, budget: int | None = None) -> bool:
        """Fold the source's new lines (at most `budget`, else the fold's own); True when what the view shows
        changed."""
        _follow_source_generation(self)
        before = (len(self.shown), list(self.tail))
        end = self.source.count
        budget = budget or self.budget
        stop = min(end, self.judged + budget)
        i = self.judged
        while i < stop and self.source.cacheable(i):
            shown, instead = self._judge(self.fold, i)
            if shown:
                if instead is not None:
                    self.replaced[len(self.shown)] = instead  # before the line counts: a reader never misses it
                self.shown.append(i)
            i += 1
        self.judged = i
        tail: list[tuple[int, bytes | None]] = []
        self.scanned = i
        if i < stop:  # stopped at a line that may still change: it and the rest are folded again next time
            fold = self.fold.copy()
            self.scanned = min(end, i + budget)
            for j in range(i, self.scanned):
                shown, instead = self._judge(fold, j)
                if shown:
                    tail.append((j, instead))
        self.tail = tail
        return (len(self.shown), self.tail) != before

    def _index_of(self, at: int) -> int | None:
        """The shown line of the source's line `at` (None: folded away, or not folded yet)."""
        if at < self.judged:
            index = bisect_left(self.shown, at)
            return index if index < len(self.shown) and self.shown[index] == at else None
        return next((len(self.shown) + k for k, (j, _) in enumerate(self.tail) if j == at), None)

    def find(self, needle: bytes, start: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None:
        """The first shown line at or after `start` (at or before, backwards) holding `needle`: the source's own
        search (fast on a long log), a hit in a line folded away passed over."""
        count = self.count
        if not count:
            return None
        if start >= count:
            at = self.source.count - 1 if backwards else self.source.count
        else:
            try:
                at = self.raw_index(max(0, start))
            except IndexError:  # the unsettled end shrank
                return None
        while 0 <= at < self.source.count:
            hit = self.source.find(needle, at, backwards, ignore_case)
            if hit is None:
                return None
            index = self._index_of(hit)
            if index is not None:
                return index
            if hit >= self.scanned:
                return None  # in lines not folded yet
            at = hit - 1 if backwards else hit + 1
        return None

    def raw_index(self, index: int) -> int:
        """The source's line shown as line `index`."""
        shown = len(self.shown)
        return self.shown[index] if index < shown else self.tail[index - shown][0]


def _follow_source_generation(view: "FilteredLog | FoldedWarnings") -> None:
    """A source that started over (a truncated or replaced log) starts the derived view over too."""
    generation = getattr(view.source, "generation", 0)
    if generation != view._source_generation:
        view._source_generation = generation
        view.generation += 1
        view._reset()
