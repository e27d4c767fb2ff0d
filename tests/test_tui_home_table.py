"""Home's runs table, htop-style (issue 13): o cycles the sort column (started, status, profile,
loss, best, step, time), O reverses it, / filters the rows by id, profile or status as one types; sort and filter hold
across refreshes and runs appearing meanwhile."""

from __future__ import annotations

import json
import shutil

from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import FAILED, FINISHED, RUNNING, T0

OTHER = "20260101-003000-other"


def copy_run(folder, source: str, run_id: str, profile: str, created: float) -> None:
    """Another ended run: `source`'s files under a new id, profile and time."""
    runs, aside = folder / "runs", folder / "aside" / run_id  # made aside, then moved in whole
    shutil.copytree(runs / source, aside)
    record = json.loads((aside / "run.json").read_text())
    record.update(id=run_id, profile=profile, created=created, started=created + 1, ended=created + 40)
    (aside / "run.json").write_text(json.dumps(record))
    aside.rename(runs / run_id)


def shown_ids(app) -> list[str]:
    table = app.screen.query_one("#runs")
    return [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]


def test_o_cycles_the_sort_column_and_O_reverses_it(base):  # noqa: F811
    copy_run(base, FINISHED, OTHER, "other", T0 + 1800)
    app = make_app(base)

    async def script(pilot):
        title = app.screen.query_one("#runs-title")
        await until(pilot, lambda: len(shown_ids(app)) == 4, what="four runs")
        assert shown_ids(app) == [OTHER, RUNNING, FAILED, FINISHED] and title.text == "Runs (4)"
        await pilot.press("o")
        await until(pilot, lambda: "by status" in title.text, what="sorted by status")
        assert shown_ids(app) == [RUNNING, FAILED, OTHER, FINISHED]  # going, ended badly, ended well
        await pilot.press("o")
        await until(pilot, lambda: "by profile" in title.text, what="sorted by profile")
        assert shown_ids(app) == [RUNNING, FAILED, FINISHED, OTHER]
        await pilot.press("o")
        await until(pilot, lambda: "by loss ↑" in title.text, what="sorted by loss")
        assert shown_ids(app) == [OTHER, FINISHED, RUNNING, FAILED]  # 0.1367 twice (newest first), 0.2777, 0.3657
        await pilot.press("O")
        await until(pilot, lambda: "by loss ↓" in title.text, what="reversed")
        assert shown_ids(app) == [FAILED, RUNNING, FINISHED, OTHER]
        # the cursor stays on its run through a re-sort
        table = app.screen.query_one("#runs")
        table.move_cursor(row=shown_ids(app).index(RUNNING))
        await pilot.press("O")
        await until(pilot, lambda: "by loss ↑" in title.text, what="reversed back")
        assert shown_ids(app)[table.cursor_row] == RUNNING
        await pilot.press("o")
        await until(pilot, lambda: "by best ↓" in title.text, what="sorted by best")
        assert shown_ids(app) == [OTHER, FINISHED, RUNNING, FAILED]  # eval_loss: the lowest is the best
        await pilot.press("o")
        await until(pilot, lambda: "by step ↑" in title.text, what="sorted by step")
        assert shown_ids(app) == [FAILED, RUNNING, OTHER, FINISHED]
        await pilot.press("o")
        await until(pilot, lambda: "by time ↑" in title.text, what="sorted by time")
        assert shown_ids(app) == [OTHER, FAILED, FINISHED, RUNNING]  # 39 s each, then the live run's 40 min so far
        await pilot.press("o")
        await until(pilot, lambda: title.text == "Runs (4)", what="back to started")
        assert shown_ids(app) == [OTHER, RUNNING, FAILED, FINISHED]

    run(script, app)


def test_slash_filters_as_one_types_and_the_filter_and_sort_hold_across_refreshes(base):  # noqa: F811
    copy_run(base, FINISHED, OTHER, "other", T0 + 1800)
    app = make_app(base)

    async def script(pilot):
        title = app.screen.query_one("#runs-title")
        table = app.screen.query_one("#runs")
        await until(pilot, lambda: len(shown_ids(app)) == 4, what="four runs")
        await pilot.press("slash", "f", "a", "i", "l")
        await until(pilot, lambda: shown_ids(app) == [FAILED], what="the failed run only")
        assert title.text == "Runs (1 of 4) · /fail"
        await pilot.press("ctrl+u", "d", "e", "m", "o")  # the profile (and the id) name demo
        await until(pilot, lambda: shown_ids(app) == [RUNNING, FAILED, FINISHED], what="the demo runs")
        await pilot.press("enter")
        await until(pilot, lambda: app.focused is table, what="the table focused, the filter kept")
        await pilot.press("o", "o", "o")  # by loss
        await until(pilot, lambda: shown_ids(app) == [FINISHED, RUNNING, FAILED], what="sorted by loss")
        assert title.text == "Runs (3 of 4) · /demo · by loss ↑"
        polls = app.polls
        await until(pilot, lambda: app.polls >= polls + 2, what="two more polls")
        assert shown_ids(app) == [FINISHED, RUNNING, FAILED]
        # a run appearing meanwhile takes its place in the order, or stays out
        copy_run(base, FINISHED, "20260101-004000-demo", "demo", T0 + 2400)
        copy_run(base, FINISHED, "20260101-005000-other", "other", T0 + 3000)
        # the two copies may land across a poll: wait for both
        await until(pilot, lambda: title.text == "Runs (4 of 6) · /demo · by loss ↑", what="the new demo run")
        assert shown_ids(app) == ["20260101-004000-demo", FINISHED, RUNNING, FAILED]
        await pilot.press("escape")  # clears the filter; the sort stays
        await until(pilot, lambda: len(shown_ids(app)) == 6, what="every run")
        assert title.text == "Runs (6) · by loss ↑"
        assert shown_ids(app)[-2:] == [RUNNING, FAILED]

    run(script, app)


def test_the_filter_matches_every_word_against_id_profile_and_status():
    from tuitrain.runs.view.live import RunRow
    from tuitrain.tui.run_table import RunOrder, arrange

    def row(run_id: str, profile: str, status: str, created: float) -> RunRow:
        return RunRow(run_id, "", profile, status, 0, None, None, "eval_loss", None, created, None, None, None, 0)

    rows = [row("a-1", "bert", "running", 3), row("b-2", "gpt", "failed", 2), row("c-3", "bert", "finished", 1)]
    assert [r.id for r in arrange(rows, RunOrder(filter="BERT fin"))] == ["c-3"]
    assert [r.id for r in arrange(rows, RunOrder(filter="  "))] == ["a-1", "b-2", "c-3"]
    assert [r.id for r in arrange(rows, RunOrder(sort="loss"))] == ["a-1", "b-2", "c-3"]  # no loss: newest first
