"""Another workstation's runs as its stream brings them (a host's words are data, never trusted as typed): rows
drawn from `RunRow`'s own annotations at any size, with fields dropped or given a value of any JSON type, go through
what Home does with them — `run_rows` (each checked, or left out), the lines of every workstation, their labels,
each sort and a filter, and every cell of each line. None raises, and a row that checks is shown as it came."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from test_run_record_property import FUZZ, JSON, records
from tuitrain.cli.viewing import Listed
from tuitrain.runs.view.live import RunRow
from tuitrain.tui.run_cells import RunCells
from tuitrain.tui.run_columns import COLUMNS, fit_columns
from tuitrain.tui.run_table import SORTS, HostRuns, RunOrder, host_entries, run_labels, run_rows

HINTS = typing.get_type_hints(RunRow, include_extras=True)
BASE = dataclasses.asdict(RunRow("20260101-000000-demo", "/runs/20260101-000000-demo", "demo", "finished", 40, 40,
                                 0.12, "eval_loss", 0.2, 1_767_225_600.0, 1_767_225_601.0, 1_767_225_660.0, None, 2))
NOW = 1_767_229_200.0


@FUZZ
@given(rows=st.lists(records(BASE, HINTS) | JSON, max_size=4), sort=st.sampled_from(SORTS), reverse=st.booleans(),
       filter=st.sampled_from(["", "demo", "[/x]", "fin"]))
def test_a_hosts_rows_as_they_come_never_break_home(rows: list[Any], sort: str, reverse: bool, filter: str) -> None:
    found = run_rows([r for r in rows if isinstance(r, dict)])
    checked = [r for r in rows if isinstance(r, dict) and of_row(r) is not None]
    assert [row.id for row in found] == [r["id"] for r in checked]  # each row that checks, as it came; no other
    entries = host_entries([], {"box": HostRuns(found, answered=True)}, RunOrder(sort, reverse, filter), NOW)
    cells = RunCells(NOW, run_labels([row.id for row in found], NOW), hosts=True)
    columns = ("HOST", *COLUMNS)  # as Home lays them out with a workstation in the settings
    for room in (40, 120):
        layout = fit_columns(columns, [cells.full(e) for e in entries], [cells.short(e) for e in entries], room)
        for entry in entries:
            cells.shown(entry, columns, layout)


def of_row(item: dict[str, Any]) -> RunRow | None:
    from tuitrain.rundir.json_shape import problem

    return RunRow(**{k: v for k, v in item.items() if k in HINTS}) if problem(item, RunRow) is None else None


LISTED = {"id": "20260101-000000-demo", "profile": "demo", "status": "running", "created": 1_767_225_600.0,
          "run_dir": "/runs/20260101-000000-demo", "pids": {"supervisor": 4_194_303},
          "progress": {"step": 3, "max_steps": 8, "loss": 0.5, "eval": {}}, "hang": None}


@FUZZ
@given(rows=st.lists(records(LISTED, typing.get_type_hints(Listed, include_extras=True)) | JSON, max_size=4))
def test_a_boxs_runs_json_as_it_comes_is_listed_line_by_line(rows: list[Any]) -> None:
    """`runs --all-hosts` over another box's `runs --json`: a row that checks is its line; one that does not is a
    line saying why (its id where it has one); the table is printed either way."""
    from tuitrain.cli.output import table
    from tuitrain.cli.viewing import listed_problem, runs_row
    from tuitrain.cli.workstations import _listed

    listed = [_listed(row, "box") for row in rows]
    for row, line in zip(rows, listed, strict=True):
        assert (line["status"] == "unreadable" and "cannot be read here" in line["reason"]) == \
            (listed_problem(row) is not None)
    table([["box", *runs_row(line)] for line in listed], ["HOST", "ID", "PROFILE", "STATUS", "STEP", "LOSS", "AGE", ""])


LOG_KEYS = ("loss", "learning_rate", "epoch", "grad_norm")


@FUZZ
@given(figures=st.lists(st.tuples(st.sampled_from(LOG_KEYS), JSON), max_size=6), score=JSON)
def test_a_runs_figures_as_it_wrote_them_keep_its_row_on_every_box(figures: list[tuple[str, Any]], score: Any) -> None:
    """A diverged run logs its loss as "nan" (engine.events writes a non-finite figure as its word); a script may log
    anything. Whatever a run's events hold, its row checks where another box reads it (never left out), `runs
    --all-hosts` lists it as a line of its own, and Home sorts it among finite runs by every column."""
    from tuitrain.cli.viewing import listed_problem
    from tuitrain.rundir.events import progress

    events = [{"event": "log", "time": NOW, "step": 1, key: value} for key, value in figures]
    p = progress([*events, {"event": "evaluate", "time": NOW, "step": 1, "eval_loss": score}])
    row = dataclasses.replace(of_row(BASE), loss=p["loss"])  # type: ignore[arg-type]
    assert of_row(dataclasses.asdict(row)) == row
    assert listed_problem({**LISTED, "progress": {"step": 1, "max_steps": 8, "loss": p["loss"], "eval": p["eval"]}}) is None
    others = [dataclasses.replace(row, id=f"{row.id}-{n}", loss=loss) for n, loss in enumerate([0.5, None, "nan", 2])]
    for sort in SORTS:
        host_entries([], {"box": HostRuns((row, *others), answered=True)}, RunOrder(sort, False, ""), NOW)
