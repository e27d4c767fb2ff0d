"""Several ranks' logs (`runs.view.logfile.LogFile`) seen as one.

`MergedLog` shows them in the order their lines were written: each rank notes when it wrote its
lines in logs/rank-K.times (rundir.linetimes), and lines merge by (time, rank, line). A log with no
such index (a run from before it existed) is interleaved by relative position in each file (a block
of lines at a time), later lines in arrival order. `FoldedLog` shows a line that several ranks print
alike once, marked with the ranks that printed it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from itertools import repeat

from tuitrain.runs.view.logfile import MAX_LINE_BYTES, LogFile


class MergedLog:
    """Several logs (one per rank) seen as one: every complete line once, then each rank's
    unfinished line. Complete lines stand in the order they were written, by (time, rank, line),
    where the ranks noted their times; see the module's note for logs that did not."""

    def __init__(self, files: list[LogFile], block: int = 64) -> None:
        self.files = files
        self.block = block
        self.generation = 0
        self._built = False
        self._seen_generations = [f.generation for f in files]
        self._reset()

    def _reset(self) -> None:
        # one file is its own order: merged index = line, and nothing is held a line (a log of millions of lines
        # merges at once)
        self.ranks: array[int] | _Zeros = _Zeros() if len(self.files) == 1 else array("H")  # merged index -> rank
        self.lines: array[int] | range = range(0) if len(self.files) == 1 else array("I")  # merged index -> line
        self.pos: list[array[int] | range] = [range(0) if len(self.files) == 1 else array("I") for _ in self.files]
        self.known = [0] * len(self.files)
        self._latest = [0.0] * len(self.files)  # time of each rank's last placed line
        self._held: dict[int, int] = {}  # rank -> its line held back once (written after `now`)

    @property
    def count(self) -> int:
        return len(self.lines) + sum(1 for f in self.files if f.has_partial)

    @property
    def indexing(self) -> bool:
        return any(f.indexing for f in self.files) or any(
            f.generation != seen for f, seen in zip(self.files, self._seen_generations, strict=True))

    def _place(self, rank: int, upto: int) -> None:
        have = self.known[rank]
        if upto <= have:
            return
        lines, ranks, pos = self.lines, self.ranks, self.pos[rank]
        if isinstance(lines, range):
            self.lines = self.pos[0] = range(upto)
        elif upto - have == 1 and isinstance(ranks, array) and isinstance(pos, array):  # the usual: a line at a time
            pos.append(len(lines))
            lines.append(have)
            ranks.append(rank)
        elif isinstance(ranks, array) and isinstance(pos, array):
            start = len(lines)
            lines.extend(range(have, upto))
            ranks.extend(repeat(rank, upto - have))
            pos.extend(range(start, start + upto - have))
        self.known[rank] = upto

    def sync(self, now: float | None = None) -> None:
        """Place the lines the files indexed since the last call (after each `LogFile.update`).

        `now`, the wall clock before those updates, is for a live run: a line written after it
        waits one call, so a line another rank wrote before it, not read yet, still goes first."""
        generations = [f.generation for f in self.files]
        if generations != self._seen_generations:
            self._seen_generations = generations
            self._reset()
            self.generation += 1
            self._built = False
        if len(self.files) == 1:
            self._place(0, self.files[0].line_count)
        elif any(f.times.count for f in self.files):
            self._sync_timed(now)
        elif self._built:
            for rank, f in enumerate(self.files):
                self._place(rank, f.line_count)
        else:
            self._sync_by_position()
        self._built = True

    def _sync_timed(self, now: float | None) -> None:
        chunks: list[tuple[float, int, int]] = []
        for rank, f in enumerate(self.files):
            chunks += self._timed_chunks(rank, f)
        chunks.sort()
        held: set[int] = set()
        lines, ranks, known, latest = self.lines, self.ranks, self.known, self._latest
        for when, rank, upto in chunks:
            if rank in held:
                continue
            have = known[rank]
            if now is not None and when > now and self._held.get(rank) != have:
                self._held[rank] = have
                held.add(rank)
                continue
            pos = self.pos[rank]
            if upto == have + 1 and isinstance(lines, array) and isinstance(ranks, array) and isinstance(pos, array):
                pos.append(len(lines))  # the usual: one line (the _place of several ranks' logs, inlined)
                lines.append(have)
                ranks.append(rank)
                known[rank] = upto
            else:
                self._place(rank, upto)
            latest[rank] = when

    def _timed_chunks(self, rank: int, f: LogFile) -> list[tuple[float, int, int]]:
        """(time, rank, lines written by then) for the rank's lines not placed yet; lines no
        entry covers (written around Python, or the entry not read yet) take the file's mtime."""
        have, total = self.known[rank], f.line_count
        if total <= have:
            return []
        offsets, times = f.times.offsets, f.times.times
        latest = self._latest[rank]
        out = []
        idx = f._idx  # the live end's line starts, looked up here (an entry a line, thousands a second)
        starts, base, dense = idx.starts, idx.base, idx.starts[0]
        for j in range(bisect_left(offsets, f.line_end(have)), len(offsets)):
            offset = offsets[j]
            upto = min(total, base + bisect_right(starts, offset) - 1 if offset >= dense else f.line_at_offset(offset))
            if upto > have:
                latest = max(latest, times[j])
                out.append((latest, rank, upto))
                have = upto
                if have == total:
                    return out
        out.append((max(latest, f.mtime), rank, total))
        return out

    def _sync_by_position(self) -> None:
        counts = [f.line_count for f in self.files]
        total = sum(counts)
        slices = max(1, total // (self.block * len(self.files)))
        sizes = [max(1, f.line_start(f.line_count)) for f in self.files]
        for s in range(1, slices + 1):
            for rank, f in enumerate(self.files):
                upto = counts[rank] if s == slices else min(counts[rank], f.line_at_offset(sizes[rank] * s // slices))
                self._place(rank, upto)

    def partial_ranks(self) -> list[int]:
        return [r for r, f in enumerate(self.files) if f.has_partial]

    def raw(self, index: int) -> tuple[int | None, bytes]:
        lines = self.lines
        if index < len(lines):
            rank = self.ranks[index]
            return rank, self.files[rank].line(lines[index])
        partial = self.partial_ranks()
        k = index - len(lines)
        if 0 <= k < len(partial):
            rank = partial[k]
            return rank, self.files[rank].line(self.files[rank].line_count)
        return None, b""

    def cacheable(self, index: int) -> bool:
        return index < len(self.lines)

    def _merged_index(self, rank: int, line: int) -> int | None:
        pos = self.pos[rank]
        if line < len(pos):
            return pos[line]
        partial = self.partial_ranks()
        if line == self.files[rank].line_count and rank in partial:
            return len(self.lines) + partial.index(rank)
        return None

    def find(self, needle: bytes, start: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None:
        hits = []
        for rank, f in enumerate(self.files):
            pos = self.pos[rank]
            if backwards:
                from_line = bisect_right(pos, start) - 1 if start < len(self.lines) else f.line_count
                if from_line < 0:
                    continue
            else:
                from_line = bisect_left(pos, start) if start < len(self.lines) else f.line_count
            line = f.find(needle, from_line, backwards, ignore_case)
            if line is not None:
                merged = self._merged_index(rank, line)
                if merged is not None:
                    hits.append(merged)
        if not hits:
            return None
        return max(hits) if backwards else min(hits)


class _Zeros:
    """The rank of every merged line of a single log."""

    def __getitem__(self, index: int) -> int:
        return 0


class FoldedLog:
    """A `MergedLog` in which a line that several ranks print alike, close together, shows once,
    marked with the ranks that printed it ("0-7", "0,2,5"): eight ranks printing the same
    progress no longer bury the one whose line differs.

    A line folds into the oldest identical one among the last `window` merged lines that does not
    have this rank yet. Only the lines of the open groups are held (bounded by
    `window`); the index is 8 bytes a merged line. `sync()` folds at most `budget` new lines per
    call, so a long log is folded over a few polls without holding up the first screen.
    """

    MAX_RANKS = 64  # ranks are a bit mask; beyond it lines are shown unfolded

    def __init__(self, merged: MergedLog, window: int | None = None, budget: int = 50_000) -> None:
        self.merged = merged
        # lines written before the first sync are merged a block per rank at a time: copies of a
        # line can stand a block per rank apart
        self.window = window or (merged.block + 4) * max(1, len(merged.files))
        self.budget = budget
        self.generation = 0
        self._merged_generation = merged.generation
        self._reset()

    def _reset(self) -> None:
        self.first = array("I")  # folded index -> merged index of its first line
        self.masks = array("Q")  # folded index -> ranks that printed it (bit mask)
        self.folded_at = array("I")  # merged index -> folded index
        self._open: dict[bytes, list[int]] = {}  # line -> folded indexes of its open groups, oldest first
        self._opened: deque[tuple[int, bytes]] = deque()  # (group, line) as groups opened: the oldest go first
        self._done = 0  # merged lines folded so far

    @property
    def pending(self) -> int:
        """Merged lines not folded yet (a later `sync` takes them)."""
        return len(self.merged.lines) - self._done

    @property
    def count(self) -> int:
        return len(self.first) + len(self.merged.partial_ranks())

    @property
    def indexing(self) -> bool:
        return self.merged.indexing or self.merged.generation != self._merged_generation

    def sync(self) -> None:
        if self.merged.generation != self._merged_generation:
            self._merged_generation = self.merged.generation
            self._reset()
            self.generation += 1
        merged = self.merged
        everyone = (1 << len(merged.files)) - 1
        end = min(len(merged.lines), self._done + self.budget)
        # each rank's new lines in one read: a merged stretch holds a run of lines from each rank
        lows: dict[int, int] = {}
        highs: dict[int, int] = {}
        ranks, numbers = merged.ranks, merged.lines
        for index in range(self._done, end):  # a rank's lines stand in order: its first and last give the span
            rank = ranks[index]
            if rank not in lows:
                lows[rank] = numbers[index]
            highs[rank] = numbers[index]
        texts = {rank: (low, merged.files[rank].lines(low, highs[rank] + 1)) for rank, low in lows.items()}
        # thousands of lines a second: the loop works on local names
        first, masks, folded_at, open_groups, opened = self.first, self.masks, self.folded_at, self._open, self._opened
        window, max_ranks, several = self.window, self.MAX_RANKS, len(merged.files) > 1
        for index in range(self._done, end):
            rank = ranks[index]
            low, lines = texts[rank]
            line = lines[numbers[index] - low]
            if len(line) > MAX_LINE_BYTES:
                line = line[-MAX_LINE_BYTES:]
            bit = 1 << rank if rank < max_ranks else 0
            groups = open_groups.get(line)
            if groups and bit:
                # the oldest open group of this line that this rank has not printed yet
                while groups and index - first[groups[0]] > window:
                    groups.pop(0)
                group = next((g for g in groups if not masks[g] & bit), None)
                if group is not None:
                    masks[group] |= bit
                    folded_at.append(group)
                    if masks[group] == everyone:
                        groups.remove(group)
                    continue
            group = len(first)
            first.append(index)
            masks.append(bit)
            folded_at.append(group)
            if several and bit:
                if groups is None:
                    open_groups[line] = [group]
                else:
                    groups.append(group)
                opened.append((group, line))
            if len(opened) > 2 * window:  # forget groups too old to take another line
                oldest = index - window
                while opened and first[opened[0][0]] < oldest:
                    old, old_line = opened.popleft()
                    kept = open_groups.get(old_line)
                    if kept is not None and old in kept:
                        kept.remove(old)
                        if not kept:
                            del open_groups[old_line]
        self._done = end

    def ranks_of(self, index: int) -> list[int]:
        mask = self.masks[index]
        return [r for r in range(min(len(self.merged.files), self.MAX_RANKS)) if mask >> r & 1]

    def raw(self, index: int) -> tuple[int | str | None, bytes]:
        """(the rank, or a label of the ranks for a folded line, such as "0-7"), the line."""
        if index < len(self.first):
            rank, line = self.merged.raw(self.first[index])
            ranks = self.ranks_of(index)
            return (rank if len(ranks) <= 1 else rank_label(ranks)), line
        return self.merged.raw(len(self.merged.lines) + index - len(self.first))

    def cacheable(self, index: int) -> bool:
        # a group may still take ranks (its label changes) while it is among the open ones
        return index < len(self.first) and self.first[index] + self.window < self._done

    def find(self, needle: bytes, start: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None:
        at = self.first[start] if start < len(self.first) else len(self.merged.lines) + start - len(self.first)
        while at >= 0:
            hit = self.merged.find(needle, at, backwards, ignore_case)
            if hit is None:
                return None
            if hit >= len(self.merged.lines):
                return len(self.first) + hit - len(self.merged.lines)
            if hit >= len(self.folded_at):
                return None  # in lines not folded yet
            found = self.folded_at[hit]
            # groups stand in the order of their first lines: the first line of a group is the
            # hit that counts (a later copy folded into a group may lie past the next group)
            if self.first[found] == hit:
                return found
            at = hit - 1 if backwards else hit + 1
        return None


def rank_label(ranks: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> "0-3,5"."""
    parts: list[str] = []
    start = prev = ranks[0]
    for rank in [*ranks[1:], None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if rank is not None:
            start = prev = rank
    return ",".join(parts)
