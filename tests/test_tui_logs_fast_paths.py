"""Logs at scale (issue 21), the paths that make a 10-million-line log quick to search right after it opened and 8
busy ranks cheap to follow: the monitor counts a big log's front as soon as its end is on screen, the warnings fold
looks for a "W" before "Warning: ", a case-blind search looks for the needle's caseless part before lowering
bytes, and a plain line is drawn without Rich text. Each keeps what the slower path showed."""

from __future__ import annotations

import asyncio
import random

import pytest

import tuitrain.runs.view.logfile as logfile
from test_logs_at_scale import fold_line_by_line
from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import FINISHED
from tuitrain.runs.view.logfile import LogFile
from tuitrain.runs.view.merged_log import MergedLog
from tuitrain.tui import log_filter
from tuitrain.tui.log_filter import FoldedWarnings, caseless_part


class Recording:
    """A one-log source that notes each needle it is asked to find."""

    def __init__(self, log: LogFile) -> None:
        self.merged = MergedLog([log])
        self.merged.sync()
        self.needles: list[tuple[bytes, bool]] = []

    def __getattr__(self, name):
        return getattr(self.merged, name)

    def find(self, needle, start=0, backwards=False, ignore_case=True):
        self.needles.append((needle, ignore_case))
        return self.merged.find(needle, start, backwards, ignore_case)


def folded_source(tmp_path, lines: list[bytes]) -> tuple[Recording, FoldedWarnings]:
    path = tmp_path / "rank-0.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    log = LogFile(path)
    log.update()
    source = Recording(log)
    folded = FoldedWarnings(source)
    folded.sync()
    return source, folded


WARNING = b"/x/fsdp.py:12: FutureWarning: state_dict_type is deprecated"


def test_the_warnings_fold_looks_for_a_w_while_lines_with_one_are_rare(tmp_path):
    lines = [b"step %d" % i for i in range(20_000)]
    for at in (3_000, 9_000, 15_000):
        lines[at:at] = [b"Wrote a checkpoint", WARNING, b"  warnings.warn(", b"step again"]
    source, folded = folded_source(tmp_path, lines)
    assert [folded.raw(i)[1] for i in range(folded.count)] == fold_line_by_line(lines)
    assert (b"W", False) in source.needles and (FoldedWarnings.NEEDLE, False) not in source.needles


def test_the_warnings_fold_looks_for_the_needle_itself_where_lines_with_a_w_abound(tmp_path):
    lines = [b"Worker %d: step" % i for i in range(3_000)]
    lines[1_500:1_500] = [WARNING, b"  warnings.warn(", WARNING, b"  warnings.warn("]
    source, folded = folded_source(tmp_path, lines)
    assert [folded.raw(i)[1] for i in range(folded.count)] == fold_line_by_line(lines)
    probes = source.needles.count((b"W", False))
    assert (FoldedWarnings.NEEDLE, False) in source.needles and probes <= FoldedWarnings.PROBE_CREDIT + 1


def test_the_caseless_part_of_a_needle():
    assert caseless_part(b"step 5000000") == b" 5000000"
    assert caseless_part(b"loss") is None and caseless_part(b"epoch 3") is None  # none, or too short
    assert caseless_part(b"12345") is None  # no case at all: the log searches it as it is
    assert caseless_part(b"Loss: 2.5e-3") == b": 2.5"  # the longest
    assert caseless_part("größe: 1024".encode()) == b": 1024"  # bytes.lower() leaves bytes over 127 as they are


@pytest.mark.parametrize("seed", range(12))
def test_a_case_blind_search_finds_what_lowering_every_byte_finds(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(log_filter, "ANCHOR_MISSES", 3)  # the fall-back to lowering bytes is taken too
    rnd = random.Random(seed)
    pieces = [b"epoch 5000000 done", b"STEP 5000000 loss 0.5", b"step 5000000", b"Step 5000001", b"nothing here",
              b"x" * 70_000 + b" 5000000", b"step 5000000" + b"y" * 70_000, b"\x1b[32mSTeP 5000000\x1b[0m"]
    lines = [rnd.choice(pieces) for _ in range(rnd.randint(1, 60))]
    path = tmp_path / "rank-0.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    log = LogFile(path)
    log.update()
    source = Recording(log)
    folded = FoldedWarnings(source)
    folded.sync()
    for needle in (b"step 5000000", b"sTEP 5000000 LOSS"):
        hits = [i for i, line in enumerate(lines) if needle.lower() in line.lower()]  # the whole line, however long
        for start in range(0, len(lines), 3):
            assert folded.find(needle, start) == next((h for h in hits if h >= start), None), (seed, needle, start)
            assert folded.find(needle, start, backwards=True) == next((h for h in reversed(hits) if h <= start), None), (
                seed, needle, start)
    assert (b" 5000000", False) in source.needles  # the caseless part, searched as it is


def test_a_search_right_after_opening_a_big_log_waits_for_its_front_no_longer_than_the_count(base, monkeypatch):  # noqa: F811
    monkeypatch.setattr(LogFile, "TAIL_FIRST", 4096)
    monkeypatch.setattr(logfile, "CHUNK", 1024)
    log = base / "runs" / FINISHED / "logs" / "rank-0.log"
    log.write_bytes(b"THE Early Marker 2024\n" + log.read_bytes()
                    + b"".join(b"filler line %05d\n" % i for i in range(2000)) + b"THE LAST LINE\n")
    app = make_app(base, monitor_interval=3600.0)  # a poll an hour: the front is counted once the end is on screen

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        await pilot.press("right_square_bracket")  # Rank 0
        view = monitor.active_view()
        assert view.id == "log-rank-0"
        await until(pilot, lambda: "THE LAST LINE" in " ".join(view.visible_text()), what="the last line")
        await pilot.press("slash", *"early marker 2024", "enter")
        await until(pilot, lambda: view.current is not None, 30, what="the marker found")
        assert "THE Early Marker 2024" in view.line_text(view.current).plain and view.current == 0
        assert not monitor.run_watch.ranks[0].indexing

    run(script, app)


def test_a_plain_line_is_drawn_as_rich_text_would_draw_it():
    from rich.text import Text
    from textual.app import App
    from textual.strip import Strip

    from tuitrain.tui.widgets.log_view import LogView

    lines = [(3, b"step 12 loss 0.5"), (0, b""), ("0-7", b"same on every rank"), (None, "wide 日本 é".encode()),
             (1, b"\x1b[32mgreen\x1b[0m text"), (12, b"tab\there"), (2, b"bar 10%\rbar 50%")]

    class Source:
        generation = 0
        indexing = False
        count = len(lines)

        def raw(self, index):
            return lines[index]

        def cacheable(self, index):
            return True

        def find(self, needle, start=0, backwards=False, ignore_case=True):
            return None

    class One(App):
        def compose(self):
            yield LogView(Source(), ranks=True, id="log")

    async def main():
        async with App.run_test(One(), size=(80, 24)) as pilot:
            view = pilot.app.query_one(LogView)
            await pilot.pause()
            for index in range(len(lines)):
                text: Text = view.line_text(index)
                rich = Strip([s for s in text.render(pilot.app.console) if s.text != "\n"], text.cell_len)
                assert list(view._strip(index)) == list(rich.apply_style(view.line_style)), lines[index]
                assert view._strip(index).cell_length == text.cell_len

    asyncio.run(main())
