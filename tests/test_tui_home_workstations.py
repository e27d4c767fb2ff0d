"""Home with workstations in the user's settings (issue 23): every box's runs in one table with a HOST column,
this machine's first, the others filled in by their streams; a box that cannot be watched is one line saying
why; closing the app ends the streams there. On the namespace hosts (tests/hosts.py), as the user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FAILED, FINISHED, RUNNING, make_runs
from test_tui_home_table import shown_ids
from test_workstations import kill_every_sshd, settings, tuitrain_processes

pytestmark = pytest.mark.slow
NEWEST_FIRST = [RUNNING, FAILED, FINISHED]


def columns(table: Any) -> list[str]:
    return [str(column.label).removesuffix(" ↓").removesuffix(" ↑") for column in table.columns.values()]  # the sort's arrow aside


def cells(table: Any) -> list[list[str]]:
    return [[str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_home_shows_each_workstations_runs_under_its_host_and_a_dead_box_as_one_line(
        hosts: Any, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings(base, hosts)))
    make_runs(base / "node1-runs")
    kill_every_sshd(hosts, "node2")
    app = make_app(base)
    expected = [*NEWEST_FIRST, *(f"node1:{i}" for i in NEWEST_FIRST), "node2"]

    async def script(pilot: Any) -> None:
        table = app.screen.query_one("#runs")
        assert shown_ids(app)[:3] == NEWEST_FIRST  # this machine's runs do not wait for the others
        await until(pilot, lambda: shown_ids(app) == expected and "unreachable" in cells(table)[-1], 60,
                    what="node1's runs and node2's line")
        assert columns(table)[:3] == ["HOST", "RUN", "STATUS"]
        rows = cells(table)
        assert [row[0] for row in rows[:3]] == ["local"] * 3 and [row[0] for row in rows[3:6]] == ["node1"] * 3
        host, reason, status = rows[-1][:3]
        assert (host, status) == ("node2", "unreachable") and reason.startswith("connection refused"), rows[-1]
        full = str(app.screen.query_one("#host-problems").render())
        assert full.startswith("node2: connection refused on port 22 — ") and "start sshd" in full, full
        assert app.screen.query_one("#runs-title").text == "Runs (6)"
        assert tuitrain_processes(base, "workstations", "--stream"), "node1's stream runs while the app is open"
        await pilot.press("slash", "n", "o", "d", "e", "1", "enter")
        await until(pilot, lambda: shown_ids(app) == expected[3:], what="node1's runs and node2's line only")
        table.move_cursor(row=0)
        await pilot.press("s")  # another box's run: said how to reach it, nothing stopped here
        await until(pilot, lambda: any("enter opens its monitor" in n.message for n in app._notifications),
                    what="how to reach node1's run")

    try:
        run(script, app, size=(120, 30), notifications=True)
    finally:
        hosts.start_sshd("node2")
    wait_for(lambda: not tuitrain_processes(base, "workstations", "--stream"), 60, "no tuitrain stream left on node1")


def test_without_workstations_home_has_no_host_column(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    (base / "config.toml").write_text('[notify]\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(base / "config.toml"))
    app = make_app(base)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: shown_ids(app) == NEWEST_FIRST, what="the runs here")
        await pilot.pause(0.3)
        assert columns(app.screen.query_one("#runs"))[0] == "RUN"

    run(script, app)


def test_a_wrong_settings_file_is_one_line_and_home_goes_on(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    (base / "config.toml").write_text('[[workstations]]\nhost = "gpu2"\nport = 22\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(base / "config.toml"))
    app = make_app(base)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: any("workstations[0].port: not a workstation key" in n.message
                                       for n in app._notifications), what="the settings' one line")
        assert shown_ids(app) == NEWEST_FIRST and columns(app.screen.query_one("#runs"))[0] == "RUN"

    run(script, app, notifications=True)
