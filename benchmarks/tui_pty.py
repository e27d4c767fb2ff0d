"""A program in a pseudo-terminal, as a person would run it: what it paints, when, and what it costs.

Used by the tui_* benchmarks (standard library and psutil only).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fixed run directories of the app's tests
sys.path.insert(0, str(ROOT / "benchmarks"))

ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]|\x1b\][^\x07]*\x07")


class PtyProgram:
    """Start `argv` on a pty of `size`; a thread reads everything it paints, with arrival times."""

    def __init__(self, argv: list[str], size: tuple[int, int] = (80, 24), env: dict[str, str] | None = None,
                 cwd: Path | None = None, on_chunk=None) -> None:
        self.master, slave = pty.openpty()
        cols, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        environment.update(env or {})
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=environment, cwd=cwd,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.text = bytearray()  # everything painted, escape sequences removed
        self.bytes_read = 0
        self.on_chunk = on_chunk
        self._found: dict[bytes, float] = {}
        self._waiting: set[bytes] = set()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        tail = b""
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.5)
            except (OSError, ValueError):
                return
            if not ready:
                if self.proc.poll() is not None:
                    return
                continue
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            now = time.perf_counter()
            self.bytes_read += len(chunk)
            plain = ANSI.sub(b"", tail + chunk)
            with self._lock:
                self.text += ANSI.sub(b"", chunk)
                if len(self.text) > 4_000_000:
                    del self.text[:-1_000_000]
            tail = chunk[-64:]
            if self.on_chunk is not None:
                self.on_chunk(now, plain)
            with self._lock:
                for marker in list(self._waiting):
                    if marker not in self._found and marker in plain:
                        self._found[marker] = now

    def wait_for(self, marker: str | bytes, timeout: float = 30.0, since_start: bool = True) -> float:
        """Seconds from start (or from now) until `marker` was painted."""
        needle = marker.encode() if isinstance(marker, str) else marker
        asked = time.perf_counter()
        with self._lock:
            self._waiting = set(self._waiting) | {needle}
            if needle in self.text and needle not in self._found:
                self._found[needle] = asked
        deadline = asked + timeout
        while time.perf_counter() < deadline:
            with self._lock:
                if needle in self._found:
                    found = self._found.pop(needle)
                    self._waiting = set(self._waiting) - {needle}
                    return found - (self.started if since_start else asked)
            time.sleep(0.002)
        raise TimeoutError(f"{needle!r} not painted within {timeout}s; last output: {bytes(self.text[-600:])!r}")

    def forget(self) -> None:
        with self._lock:
            self.text.clear()

    def send(self, keys: str | bytes) -> None:
        os.write(self.master, keys.encode() if isinstance(keys, str) else keys)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        try:
            os.close(self.master)
        except OSError:
            pass
