"""Watching another workstation's runs over one long-lived ssh connection.

There, `tuitrain workstations --stream` (`serve`) polls its runs folder and writes `wire` lines: `hello` (its
tuitrain version) once, `runs` (every run's row) whenever they change, with `--gpus` also `gpus` (the box's GPU
sample, as `tuitrain gpus --json` has it) at most every GPU_SECONDS and only when it changed, `beat` when it has
said nothing for BEAT_SECONDS. It ends when its stdin closes (the ssh link ended) or when home has said nothing for
HOME_SILENCE_SECONDS (a link cut without a close): nothing stays running there.

Here, `RunsStream` holds that connection: it calls back with the box's rows (and, when asked, its GPUs), or with why the box cannot be
watched (one line naming it) when ssh fails, the version differs, or no line came for SILENCE_SECONDS; then it
tries again, less and less often. `start` and `stop` never wait on the network.
"""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from tuitrain.remote import ssh, wire
from tuitrain.remote.workstations import Workstation, problem_line, version_problem

STREAM_ARGS = ("workstations", "--stream")
GPUS_ARG = "--gpus"  # the stream carries the box's GPUs too
POLL_SECONDS = 1.0  # how often the box looks at its runs folder
GPU_SECONDS = 2.0  # how often, at most, the box samples and sends its GPUs
BEAT_SECONDS = 2.0  # each side says something at least this often
SILENCE_SECONDS = 7.0  # a box silent this long is shown unreachable (its beats stopped coming)
FIRST_ANSWER_SECONDS = 25.0  # a box's tuitrain may take this long to start (a cold, busy machine)
HOME_SILENCE_SECONDS = 30.0  # the box ends its stream when home said nothing for this long
RETRY_SECONDS = (5.0, 10.0, 20.0, 40.0, 60.0)  # waits before each new try after a failure, then the last again
STDERR_KEPT = 8192


# -- there ----------------------------------------------------------------------------------------------------


def listen_for_home(inp: IO[bytes]) -> tuple[list[float], threading.Event]:
    """A thread that reads what home sends (its beats) on a box's side of a long-lived connection: [when home was
    last heard] and an event set once home's side closes."""
    heard = [time.monotonic()]
    closed = threading.Event()

    def listen() -> None:
        for _ in iter(inp.readline, b""):
            heard[0] = time.monotonic()
        closed.set()

    threading.Thread(target=listen, daemon=True, name="home").start()
    return heard, closed


def serve(poll: Callable[[], list[dict[str, Any]]], version: str, out: IO[bytes], inp: IO[bytes],
          poll_seconds: float = POLL_SECONDS, home_silence: float | None = HOME_SILENCE_SECONDS,
          gpus: Callable[[], Mapping[str, object]] | None = None, gpu_seconds: float = GPU_SECONDS) -> int:
    """Stream `poll()`'s rows (and `gpus()`'s sample, at most every `gpu_seconds`) to `out` until `inp` closes,
    home falls silent (`home_silence`, None: never) or `out` is gone. Returns the exit status (0)."""
    heard, closed = listen_for_home(inp)
    if not wire.send(out, wire.encode("hello", version=version)):
        return 0
    sent: list[dict[str, Any]] | None = None
    sample: Mapping[str, object] | None = None
    said = time.monotonic()
    sampled = -gpu_seconds
    while not closed.is_set():
        rows = poll()
        now = time.monotonic()
        message = b""
        if rows != sent:
            message, sent = wire.encode("runs", rows=rows), rows
        if gpus is not None and now - sampled >= gpu_seconds:
            sampled, latest = now, gpus()
            if latest != sample:
                message, sample = message + wire.encode("gpus", sample=latest), latest
        if not message and now - said >= BEAT_SECONDS:
            message = wire.encode("beat")
        if message:
            if not wire.send(out, message):
                return 0
            said = now
        if home_silence is not None and now - heard[0] > home_silence:
            return 0
        closed.wait(poll_seconds)
    return 0


# -- here -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostNews:
    """What a watched box said: its runs (each a row as a dict, newest first), its GPUs (`tuitrain gpus --json`'s
    `gpu_sample`; only to `on_gpus`), or why it is not watched."""

    host: str
    rows: list[dict[str, Any]] | None = None
    problem: str | None = None
    gpus: dict[str, Any] | None = None


class RunsStream:
    """One workstation watched: `start()`, then `on_news` is called (from this stream's own thread) with each
    change of its runs and each failure, and `on_gpus` (when given: the box then sends them) with each change of
    its GPUs and each failure too; `stop()` ends the stream there and here."""

    def __init__(self, station: Workstation, version: str, on_news: Callable[[HostNews], None], *,
                 on_gpus: Callable[[HostNews], None] | None = None,
                 silence: float = SILENCE_SECONDS, first_answer: float = FIRST_ANSWER_SECONDS,
                 retry: tuple[float, ...] = RETRY_SECONDS) -> None:
        self.station = station
        self.version = version
        self.on_news = on_news
        self.on_gpus = on_gpus
        self.silence = silence
        self.first_answer = first_answer
        self.retry = retry
        self._stopped = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch {station.host}")

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 0.0) -> None:
        """End the stream: its stdin closed (the box's tuitrain ends), ssh killed a moment later. Waits up to
        `wait` seconds for all that (0: returns at once)."""
        self._stopped.set()
        with self._lock:
            proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        if wait > 0 and self._thread.is_alive():
            self._thread.join(wait)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            problem, answered = self._connection()
            if self._stopped.is_set():
                return
            failures = 0 if answered else failures + 1
            self.on_news(HostNews(self.station.host, problem=problem))
            if self.on_gpus is not None:  # its GPUs' watchers learn it too: what they show may be old
                self.on_gpus(HostNews(self.station.host, problem=problem))
            self._stopped.wait(self.retry[min(max(failures - 1, 0), len(self.retry) - 1)])

    def _argv(self) -> list[str]:
        """The command the box runs for this stream."""
        return self.station.tuitrain((*STREAM_ARGS, GPUS_ARG) if self.on_gpus is not None else STREAM_ARGS)

    def _opened(self, stdin: IO[bytes]) -> None:
        """What home says first on a new connection (nothing: the stream only listens for its end)."""

    def _connection(self) -> tuple[str, bool]:
        """One ssh connection, until it fails: (why, whether the box answered at all)."""
        station = self.station
        argv = self._argv()
        try:
            proc = ssh.start(station.host, argv, station.options(), stdin=subprocess.PIPE, text=False)
        except ValueError as exc:
            return f"{station.host}: {exc}", False
        except OSError as exc:
            return f"{station.host}: cannot run the ssh client ({exc.strerror})", False
        with self._lock:
            self._proc = proc
        if proc.stdin is not None:
            self._opened(proc.stdin)
            if self._stopped.is_set():  # stop() came while ssh started
                proc.stdin.close()
        try:
            return self._read(proc, argv)
        finally:
            self._end(proc)

    def _read(self, proc: subprocess.Popen[bytes], argv: list[str]) -> tuple[str, bool]:
        assert proc.stdout is not None and proc.stderr is not None
        started = time.monotonic()
        heard: float | None = None
        told = started
        pending = b""
        err = b""
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        selector.register(proc.stderr, selectors.EVENT_READ)
        open_pipes = 2
        with selector:
            while open_pipes and not self._stopped.is_set():
                now = time.monotonic()
                deadline = (heard + self.silence) if heard is not None else started + self.first_answer
                if now >= deadline:
                    waited = self.silence if heard is not None else self.first_answer
                    return (f"{self.station.host}: no word for {waited:g} s (slow, or cut off the network) — check "
                            f"the machine (`ssh {self.station.host} true`) and the network"), heard is not None
                if now - told >= BEAT_SECONDS:
                    told = now
                    self._tell_home_is_here(proc)
                for key, _ in selector.select(min(deadline - now, BEAT_SECONDS, 0.5)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        open_pipes -= 1
                    elif key.fileobj is proc.stderr:
                        err = (err + chunk)[-STDERR_KEPT:]
                    else:
                        heard = time.monotonic()
                        pending += chunk
                        *lines, pending = pending.split(b"\n")
                        for line in lines:
                            problem = self._message(line)
                            if problem:  # a box that will not do: asked again less and less often
                                return problem, False
        if self._stopped.is_set():
            return "", heard is not None
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        text = err.decode("utf-8", "replace")
        unknown = re.search(r"unrecognized arguments: (--stream|--gpus)", text) if heard is None else None
        if unknown:  # a tuitrain from before the stream (or before its GPUs)
            lacks = " ".join(STREAM_ARGS) if unknown.group(1) == "--stream" else " ".join((*STREAM_ARGS, GPUS_ARG))
            return version_problem(self.station, f"without `{lacks}`", self.version) or "", False
        result = ssh.RemoteResult(self.station.host, argv, code, "", text, time.monotonic() - started,
                                  problem=ssh.classify(self.station.host, code, text, argv))
        return (problem_line(self.station, result)
                or f"{self.station.host}: its tuitrain stopped streaming its runs (exit {code})"), heard is not None

    def _message(self, line: bytes) -> str | None:
        """Act on one line from the box; why to give up on it, or None."""
        if not line.strip():
            return None
        try:
            message = wire.decode(line)
        except wire.WireError:
            return None  # a login shell's words before ours
        if message["t"] == "hello":
            return version_problem(self.station, str(message.get("version", "?")), self.version)
        return self._act(message)

    def _act(self, message: dict[str, Any]) -> str | None:
        """Act on one of the box's messages after its hello; why to give up on it, or None."""
        kind = message["t"]
        if kind == "runs":
            rows = message.get("rows")
            if isinstance(rows, list):
                self.on_news(HostNews(self.station.host, rows=[r for r in rows if isinstance(r, dict)]))
        elif kind == "gpus" and self.on_gpus is not None and isinstance(message.get("sample"), dict):
            self.on_gpus(HostNews(self.station.host, gpus=message["sample"]))
        return None

    def _tell_home_is_here(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdin is not None and not proc.stdin.closed:
            wire.send(proc.stdin, wire.encode("beat"))

    def _end(self, proc: subprocess.Popen[bytes]) -> None:
        """Close its stdin (the box's tuitrain ends on that), give ssh a moment, then kill it."""
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            ssh.kill_group(proc, wait=5)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        with self._lock:
            self._proc = None
