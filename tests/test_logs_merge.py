"""Every rank's log merged in the order its lines were written (issue 13, defect 2): by the CLI
(`tuitrain logs RUN`) and the app's All ranks tab, for a finished run, a live one and a run whose
ranks ran on another machine (their logs and times mirrored home)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from conftest import cli
from test_tui_app import make_app, until

T = 1_700_000_000.0


def write_rank(logs: Path, rank: int, lines: list[tuple[float, bytes]]) -> None:
    """Append lines to logs/rank-K.log and note each one's write time in logs/rank-K.times, as a rank does."""
    logs.mkdir(parents=True, exist_ok=True)
    log, times = logs / f"rank-{rank}.log", logs / f"rank-{rank}.times"
    with open(log, "ab") as out, open(times, "ab") as index:
        for when, line in lines:
            out.write(line + b"\n")
            out.flush()
            index.write(f"{out.tell()} {when:.6f}\n".encode())


def fake_run(runs: Path, name: str = "20240101-000000-demo", status: str = "finished") -> Path:
    run = runs / name
    (run / "logs").mkdir(parents=True)
    (run / "control").mkdir()
    record = {"id": name, "profile": "demo", "status": status, "created": T, "started": T, "ended": T + 9,
              "num_processes": 2, "pids": {"supervisor": 4_000_000}, "exit_codes": {}, "failed_rank": None,
              "error": None, "output_dir": str(run / "output")}
    (run / "run.json").write_text(json.dumps(record))
    (run / "profile.toml").write_text('[run]\nname = "demo"\n')
    # rank 0 writes a and b, rank 1 writes its line in between; both print "step 1" alike
    write_rank(run / "logs", 0, [(T + 1, b"rank 0: a"), (T + 3, b"step 1"), (T + 5, b"rank 0: b")])
    write_rank(run / "logs", 1, [(T + 3.5, b"step 1"), (T + 4, b"rank 1: between a and b \x1b[31mred\x1b[0m")])
    return run


def test_the_cli_merges_ranks_in_the_order_their_lines_were_written(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    run = fake_run(runs)
    result = cli("logs", run.name, runs_dir=runs)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[rank 0] rank 0: a", "[rank 0] step 1", "[rank 1] step 1",
                                          "[rank 1] rank 1: between a and b red", "[rank 0] rank 0: b"]
    assert cli("logs", run.name, "--rank", "1", runs_dir=runs).stdout.startswith("step 1\n")


def test_a_live_merge_puts_a_late_read_line_before_a_later_written_one(tmp_path):
    """A line another rank wrote just before the viewer's poll, not read in that poll, still goes first."""
    from tuitrain.runs.view.logfile import LogFile
    from tuitrain.runs.view.merged_log import MergedLog

    run = fake_run(tmp_path / "runs")
    logs = [LogFile(run / "logs" / f"rank-{rank}.log") for rank in range(2)]
    merged = MergedLog(logs)
    for log in logs:
        log.update()
    merged.sync(T + 100)
    assert [merged.raw(i)[1] for i in range(merged.count)][-1] == b"rank 0: b"
    now = time.time()
    write_rank(run / "logs", 0, [(now + 0.2, b"rank 0: after the poll began")])
    for log in logs:
        log.update()
    write_rank(run / "logs", 1, [(now + 0.1, b"rank 1: before it, read a poll late")])
    merged.sync(now)
    assert merged.count == 5  # rank 0's new line waits: it was written after the poll began
    for log in logs:
        log.update()
    merged.sync(now + 1)
    assert [merged.raw(i) for i in range(5, merged.count)] == [(1, b"rank 1: before it, read a poll late"),
                                                               (0, b"rank 0: after the poll began")]


def test_ranks_mirrored_from_another_machine_merge_in_time_order_at_home(tmp_path):
    from tuitrain.remote.wire import decode
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.runs.keeper.mirror import NodeFiles, apply
    from tuitrain.runs.view.logfile import LogFile
    from tuitrain.runs.view.merged_log import MergedLog

    node = fake_run(tmp_path / "node")
    home = RunPaths(tmp_path / "home" / node.name)
    (home.root / "logs").mkdir(parents=True)
    for message in NodeFiles(RunPaths(node), machine_rank=1).changes(limit=1000):
        decoded = decode(message)
        if decoded["path"].startswith("logs/rank-"):
            apply(home, decoded)
    assert (home.logs / "rank-1.times").read_bytes() == (node / "logs" / "rank-1.times").read_bytes()
    logs = [LogFile(home.rank_log(rank)) for rank in range(2)]
    merged = MergedLog(logs)
    for log in logs:
        log.update()
    merged.sync()
    assert [merged.raw(i)[0] for i in range(merged.count)] == [0, 0, 1, 1, 0]


def test_the_apps_all_ranks_tab_interleaves_and_still_folds(tmp_path):
    fake_run(tmp_path / "runs")
    app = make_app(tmp_path)

    async def main():
        async with app.run_test(size=(100, 30)) as pilot:
            await open_only_run(pilot)
            view = app.screen.query_one("#log-all")
            await until(pilot, lambda: view.line_count == 4, what="the merged lines")
            assert [view.line_text(i).plain for i in range(4)] == [
                "0│rank 0: a", "0-1│step 1", "1│rank 1: between a and b red", "0│rank 0: b"]

    asyncio.run(main())


async def open_only_run(pilot) -> None:
    """Home → the one run listed → enter: its monitor."""
    app = pilot.app
    await until(pilot, lambda: app.polls > 0 and app.screen.query_one("#runs").row_count == 1, what="the run listed")
    app.screen.query_one("#runs").focus()
    await pilot.press("enter")
    await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")


@pytest.mark.slow
def test_a_real_two_rank_run_merges_in_time_order(finished_two_rank_run):
    """Rank 1 announces itself before rank 0 trains (DDP waits for both): merged, its line stands
    before rank 0's first loss, in the CLI and in the app, and the rank logs carry no timing bytes.
    The run is the suite's shared two-rank one (conftest), alone in its runs folder."""
    run = finished_two_rank_run
    runs = run.parent
    assert (run / "logs" / "rank-1.log").read_bytes().startswith(b"[tuitrain] rank 1/2 pid ")
    assert (run / "logs" / "rank-1.times").stat().st_size > 0

    def order(lines: list[str], rank1: str, rank0: str) -> tuple[int, int]:
        first_loss = next(i for i, line in enumerate(lines) if line.startswith(rank0) and "'loss'" in line)
        return next(i for i, line in enumerate(lines) if line.startswith(rank1 + "[tuitrain] rank 1/2")), first_loss

    merged = cli("logs", run.name, runs_dir=runs)
    assert merged.returncode == 0, merged.stderr
    announced, loss = order(merged.stdout.splitlines(), "[rank 1] ", "[rank 0] ")
    assert announced < loss, merged.stdout

    app = make_app(runs.parent)

    async def main():
        async with app.run_test(size=(100, 30)) as pilot:
            await open_only_run(pilot)
            monitor = app.screen
            view = monitor.query_one("#log-all")
            await until(pilot, lambda: monitor.run_watch.folded.pending == 0 and view.line_count > 5, 30, "the merged log")
            lines = [view.line_text(i).plain for i in range(view.line_count)]
            announced, loss = order(lines, "1│", "0│")
            assert announced < loss, lines

    asyncio.run(main())
    assert os.path.exists(run / "logs" / "rank-0.times")
