"""Only the lines that hold a term (less's `&`): a line source over another one (a rank's log, the
merged or folded view), itself a source a log view shows.

`sync()` judges the source's new lines a budget at a time (a worker calls it, as the monitor's
follow loop does for its runs), so a long log is filtered over a few polls without holding up the
screen. Complete lines are judged once; the lines at the end that may still change (a tqdm bar
being redrawn, a fold not settled) are judged again on each sync. A line matches when the term is
in what the view shows of it (after its last carriage return, without colour codes), in any case.
Indexes only grow between generations, as the sources' do, so the screen may read while a worker
syncs.

Repeated warnings fold (`tuitrain.runs.view.warning_fold.WarningFold`, one rule for the app's log views and `tuitrain
logs`); `FoldedWarnings` is that fold as a line source over another one, synced as `FilteredLog` is."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right

from tuitrain.runs.view.logfile import MAX_LINE_BYTES, plain_text
from tuitrain.runs.view.warning_fold import DIM, WarningFold
from tuitrain.tui.line_source import LineSource


class FilteredLog:
    def __init__(self, source: LineSource, term: str, budget: int = 50_000) -> None:
        self.source = source
        self.term = term
        self.needle = term.lower()
        self.budget = budget
        self.generation = 0
        self._source_generation = getattr(source, "generation", 0)
        self._reset()
        self.catch_up = 0  # the source's lines when the view last started over (a search waits for them)

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

    @property
    def indexing(self) -> bool:
        return _catching_up(self)

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
    the launcher's, or the merged or folded ranks. `sync()` folds the source's new lines (the monitor's worker
    calls it through `LogView.sync`); complete lines are folded once, the lines at the end that may still change
    are folded again on each sync (on a copy of the fold).

    Only a line holding "Warning: ", and the next line of its rank, can change: the rest are found by the
    source's own search over its bytes and passed over, so a log of millions of lines is folded in the time
    its bytes take to search. What is kept is the lines folded away (sorted) and the replacements: memory
    grows with the warnings, not with the log."""

    NEEDLE = b"Warning: "
    # a line holding the needle holds its "W": found by memchr, many times faster than the needle where it is rare
    # (most training logs); while lines holding a "W" but not the needle stay rare, the fold looks for it first
    PROBE = b"W"
    PROBE_CREDIT = 16  # probe hits without the needle taken before the fold searches for the needle itself
    PROBE_LINES = 16_384  # lines passed over by the probe that earn one more

    def __init__(self, source: LineSource, budget: int = 50_000) -> None:
        self.source = source
        self.budget = budget  # lines judged one by one (around warnings) per sync
        self.generation = 0
        self._source_generation = getattr(source, "generation", 0)
        self._reset()
        self.catch_up = 0  # the source's lines when the view last started over (a search waits for them)

    def _reset(self) -> None:
        self.removed = array("q")  # the source's judged lines folded away, in order
        self._shifted = array("q")  # removed[j] - j: a shown index to the source's (bisect)
        self.replaced: dict[int, bytes] = {}  # source index → the line that stands for a repeated warning
        self.tail: list[tuple[int, bytes | None]] = []  # the unsettled end: (source index, its replacement)
        self.judged = 0  # the source's lines folded for good
        self.scanned = 0  # the source's lines looked at (folded for good, or in the unsettled end)
        self.fold = WarningFold()
        self._waiting: set[object] = set()  # ranks whose next line may be a warning's source line
        self._clean_until = 0  # no line before it (from judged on) holds the needle
        self._hit: int | None = None  # the next line known to hold it
        self._probe_credit = self.PROBE_CREDIT

    @property
    def pending(self) -> int:
        """Lines of the source not looked at yet."""
        return max(0, self.source.count - self.scanned)

    @property
    def settled(self) -> int:
        """Lines folded for good and shown."""
        return self.judged - len(self.removed)

    @property
    def count(self) -> int:
        return self.settled + len(self.tail)

    @property
    def indexing(self) -> bool:
        return _catching_up(self)

    def raw(self, index: int) -> tuple[int | str | None, bytes]:
        if index < self.settled:
            at = self.raw_index(index)
            instead = self.replaced.get(at)
        else:
            try:
                at, instead = self.tail[index - self.settled]
            except IndexError:  # the unsettled end shrank under a view that has not caught up yet
                return None, b""
        rank, line = self.source.raw(at)
        return rank, line if instead is None else instead

    def cacheable(self, index: int) -> bool:
        return index < self.settled and self.source.cacheable(self.raw_index(index))

    def _judge(self, fold: WarningFold, index: int) -> tuple[object, bool, bytes | None]:
        """(its rank, shown, its replacement) for the source's line `index`."""
        rank, raw = self.source.raw(index)
        if self.NEEDLE not in raw and not fold.expects(rank):
            return rank, True, None
        text = plain_text(raw)
        shown = fold.fold(rank, text)
        if shown is None:
            return rank, False, None
        return rank, True, None if shown is text else DIM.format(shown).encode()

    def _next_candidate(self, start: int, settled: int) -> int:
        """The first line from `start` that holds the needle (`settled` when none before it)."""
        if self._hit is not None and self._hit >= start:
            return self._hit
        at = max(start, self._clean_until)
        while True:
            probing = self._probe_credit > 0
            hit = self.source.find(self.PROBE if probing else self.NEEDLE, at, False, False)
            if hit is None or hit >= settled:
                self._hit = None
                self._clean_until = settled
                return settled
            if probing:
                self._probe_credit += (hit - at) // self.PROBE_LINES
                if self.NEEDLE not in self.source.raw(hit)[1]:
                    self._probe_credit -= 1
                    at = hit + 1
                    continue
            self._hit = hit
            return hit

    def _settled_end(self, end: int) -> int:
        """The first of the source's lines that may still change (they stand at its end: a partial line, a
        fold not closed yet, a few lines a rank)."""
        settled = end
        while settled > self.judged and not self.source.cacheable(settled - 1):
            settled -= 1
        return settled

    def sync(self, budget: int | None = None) -> bool:
        """Fold the source's new lines (judging at most `budget` one by one, else the fold's own); True when what
        the view shows changed."""
        _follow_source_generation(self)
        before = (self.count, list(self.tail))
        end = self.source.count
        budget = budget or self.budget
        settled = self._settled_end(end)
        i, judged = self.judged, 0
        while i < settled and judged < budget:
            if not self._waiting:
                i = self._next_candidate(i, settled)
                if i >= settled:
                    break
            rank, shown, instead = self._judge(self.fold, i)
            judged += 1
            if self.fold.expects(rank):
                self._waiting.add(rank)
            else:
                self._waiting.discard(rank)
            if not shown:
                self._shifted.append(i - len(self.removed))
                self.removed.append(i)
            elif instead is not None:
                self.replaced[i] = instead  # before the line counts: a reader never misses it
            i += 1
        self.judged = i
        tail: list[tuple[int, bytes | None]] = []
        self.scanned = i
        if i == settled and settled < end:  # the lines that may still change are folded again next time
            self.scanned = end
            start = i
            if not self._waiting:  # the lines before the first that holds the needle show as they are
                hit = self.source.find(self.NEEDLE, i, False, False)
                start = end if hit is None else min(max(hit, i), end)
            tail = [(j, None) for j in range(i, start)]
            fold = self.fold.copy()
            for j in range(start, end):
                _, shown, instead = self._judge(fold, j)
                if shown:
                    tail.append((j, instead))
        self.tail = tail
        return (self.count, self.tail) != before

    def _index_of(self, at: int) -> int | None:
        """The shown line of the source's line `at` (None: folded away, or not folded yet)."""
        if at < self.judged:
            folded = bisect_left(self.removed, at)
            if folded < len(self.removed) and self.removed[folded] == at:
                return None
            return at - folded
        return next((self.settled + k for k, (j, _) in enumerate(self.tail) if j == at), None)

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
            hit = find_in(self.source, needle, at, backwards, ignore_case)
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
        settled = self.settled
        if index < settled:
            return index + bisect_right(self._shifted, index)
        return self.tail[index - settled][0]


_CASELESS = re.compile(rb"[^A-Za-z]{4,}")  # bytes.lower() changes ASCII letters only
ANCHOR_MISSES = 32  # lines holding the needle's caseless part but not the needle before a search lowers every byte


def caseless_part(needle: bytes) -> bytes | None:
    """The needle's longest run of bytes that have no case (digits, spaces, punctuation; 4 or more): a case-blind
    search looks for it as it is, and lowers only the lines that hold it, not every byte it reads."""
    if needle.lower() == needle.upper():
        return None  # no case at all: searched for as it is
    runs = _CASELESS.findall(needle)
    return max(runs, key=len) if runs else None


def find_in(source: LineSource, needle: bytes, start: int, backwards: bool, ignore_case: bool) -> int | None:
    """`source.find`, case-blind through the needle's caseless part where it has one (the search of a log of
    millions of lines right after it opened: lowering its bytes took as long as finding the needle in them)."""
    anchor = caseless_part(needle) if ignore_case else None
    if anchor is not None:
        lowered = needle.lower()
        for _ in range(ANCHOR_MISSES):
            hit = source.find(anchor, start, backwards, False)
            if hit is None:
                return None
            line = source.raw(hit)[1]
            if lowered in line.lower():
                return hit
            if len(line) >= MAX_LINE_BYTES:  # only its end was read: the search below reads all of it
                start = hit
                break
            start = hit - 1 if backwards else hit + 1
            if start < 0:
                return None
    return source.find(needle, start, backwards, ignore_case)


def _follow_source_generation(view: "FilteredLog | FoldedWarnings") -> None:
    """A source that started over (a truncated or replaced log) starts the derived view over too."""
    generation = getattr(view.source, "generation", 0)
    if generation != view._source_generation:
        view._source_generation = generation
        view.generation += 1
        view._reset()
        view.catch_up = view.source.count


def _catching_up(view: "FilteredLog | FoldedWarnings") -> bool:
    """Whether the view's source is still indexing, or the view has not caught up yet with what its source held
    when it started over."""
    return (bool(getattr(view.source, "indexing", False)) or getattr(view.source, "generation", 0) != view._source_generation
            or view.scanned < view.catch_up)
