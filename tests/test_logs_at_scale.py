"""Logs at scale (issue 21): a big rank log shows its end first and counts its front after (lines numbered from
the file's start again), a counted log reads like a fully indexed one, the warnings fold passes over lines
without a warning, one rank's log merges without an index a line, and a search waits for a big log's front.
Sizes here are small: the thresholds are lowered so the same paths run (benchmarks/tui_big_log.py takes the
10-million-line figures)."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest

import tuitrain.runs.view.logfile as logfile
from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import FINISHED
from tuitrain.runs.view.logfile import LogFile
from tuitrain.runs.view.merged_log import MergedLog
from tuitrain.runs.view.warning_fold import DIM, WarningFold
from tuitrain.tui.log_filter import FoldedWarnings

UP = b"\x1b[A"


@pytest.fixture
def small(monkeypatch):
    """A log over 2 KB counts as big, and is read 256 bytes at a time."""
    monkeypatch.setattr(LogFile, "TAIL_FIRST", 1024)
    monkeypatch.setattr(logfile, "CHUNK", 256)


def reference_lines(data: bytes) -> list[bytes]:
    """The complete lines of `data` as the index defines them: a newline right after a cursor-up ends none."""
    lines, start = [], 0
    for m in re.finditer(rb"\n", data):
        if data[max(0, m.start() - 3):m.start()] == UP:
            continue
        lines.append(data[start:m.start()])
        start = m.end()
    return lines


def test_a_big_log_shows_its_end_first_then_numbers_its_lines_from_the_start(tmp_path, small):
    path = tmp_path / "rank-0.log"
    path.write_bytes(b"".join(b"line %05d\n" % i for i in range(1000)))  # 11 KB
    log = LogFile(path)
    assert log.update() > 0
    assert log.indexing and 0 < log.line_count < 1000  # only the end so far
    assert log.line(log.line_count - 1) == b"line 00999"
    assert log.find(b"line 00998") == log.line_count - 2 and log.find(b"line 00005") is None
    generation = log.generation
    assert log.update() == -1  # the front counted: every line numbered from the file's start
    assert not log.indexing and log.generation == generation + 1
    assert log.line_count == 1000 and log.line(0) == b"line 00000" and log.line(500) == b"line 00500"
    assert log.find(b"line 00005") == 5 and log.find(b"LINE 00700", 999, backwards=True) == 700
    assert log.lines(498, 502) == [b"line %05d" % i for i in range(498, 502)]
    with open(path, "ab") as handle:
        handle.write(b"line 01000\npart")
    assert log.update() == 1 and log.count == 1002 and log.line(1001) == b"part"


def test_a_counted_log_reads_every_line_and_offset_as_a_whole_index_would(tmp_path, small):
    pieces = [b"a line\n", b"step 12 loss 0.5\n", UP + b"\n", b"bar 10%\r", b"bar 50%" + UP, b"\n", b"x" * 300 + b"\n",
              b"\x1b[", b"A\n", "é\n".encode()]
    for seed in range(40):
        rnd = random.Random(seed)
        path = tmp_path / f"rank-{seed}.log"
        path.write_bytes(b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 600))))
        log = LogFile(path)
        log.update()
        log.update()
        for _ in range(rnd.randint(0, 2)):  # written to after the front was counted
            with open(path, "ab") as handle:
                handle.write(b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 50))))
            log.update()
        data = path.read_bytes()
        lines = reference_lines(data)
        assert not log.indexing and log.line_count == len(lines), seed
        assert [log.line(i) for i in range(len(lines))] == [line[-logfile.MAX_LINE_BYTES:] for line in lines], seed
        start = 0
        for i, line in enumerate(lines):
            assert log.line_start(i) == start and log.line_at_offset(start + len(line)) == i, (seed, i)
            start += len(line) + 1
            assert log.line_end(i) == start
        a, b = sorted(rnd.randrange(0, len(lines) + 1) for _ in range(2))
        assert log.lines(a, b) == lines[a:b]
        partial = data[sum(len(line) + 1 for line in lines):]
        shown = lines + ([partial] if partial else [])  # the unfinished line is searched too
        assert log.has_partial == bool(partial) and (not partial or log.line(len(lines)) == partial[-logfile.MAX_LINE_BYTES:])
        for needle in (b"step", b"LOSS", b"bar", "é".encode()):
            hits = [i for i, line in enumerate(shown) if needle.lower() in line.lower()]
            for start_line in range(0, len(lines), 37):
                assert log.find(needle, start_line) == next((h for h in hits if h >= start_line), None), (seed, needle)
                assert log.find(needle, start_line, backwards=True) == next(
                    (h for h in reversed(hits) if h <= start_line), None), (seed, needle)


class CountingSource:
    """A one-log source that counts the lines read one by one."""

    def __init__(self, log: LogFile) -> None:
        self.merged = MergedLog([log])
        self.reads = 0

    def __getattr__(self, name):
        return getattr(self.merged, name)

    def raw(self, index):
        self.reads += 1
        return self.merged.raw(index)


def fold_line_by_line(lines: list[bytes]) -> list[bytes]:
    """What the warnings fold shows, judging every line in turn (one rank)."""
    from tuitrain.runs.view.logfile import plain_text

    fold, shown = WarningFold(), []
    for raw in lines:
        text = plain_text(raw)
        kept = fold.fold(None, text)
        if kept is not None:
            shown.append(raw if kept is text else DIM.format(kept).encode())
    return shown


def test_the_warnings_fold_passes_over_lines_without_a_warning(tmp_path):
    warning = b"/x/fsdp.py:12: FutureWarning: state_dict_type is deprecated"
    lines = [b"step %d" % i for i in range(20_000)]
    for at in (5_000, 12_000, 19_000):
        lines[at:at] = [warning, b"  warnings.warn(", b"step again"]
    path = tmp_path / "rank-0.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    log = LogFile(path)
    log.update()
    source = CountingSource(log)
    source.merged.sync()
    folded = FoldedWarnings(source)
    folded.sync()
    assert source.reads < 50  # the warnings and the line after each, not 20,009 lines
    assert [folded.raw(i)[1] for i in range(folded.count)] == fold_line_by_line(lines)
    assert folded.count == len(lines) - 2  # two source lines folded away, two warnings shortened
    assert len(folded.removed) == 2
    at = folded.find(b"step 19000", 0)
    assert at is not None and folded.raw(at)[1] == b"step 19000"


def test_one_ranks_log_merges_without_an_index_a_line(tmp_path):
    path = tmp_path / "rank-0.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    log = LogFile(path)
    log.update()
    merged = MergedLog([log])
    merged.sync()
    assert isinstance(merged.lines, range) and len(merged.lines) == merged.count == 1000
    assert merged.raw(999) == (0, b"line 999") and merged.find(b"line 5", 10) == 50


def test_the_log_filter_and_the_log_view_do_not_import_each_other():
    import tuitrain.tui.log_filter as log_filter

    tree = ast.parse(Path(log_filter.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "tuitrain.tui.widgets.log_view" not in imported and "tuitrain.tui.line_source" in imported


def test_a_search_in_a_big_log_finds_a_line_of_its_front(base, monkeypatch):  # noqa: F811
    monkeypatch.setattr(LogFile, "TAIL_FIRST", 4096)
    monkeypatch.setattr(logfile, "CHUNK", 1024)
    log = base / "runs" / FINISHED / "logs" / "rank-0.log"
    log.write_bytes(b"THE EARLY MARKER\n" + log.read_bytes()
                    + b"".join(b"filler line %05d\n" % i for i in range(2000)) + b"THE LAST LINE\n")
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        await pilot.press("right_square_bracket")  # Rank 0
        view = monitor.active_view()
        assert view.id == "log-rank-0"
        await until(pilot, lambda: "THE LAST LINE" in " ".join(view.visible_text()), what="the last line")
        await pilot.press("slash", *"early marker", "enter")
        await until(pilot, lambda: view.current is not None, 30, what="the marker found")
        assert "THE EARLY MARKER" in view.line_text(view.current).plain and view.current == 0
        rank0 = monitor.run_watch.ranks[0]
        assert not rank0.indexing and rank0.line(rank0.line_count - 1) == b"THE LAST LINE"

    run(script, app)


class GrowingSource:
    """A source of `count` lines that counts what the view asks of it."""

    generation = 0
    indexing = False

    def __init__(self) -> None:
        self.count = 3
        self.asked = 0

    def raw(self, index):
        return None, b"line %d" % index

    def cacheable(self, index):
        self.asked += 1
        return True

    def find(self, needle, start=0, backwards=False, ignore_case=True):
        return None


def test_a_view_told_of_millions_of_new_lines_asks_only_about_its_old_end():
    from textual.app import App

    from tuitrain.tui.widgets.log_view import LogView

    source = GrowingSource()

    class One(App):
        def compose(self):
            yield LogView(source, id="log")

    app = One()

    async def main():
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(LogView)
            view.sync()
            view.refresh_source()
            await pilot.pause()
            source.count = 5_000_000  # a big log's front counted: its lines numbered from the file's start
            source.asked = 0
            view.sync()  # as the monitor's worker does after each poll
            view.refresh_source()
            await pilot.pause()
            assert view.line_count == 5_000_000 and source.asked < 10_000
            assert view.visible_text()[-1] == "line 4999999"

    import asyncio

    asyncio.run(main())


def test_line_times_read_in_bulk_match_them_read_one_by_one(tmp_path):
    from tuitrain.rundir.linetimes import LineTimes

    class OneByOne(LineTimes):
        def _take_all(self, data):
            return False

    for seed in range(200):
        rnd = random.Random(seed)
        path = tmp_path / f"rank-{seed}.times"
        path.write_bytes(b"")
        bulk, single = LineTimes(path), OneByOne(path)
        offset, when = 0, 100.0
        for _ in range(rnd.randint(1, 5)):
            entries = []
            for _ in range(rnd.randint(0, 20)):
                kind = rnd.random()
                offset = max(1, offset + (rnd.choice([1, 5, 80]) if kind > 0.05 else -rnd.randint(0, 50)))
                when += rnd.choice([0.001, -0.01, 0.5])  # a clock set back: times never go back in the index
                entries.append(b"damaged" if kind < 0.03 else b"%d" % offset if kind < 0.05 else b"%d %.6f" % (offset, when))
            with open(path, "ab") as handle:
                handle.write(b"".join(e + b"\n" for e in entries) + (b"123 4" if rnd.random() < 0.3 else b""))
            bulk.update()
            single.update()
            assert list(bulk.offsets) == list(single.offsets) and list(bulk.times) == list(single.times), seed
