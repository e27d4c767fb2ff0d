"""When each line of a rank log was written: a small index beside the log, logs/rank-K.times.

The rank's own Python output (`print`, logging, tracebacks, tqdm) goes through `TimedLog`, which
writes the bytes to the log unchanged and, when they end a line, appends one text line
"END TIME" to the index: the log's size just after the write and the wall clock then. Every byte
before END was written by TIME. Bytes written around Python (C extensions, a crash message) are
covered by the next entry, or else by the log's mtime.

`LineTimes` reads the index incrementally, as `LogFile` reads the log. The index is a plain
appended file, so a multi-machine run mirrors it home beside the log (runs.keeper.mirror).
"""

from __future__ import annotations

import io
import os
import time
from array import array
from itertools import accumulate
from operator import lt
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer


def times_path(log: Path) -> Path:
    """logs/rank-3.log -> logs/rank-3.times."""
    return Path(log).with_suffix(".times")


class TimedLog(io.RawIOBase):
    """A writable raw stream over `fd` (the rank log) that records when each write ending a line happened."""

    def __init__(self, fd: int, times_fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._times_fd = times_fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Buffer) -> int:
        data = bytes(data)
        written = os.write(self._fd, data)
        if b"\n" in data[:written]:
            try:  # the log is opened O_APPEND: after the write, its offset is the end of the file
                end = os.lseek(self._fd, 0, os.SEEK_CUR)
                os.write(self._times_fd, f"{end} {time.time():.6f}\n".encode())
            except OSError:
                pass  # a full disk or a closed index: the log itself matters more
        return written


def timed_stream(fd: int, times_fd: int, like: io.TextIOWrapper) -> io.TextIOWrapper:
    """A text stream writing to `fd` through `TimedLog`, with the encoding and errors of `like`."""
    return io.TextIOWrapper(io.BufferedWriter(TimedLog(fd, times_fd)), encoding=like.encoding,
                            errors=like.errors, line_buffering=True)


class LineTimes:
    """The index of one log, read from where the last `update` stopped: entries (end offset, time),
    offsets increasing and times never decreasing (an entry that would break that is dropped)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offsets = array("Q")
        self.times = array("d")
        self._read = 0
        self._inode: int | None = None

    @property
    def count(self) -> int:
        return len(self.offsets)

    def reset(self) -> None:
        self.offsets = array("Q")
        self.times = array("d")
        self._read = 0
        self._inode = None

    def update(self) -> None:
        try:
            st = os.stat(self.path)
            if (self._inode is not None and st.st_ino != self._inode) or st.st_size < self._read:
                self.reset()
            self._inode = st.st_ino
            if st.st_size == self._read:
                return
            with open(self.path, "rb") as handle:
                handle.seek(self._read)
                data = handle.read(st.st_size - self._read)
        except OSError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self._read += end + 1
        if self._take_all(data[:end]):
            return
        for line in data[:end].split(b"\n"):
            try:
                offset_text, time_text = line.split()
                offset, when = int(offset_text), float(time_text)
            except ValueError:
                continue  # a damaged entry: the next one covers its bytes
            if self.offsets and offset <= self.offsets[-1]:
                continue
            self.offsets.append(offset)
            self.times.append(max(when, self.times[-1]) if self.times else when)

    def _take_all(self, data: bytes) -> bool:
        """Take entries that are all well formed and in order at once (8 ranks write 8,000 a second); False
        leaves them to be read one by one (a damaged entry, one out of order)."""
        fields = data.split()
        if len(fields) != 2 * (data.count(b"\n") + 1):
            return False
        try:
            offsets = list(map(int, fields[0::2]))
            times = list(map(float, fields[1::2]))
        except ValueError:
            return False
        if (self.offsets and offsets[0] <= self.offsets[-1]) or not all(map(lt, offsets, offsets[1:])):
            return False
        self.offsets.extend(offsets)
        if self.times:
            times[0] = max(times[0], self.times[-1])
        self.times.extend(accumulate(times, max))  # times never go back
        return True
