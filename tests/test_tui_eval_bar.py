"""An evaluation bar (tqdm's nested bar, as the Trainer draws it under the training bar) folds into one
line of the rank and merged views, as the training bar's carriage returns do; it printed a line per
update before (issue 13). The bytes are real tqdm output."""

from __future__ import annotations

import io

from tqdm import tqdm

from test_tui_app import base, make_app, open_run, run, until  # noqa: F401  (base: the fixture runs)
from test_tui_fixtures import RUNNING


class TrainerLike:
    """What the Trainer's progress callback writes while it evaluates mid-training: the eval bar at
    position 1 (under the training bar, which stays open), then, the bar closed, the metrics line
    written through the training bar."""

    def __init__(self, path) -> None:
        self.handle = open(path, "a", encoding="utf-8")  # open across the test's steps
        self.train = tqdm(total=40, initial=23, file=self.handle, mininterval=0, ncols=60)
        self.bar = tqdm(total=8, file=self.handle, leave=False, mininterval=0, ncols=60)

    def evaluate(self, steps: int) -> None:
        self.bar.update(steps)
        self.handle.flush()

    def finish(self) -> None:
        self.bar.close()
        self.train.write("{'eval_loss': 0.5, 'epoch': 0.36}", file=self.handle)
        self.train.update(1)
        self.handle.flush()

    def close(self) -> None:
        self.train.close()
        self.handle.close()


def test_an_eval_bar_is_one_line_of_the_rank_and_merged_views(base):  # noqa: F811
    app = make_app(base)
    log = base / "runs" / RUNNING / "logs" / "rank-0.log"

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        await pilot.press("right_square_bracket")  # Rank 0
        view = monitor.active_view()
        before = view.line_count  # the training bar still drawing is the last line
        trainer = TrainerLike(log)
        trainer.evaluate(7)
        await until(pilot, lambda: view.line_count == before + 1, what="one line for the eval bar")
        await until(pilot, lambda: view.line_text(view.line_count - 1).plain.lstrip().startswith("88%"),
                    what="the eval bar's newest drawing")
        assert "7/8" in view.line_text(view.line_count - 1).plain
        assert "23/40" in view.line_text(view.line_count - 2).plain  # the training bar's line
        trainer.evaluate(1)
        trainer.finish()
        trainer.close()
        await until(pilot, lambda: any("eval_loss" in view.line_text(i).plain for i in range(view.line_count)),
                    what="the metrics line")
        texts = [view.line_text(i).plain for i in range(before - 1, view.line_count)]
        assert sum("/8 [" in t for t in texts) == 0, texts  # the eval bar's row now shows the metrics
        assert view.line_count <= before + 3, texts
        await pilot.press("left_square_bracket")  # All ranks: the same lines, rank-prefixed
        merged = monitor.active_view()
        await until(pilot, lambda: any("eval_loss" in merged.line_text(i).plain for i in range(merged.line_count)),
                    what="the merged view")
        assert sum("/8 [" in merged.line_text(i).plain for i in range(merged.line_count)) == 0

    run(script, app)


def test_a_nested_bar_folds_whatever_the_reads_cut_through(tmp_path):
    from tuitrain.runs.view.logfile import LogFile

    out = io.StringIO()
    train = tqdm(total=4, file=out, mininterval=0, ncols=60)
    train.update(1)
    bar = tqdm(total=3, file=out, leave=False, mininterval=0, ncols=60)
    for _ in range(3):
        bar.update(1)
    bar.close()
    train.write("{'eval_loss': 0.5}", file=out)
    train.update(1)
    train.write("{'loss': 0.4}", file=out)
    train.update(2)
    train.close()
    data = out.getvalue().encode()
    assert data.count(b"\x1b[A") >= 4  # real nested-bar output

    whole = tmp_path / "whole.log"
    whole.write_bytes(data)
    log = LogFile(whole)
    log.update()
    texts = [log.line_text(i) for i in range(log.count)]
    assert [t.split("|")[0].strip() if "|" in t else t for t in texts] == ["25%", "{'eval_loss': 0.5}", "{'loss': 0.4}",
                                                                           "100%"]
    assert [b"\x1b[A" in line for line in log.lines(0, log.line_count)] == [False, True, False, False]

    # written two bytes at a time, a cursor-up cut in two by the reads: the same lines
    pieces = tmp_path / "pieces.log"
    pieces.write_bytes(b"")
    cut = LogFile(pieces)
    for i in range(0, len(data), 2):
        with open(pieces, "ab") as handle:
            handle.write(data[i:i + 2])
        cut.update()
    assert [cut.line_text(i) for i in range(cut.count)] == texts
