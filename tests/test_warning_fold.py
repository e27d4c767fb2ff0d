"""A warning printed again folds into one line (issue 28, item 4): FSDP prints its state_dict_type FutureWarning (its
message line and the `warnings.warn(` source line) on every save. One rule, tui.log_filter.WarningFold: the first
print shows whole, each later one is "… (same warning ×N) FutureWarning: …" and its source line is left out, in
`tuitrain logs` (merged, one rank, --follow) and in the app's log views (tui.log_filter.FoldedWarnings)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conftest import cli
from test_logs_merge import T, open_only_run, write_rank
from test_tui_app import make_app, until
from tuitrain.runs.view.logfile import LogFile
from tuitrain.runs.view.warning_fold import WarningFold, fold_line
from tuitrain.tui.log_filter import FoldedWarnings

FSDP = (b"/venv/lib/python3.11/contextlib.py:137: FutureWarning: FSDP.state_dict_type() and "
        b"FSDP.set_state_dict_type() are being deprecated. Please use APIs, get_state_dict() and set_state_dict(), "
        b"which can support different parallelisms, FSDP1, FSDP2, DDP.")
SOURCE = b"  return next(self.gen)"
BAR = b"\r 40%|####      | 4/10 [00:01<00:01,  3.9it/s]"
FOLDED = ("… (same warning ×{}) FutureWarning: FSDP.state_dict_type() and FSDP.set_state_dict_type() are being "
          "depreca…")
SAVES = [b"step 1", FSDP, SOURCE, b"saved checkpoint-2", BAR + FSDP, SOURCE, FSDP, SOURCE, b"saved checkpoint-4",
         FSDP, SOURCE, b"  an indented line of its own", b"done"]
PLAIN = ["step 1", FSDP.decode(), SOURCE.decode(), "saved checkpoint-2", FOLDED.format(2), FOLDED.format(3),
         "saved checkpoint-4", FOLDED.format(4), "  an indented line of its own", "done"]


def folded(lines: list[bytes], rank: object = None) -> list[str]:
    fold = WarningFold()
    texts = [line.decode().split("\r")[-1] for line in lines]
    return [shown for shown in (fold.fold(rank, text) for text in texts) if shown is not None]


def test_the_first_print_shows_whole_and_each_later_one_is_a_line_with_its_count() -> None:
    assert folded(SAVES) == PLAIN
    assert fold_line(2, "UserWarning", "short") == "… (same warning ×2) UserWarning: short"


def test_only_the_same_warning_folds() -> None:
    other = b"/venv/lib/python3.11/contextlib.py:137: UserWarning: something else"
    elsewhere = FSDP.replace(b":137:", b":138:")
    assert folded([FSDP, other, elsewhere, b"FutureWarning: in a sentence"]) == [
        FSDP.decode(), other.decode(), elsewhere.decode(), "FutureWarning: in a sentence"]
    # the same warning from another folder is the same warning; a source line is left out only under a fold
    moved = FSDP.replace(b"/venv/lib", b"/opt/other/lib")
    assert folded([FSDP, SOURCE, moved, b"  return next(self.gen) # not the same line"]) == [
        FSDP.decode(), SOURCE.decode(), FOLDED.format(2), "  return next(self.gen) # not the same line"]


def test_ranks_interleaved_keep_their_own_source_lines() -> None:
    fold = WarningFold()
    shown = [fold.fold(rank, text.decode()) for rank, text in
             [(0, FSDP), (1, FSDP), (0, SOURCE), (1, SOURCE), (1, b"rank 1 goes on")]]
    assert shown == [FSDP.decode(), FOLDED.format(2), SOURCE.decode(), None, "rank 1 goes on"]


def test_a_line_source_folds_as_the_rule_does_and_follows_a_growing_log(tmp_path: Path) -> None:
    path = tmp_path / "rank-0.log"
    path.write_bytes(b"\n".join(SAVES[:6]) + b"\n" + SAVES[6])  # the last line still being written
    log = LogFile(path)
    log.update()
    view = FoldedWarnings(log)
    assert view.sync()
    shown = [view.raw(i)[1] for i in range(view.count)]
    assert shown[:4] == SAVES[:4] and shown[4] == b"\x1b[2m" + FOLDED.format(2).encode() + b"\x1b[0m"
    # the unfinished line is folded as it stands on a copy of the fold, and again at each sync until it is whole
    assert view.raw(5)[1] == b"\x1b[2m" + FOLDED.format(3).encode() + b"\x1b[0m"
    assert [view.cacheable(i) for i in range(view.count)] == [True] * 5 + [False]
    assert not view.sync() and view.count == 6
    with open(path, "ab") as out:
        out.write(b"\n" + b"\n".join(SAVES[7:]) + b"\n")
    log.update()
    assert view.sync()
    from tuitrain.runs.view.logfile import plain_text

    assert [plain_text(view.raw(i)[1]) for i in range(view.count)] == PLAIN
    assert not view.sync()
    # search finds shown lines through the log's own search, passing over the source lines folded away
    assert view.find(b"return next") == 2 and view.find(b"return next", 3) is None
    assert view.find(b"checkpoint-4", 0) == 6 and view.find(b"step 1", 9, backwards=True) == 0
    assert view.find(b"FSDP", 5) == 5
    log.close()


def fake_run(runs: Path, ranks: int) -> Path:
    run = runs / "20240101-000000-fsdp"
    (run / "logs").mkdir(parents=True)
    (run / "control").mkdir()
    record = {"id": run.name, "profile": "fsdp", "status": "finished", "created": T, "started": T, "ended": T + 90,
              "num_processes": ranks, "pids": {"supervisor": 4_000_000}, "exit_codes": {}, "failed_rank": None,
              "error": None, "output_dir": str(run / "output")}
    (run / "run.json").write_text(json.dumps(record))
    (run / "profile.toml").write_text('[run]\nname = "fsdp"\n')
    for rank in range(ranks):
        write_rank(run / "logs", rank, [(T + 1 + i + rank / 10, line) for i, line in enumerate(SAVES)])
    return run


def test_tuitrain_logs_folds_them(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = fake_run(runs, 1)
    result = cli("logs", run.name, runs_dir=runs)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == PLAIN
    one = cli("logs", run.name, "--rank", "0", runs_dir=runs)
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines() == PLAIN
    followed = cli("logs", run.name, "--follow", runs_dir=runs)  # a run that has ended: printed, then done
    assert followed.stdout.splitlines() == PLAIN


def test_tuitrain_logs_folds_them_across_ranks(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = fake_run(runs, 2)
    lines = cli("logs", run.name, runs_dir=runs).stdout.splitlines()
    assert [line for line in lines if "FutureWarning" in line and "same warning" not in line] == [
        "[rank 0] " + FSDP.decode()]  # one whole print, every other one (of either rank) a line with its count
    assert [line.split(" FutureWarning")[0] for line in lines if "same warning" in line] == [
        f"[rank {rank}] … (same warning ×{n})" for rank, n in ((1, 2), (0, 3), (1, 4), (0, 5), (1, 6), (0, 7), (1, 8))]
    assert lines.count("[rank 1] " + SOURCE.decode()) == 0 and lines.count("[rank 0] " + SOURCE.decode()) == 1


def test_the_apps_log_views_fold_them(tmp_path: Path) -> None:
    fake_run(tmp_path / "runs", 1)
    app = make_app(tmp_path)

    async def main() -> None:
        async with app.run_test(size=(140, 30)) as pilot:
            await open_only_run(pilot)
            for tab in ("log-all", "log-rank-0"):
                await until(pilot, lambda t=tab: app.screen.active_view().id == t, what=tab)
                view = app.screen.active_view()
                await until(pilot, lambda v=view: v.line_count == len(PLAIN), what=f"{tab}'s folded lines")
                assert [view.line_text(i).plain.split("│")[-1] for i in range(view.line_count)] == PLAIN
                await pilot.press("right_square_bracket")  # the next tab
            # a filter reads the folded lines
            await pilot.press("left_square_bracket")
            view = app.screen.active_view()
            assert view.id == "log-rank-0"
            await pilot.press("&", *"same warning", "enter")
            await until(pilot, lambda: view.line_count == 3, what="the three folded prints")

    asyncio.run(main())
