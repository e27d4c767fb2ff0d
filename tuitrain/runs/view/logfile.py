"""A rank log as an index of newline byte offsets, its lines read on demand (Toolong's shape).

`LogFile.update()` reads only the bytes written since the last call and records where each new
line starts; `LogFile.line(i)` reads one line with `os.pread`. Nothing ever holds the whole file:
memory is 8 bytes a line for the index, whatever the log's size.

What a terminal would show of a line is `display_text`: tqdm redraws a bar with carriage returns,
so only the text after the line's last `\\r` is kept (ANSI colours are left for the viewer). A
nested bar (the Trainer's evaluation bar under the training bar) is drawn one row down and ends
with a cursor-up, so that the next newline comes back to the same row: a line ending in a
cursor-up goes on into the next line (one line of the index), and the newest drawing shows, as a
training bar's carriage returns do.

Several ranks' logs seen as one are `runs.view.merged_log` (`MergedLog`, `FoldedLog`), over these files.
"""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_right
from collections import OrderedDict
from pathlib import Path

from tuitrain.rundir.linetimes import LineTimes, times_path

CHUNK = 4 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer line is read from its end (the part a terminal would show)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f]")
_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")  # CSI, OSC, two-byte
TRACEBACK = b"Traceback (most recent call last)"
UP = b"\x1b[A"  # cursor up
_NEWLINE = re.compile(rb"\n")
_UP = re.compile(re.escape(UP))
_LINE_END = re.compile(rb"(?<!\x1b\[A)\n")  # a newline right after a cursor-up comes back to the row drawn


def _line_starts(data: bytes, base: int) -> list[int]:
    """Where each line after a line end in `data` starts (`data` begins at a line start, offset `base`)."""
    pattern = _LINE_END if _UP.search(data) else _NEWLINE
    return [base + m.end() for m in pattern.finditer(data)]


def _count_line_ends(data: bytes, end: int) -> int:
    """Line ends in `data[:end]` (which begins at a line start)."""
    ends = data.count(b"\n", 0, end)
    # the regex finds a cursor-up faster than bytes do where colour codes put an escape on every line
    return ends - data.count(UP + b"\n", 0, end) if _UP.search(data, 0, end) else ends


def _last_line_end(data: bytes) -> int:
    """The last line end in `data` (-1: none)."""
    at = data.rfind(b"\n")
    while at >= 0 and data[max(0, at - len(UP)):at] == UP:
        at = data.rfind(b"\n", 0, at)
    return at


def _line_start_after(fd: int, offset: int) -> int:
    """The first line start after `offset` (0: none found near it)."""
    try:
        data = os.pread(fd, 64 * 1024 + len(UP), offset - len(UP))
    except OSError:
        return 0
    found = _LINE_END.search(data, len(UP))
    return offset - len(UP) + found.end() if found else 0


def display_text(raw: bytes) -> str:
    """The text a terminal leaves on screen for one line: after its last carriage return."""
    return _shown(raw.decode("utf-8", errors="replace"))


def plain_text(raw: bytes) -> str:
    """`display_text` without terminal codes (colours, titles, cursor moves): for a pipe or a file."""
    text = raw.decode("utf-8", errors="replace").replace("\x1b[A", "\r")
    return _shown(_ESCAPE.sub("", text))


def _shown(text: str) -> str:
    text = text.rstrip("\n")
    if text.endswith("\r"):
        text = text.rstrip("\r")
    if "\x1b[A" in text:  # cursor up (tqdm's nested bars): what follows is drawn afresh
        text = text.replace("\x1b[A", "\r")
    if "\n" in text:  # a line that went on past a cursor-up: the next drawing of the same row
        text = text.replace("\n", "\r")
    if "\r" in text:
        parts = text.split("\r")
        shown = parts[-1]
        if not shown.strip():
            shown = next((p for p in reversed(parts) if p.strip()), "")
        text = shown
    if "\t" in text:
        text = text.expandtabs()
    return _CONTROL.sub("", text)


class _Index:
    """Where a log's lines start. The log's end is dense (`starts`: every line from line `base` on, then the
    partial tail); what lies before it may be counted only (`block_offsets` / `block_lines`: blocks of a few MB,
    each starting at a line start, with the number of its first line), its lines found again when read. A big
    log counts its newlines at bytes.count's speed and holds a few numbers per MB, not 8 bytes a line.

    Arrays only grow; an index that changes otherwise is replaced as a whole (a reader takes one)."""

    __slots__ = ("base", "block_lines", "block_offsets", "starts")

    def __init__(self, starts: array[int], base: int = 0, block_offsets: array[int] | None = None,
                 block_lines: array[int] | None = None) -> None:
        self.starts = starts
        self.base = base
        self.block_offsets = block_offsets if block_offsets is not None else array("Q")
        self.block_lines = block_lines if block_lines is not None else array("Q")


class LogFile:
    """One log file: `line_count` complete lines, plus an unfinished last line (`has_partial`).

    `update()` is meant for one worker thread; `line()` may be called from another (the index
    only grows, and a reset replaces it as a whole).

    A big log (over 2 × `TAIL_FIRST`) is read from its end first: the first `update()` indexes its last
    `TAIL_FIRST` bytes (numbering lines from there, so its last line shows at once whatever its size), the
    next one counts the lines before them, and the lines are numbered from the file's start again (a new
    `generation`). `indexing` says the front is still to come.
    """

    TAIL_FIRST = 8 * 1024 * 1024
    BLOCK_CACHE = 16  # counted blocks whose line starts are kept (the ones read last)

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._idx = _Index(array("Q", [0]))
        self._scanned = 0  # bytes looked at so far (the partial tail included)
        self._carry = b""  # the last bytes indexed (a cursor-up may straddle two reads)
        self._front = 0  # bytes before it not indexed yet (a big log's end is indexed first)
        self._blocks: OrderedDict[tuple[int, int], array[int]] = OrderedDict()  # (index id, block) -> starts
        self._clean: dict[tuple[bytes, bool], tuple[int, int]] = {}  # (needle, any case) -> bytes without it
        self._fd: int | None = None
        self._inode: int | None = None
        self.generation = 0  # bumped when the file was truncated or replaced, or its front indexed
        self.times = LineTimes(times_path(self.path))  # when its lines were written, where the writer noted it
        self.mtime = 0.0  # the file's last write, as the last update saw it

    # ----------------------------------------------------------------------------- reading
    @property
    def line_count(self) -> int:
        idx = self._idx
        return idx.base + len(idx.starts) - 1

    @property
    def size(self) -> int:
        return self._scanned

    @property
    def has_partial(self) -> bool:
        return self._scanned > self._idx.starts[-1]

    @property
    def indexing(self) -> bool:
        """Whether the lines before the indexed end are still to be counted (the next update does it)."""
        return self._front > 0

    def _open(self) -> int | None:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY)
                self._inode = os.fstat(self._fd).st_ino
            except OSError:
                self._fd = None
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def _read(self, start: int, end: int) -> bytes:
        fd = self._open()
        if fd is None or end <= start:
            return b""
        if end - start > MAX_LINE_BYTES:
            start = end - MAX_LINE_BYTES
        try:
            return os.pread(fd, end - start, start)
        except OSError:
            return b""

    def _block_starts(self, idx: _Index, block: int) -> array[int]:
        """The line starts of a counted block (found again by reading it; the last few are kept)."""
        key = (id(idx), block)
        found = self._blocks.get(key)
        if found is not None:
            self._blocks.move_to_end(key)
            return found
        begin = idx.block_offsets[block]
        end = idx.block_offsets[block + 1] if block + 1 < len(idx.block_offsets) else idx.starts[0]
        fd = self._open()
        data = b""
        if fd is not None:
            try:
                data = os.pread(fd, end - begin, begin)
            except OSError:
                data = b""
        starts = array("Q", [begin])
        starts.extend(_line_starts(data, begin))
        del starts[-1:]  # the block's last newline starts the next block
        self._blocks[key] = starts
        while len(self._blocks) > self.BLOCK_CACHE:
            self._blocks.popitem(last=False)
        return starts

    def _start(self, idx: _Index, index: int) -> int:
        """Where line `index` starts (0 <= index <= line_count; line_count: the partial tail)."""
        if index >= idx.base:
            return idx.starts[index - idx.base]
        block = bisect_right(idx.block_lines, index) - 1
        starts = self._block_starts(idx, block)
        at = index - idx.block_lines[block]
        return starts[at] if at < len(starts) else idx.starts[0]  # a block the file no longer holds

    def line(self, index: int) -> bytes:
        """The raw bytes of line `index` (without its newline); the partial tail is line_count."""
        idx = self._idx
        last = idx.base + len(idx.starts) - 1
        if 0 <= index < last:
            return self._read(self._start(idx, index), self._start(idx, index + 1) - 1)
        if index == last:
            return self._read(idx.starts[-1], self._scanned)
        return b""

    def lines(self, start: int, end: int) -> list[bytes]:
        """Complete lines `start` to `end` (exclusive), read with one pread (no newlines)."""
        idx = self._idx
        end = min(end, idx.base + len(idx.starts) - 1)
        if end <= start:
            return []
        bounds = [self._start(idx, i) for i in range(start, end + 1)]
        first, last = bounds[0], bounds[-1]
        fd = self._open()
        if fd is None:
            return [b""] * (end - start)
        try:
            data = os.pread(fd, last - first, first)
        except OSError:
            return [b""] * (end - start)
        return [data[bounds[i] - first:bounds[i + 1] - 1 - first] for i in range(end - start)]

    @property
    def count(self) -> int:
        """Lines to show: the complete ones and the unfinished last one."""
        return self.line_count + (1 if self.has_partial else 0)

    def raw(self, index: int) -> tuple[int | None, bytes]:
        return None, self.line(index)

    def cacheable(self, index: int) -> bool:
        return index < self.line_count

    def line_text(self, index: int) -> str:
        return display_text(self.line(index))

    def line_start(self, index: int) -> int:
        idx = self._idx
        return self._start(idx, max(0, min(index, idx.base + len(idx.starts) - 1)))

    def line_end(self, index: int) -> int:
        """The offset just past complete line `index`'s newline."""
        return self._start(self._idx, index + 1)

    def line_at_offset(self, offset: int) -> int:
        idx = self._idx
        if offset >= idx.starts[0] or not idx.block_offsets:
            return idx.base + max(0, bisect_right(idx.starts, offset) - 1)
        block = max(0, bisect_right(idx.block_offsets, offset) - 1)
        return idx.block_lines[block] + max(0, bisect_right(self._block_starts(idx, block), offset) - 1)

    def _past_clean(self, key: tuple[bytes, bool], offset: int) -> int:
        """`offset`, or past the bytes from it known not to hold the needle (a search done before)."""
        clean = self._clean.get(key)
        return clean[1] if clean is not None and clean[0] <= offset < clean[1] else offset

    def _note_clean(self, key: tuple[bytes, bool], start: int, end: int) -> None:
        """No match of the needle starts in bytes `start` to `end`: a later search passes over them (the
        warnings fold searches every log view's lines for the same needle, the views of one log alike)."""
        if end <= start:
            return
        clean = self._clean.pop(key, None)
        if clean is not None and clean[0] <= end and start <= clean[1]:
            start, end = min(start, clean[0]), max(end, clean[1])
        self._clean[key] = clean = (start, end)
        if len(self._clean) > 8:
            self._clean = {key: clean}  # a few needles are searched again and again; forget the others

    # ----------------------------------------------------------------------------- watching
    def update(self) -> int:
        """Index the bytes written since the last call; returns how many lines were completed.

        Returns -1 when the file was truncated or replaced (the index starts over), or when the
        lines before a big log's end were counted (the lines are numbered from the file's start).
        """
        try:
            st = os.stat(self.path)
        except OSError:
            return 0
        reset = False
        if (self._inode is not None and st.st_ino != self._inode) or st.st_size < self._scanned:
            self.close()
            self._idx = _Index(array("Q", [0]))
            self._blocks.clear()
            self._clean = {}
            self._scanned = 0
            self._front = 0
            self._carry = b""
            self.generation += 1
            self.times.reset()
            reset = True
        self.mtime = st.st_mtime
        fd = self._open()
        if fd is None:
            return 0
        before = self.line_count
        size = st.st_size
        front_waits = bool(self._front)  # counted on the call after the one that indexed the end
        if self._scanned == 0 and size > 2 * self.TAIL_FIRST:
            tail = _line_start_after(fd, size - self.TAIL_FIRST)
            if tail:
                self._front = self._scanned = tail
                self._idx = _Index(array("Q", [tail]))
        starts = self._idx.starts
        while self._scanned < size:
            want = min(CHUNK, size - self._scanned)
            try:
                data = os.pread(fd, want, self._scanned)
            except OSError:
                break
            if not data:
                break
            self._index(starts, data, self._scanned)
            self._scanned += len(data)
        if front_waits and not reset:
            self._count_front(fd)
            reset = not self._front
        self.times.update()  # after the log: its entries then cover the lines just read
        return -1 if reset else self.line_count - before

    def _count_front(self, fd: int) -> None:
        """Count the lines before the indexed end, in blocks; then number every line from the file's start."""
        offsets, lines = array("Q"), array("Q")
        at, line, front = 0, 0, self._front
        while at < front:
            want = min(CHUNK, front - at)
            try:
                data = os.pread(fd, want, at)
            except OSError:
                return
            if len(data) < want:
                return  # the file shrank under us: the next update starts over
            cut = _last_line_end(data) if at + want < front else len(data) - 1
            while cut < 0:  # no line ends in the chunk: take more
                want = min(2 * want, front - at)
                try:
                    data = os.pread(fd, want, at)
                except OSError:
                    return
                cut = _last_line_end(data) if at + want < front else len(data) - 1
            offsets.append(at)
            lines.append(line)
            line += _count_line_ends(data, cut + 1)
            at += cut + 1
        idx = self._idx
        self._front = 0
        self._idx = _Index(idx.starts, line, offsets, lines)
        self.generation += 1

    def _index(self, starts: array[int], data: bytes, base: int) -> None:
        carry, self._carry = self._carry, (self._carry + data[-len(UP):])[-len(UP):]
        if not _UP.search(data) and UP not in carry + data[:len(UP)]:
            starts.extend(base + m.end() for m in _NEWLINE.finditer(data))
            return
        # a newline right after a cursor-up comes back to the row drawn: no new line there
        joined = carry + data
        starts.extend(base - len(carry) + m.end() for m in _LINE_END.finditer(joined, len(carry)))

    def find(self, needle: bytes, start_line: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None:
        """The first line at or after `start_line` (or at or before, backwards) holding `needle`.

        Reads the file in chunks from the index's offsets (a worker's job on a big file).
        """
        if not needle:
            return None
        total = self.line_count + (1 if self.has_partial else 0)
        if total == 0:
            return None
        if ignore_case and needle.lower() == needle.upper():
            ignore_case = False  # nothing to fold: the bytes are searched as they are
        if ignore_case:
            needle = needle.lower()
        fd = self._open()
        if fd is None:
            return None
        if not backwards:
            key = (needle, ignore_case)
            start = self.line_start(max(0, start_line))
            offset = self._past_clean(key, start)
            end = self._scanned
            while offset < end:
                want = min(CHUNK, end - offset)
                data = os.pread(fd, want + len(needle) - 1, offset)
                hit = (data.lower() if ignore_case else data).find(needle)
                if hit >= 0:
                    self._note_clean(key, start, offset + hit)
                    return self.line_at_offset(offset + hit)
                offset += want
            self._note_clean(key, start, end - len(needle) + 1)
            return None
        stop = self.line_start(min(start_line + 1, total)) if start_line + 1 < total else self._scanned
        front = self._front  # a big log's front not indexed yet holds no line to find
        while stop > front:
            begin = max(front, stop - CHUNK)
            data = os.pread(fd, min(stop + len(needle) - 1, self._scanned) - begin, begin)
            hit = (data.lower() if ignore_case else data).rfind(needle, 0, stop - begin + len(needle) - 1)
            if hit >= 0:
                return self.line_at_offset(begin + hit)
            stop = begin
        return None
