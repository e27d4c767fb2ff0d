"""run.json as the world leaves it (issue 34, item 9): a record that parses but holds a wrong type, a pid of -1 or
2**70, a time as text, a key missing, a number no int64 holds, any status. Generated records — drawn from `RunRecord`'s
own annotations, then some keys dropped or given a value of any JSON type — are fed to every reader of a run: the
catalog and `tuitrain runs`, `status` and `--json`, the summary, the live watchers, the hang verdict, the owners of GPU
processes, the queue view, `diff`, and the app's Home under Pilot. None raises: a record is used whole, or its run is
`unreadable` with the reason, and the other runs are listed as before."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import shutil
import tempfile
import time
import types
import typing
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from test_tui_fixtures import FAILED, FINISHED, make_runs
from tuitrain.cli import main
from tuitrain.rundir.events import Event
from tuitrain.rundir.exits import end_cause
from tuitrain.rundir.json_shape import Within
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RecordDamaged, RunRecord, RunRecordError, read_record
from tuitrain.rundir.run import UNREADABLE, elapsed
from tuitrain.runs.catalog import find_run, list_runs, scan_runs

set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "tuitrain-hypothesis")
EXAMPLES = int(os.environ.get("TUITRAIN_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=20)
                    | st.sampled_from([-1, 0, 2**63, 2**70, "1795000000", 1e300]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)
PIDS = st.sampled_from([1, os.getpid(), 4_194_303]) | st.integers(2, 2**22)  # init, this test (alive), most likely none


def of_type(hint: Any) -> st.SearchStrategy[Any]:
    """Values of the annotation, as `rundir.json_shape` reads it: what a record may hold, huge and odd included."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        inner, *meta = typing.get_args(hint)
        within = next((m for m in meta if isinstance(m, Within)), None)
        if within is None:
            return of_type(inner)
        if within.what == "a process id":
            return PIDS
        if inner is int:
            return st.integers(int(within.low), int(within.high))
        return st.floats(within.low, within.high)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(of_type(arm) for arm in typing.get_args(hint)))
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(hint))
    if origin is list:
        return st.lists(of_type(typing.get_args(hint)[0]), max_size=3)
    if origin is tuple and typing.get_args(hint)[-1:] == (...,):
        return st.lists(of_type(typing.get_args(hint)[0]), max_size=3)
    if origin is tuple:
        return st.tuples(*(of_type(item) for item in typing.get_args(hint))).map(list)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):  # as dataclasses.asdict writes one
        hints = typing.get_type_hints(hint, include_extras=True)
        return st.fixed_dictionaries({f.name: of_type(hints[f.name]) for f in dataclasses.fields(hint)})
    if origin is dict:
        keys = st.sampled_from(["0", "1", "launcher", "rank 0", "supervisor"]) | st.text(max_size=6)
        return st.dictionaries(keys, of_type(typing.get_args(hint)[1]), max_size=3)
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        required = {k: of_type(hints[k]) for k in hint.__required_keys__}
        optional = {k: of_type(hints[k]) for k in hint.__optional_keys__}
        return st.fixed_dictionaries(required, optional=optional)
    plain: dict[Any, st.SearchStrategy[Any]] = {
        str: st.text(max_size=12), bool: st.booleans(), type(None): st.none(),
        int: st.integers(-2**63 + 1, 2**63 - 1), float: st.floats(-2.0**62, 2.0**62, allow_nan=False)}
    return plain.get(hint, JSON)


HINTS = typing.get_type_hints(RunRecord, include_extras=True)


@st.composite
def records(draw: st.DrawFn, base: dict[str, Any], hints: dict[str, Any] = HINTS) -> dict[str, Any]:
    """A record as a real run writes it (`base`), with some keys given values of their own types (any size), some
    dropped, some given a value of any JSON type, and perhaps a key no version declares. (Any file read against a
    TypedDict: `hints` are its annotations, RunRecord's unless said.)"""
    record = dict(base)
    for key in draw(st.lists(st.sampled_from(sorted(hints)), max_size=8, unique=True)):
        record[key] = draw(of_type(hints[key]))
    for key in draw(st.lists(st.sampled_from(sorted(hints)), max_size=2, unique=True)):
        if draw(st.booleans()):
            record.pop(key, None)
        else:
            record[key] = draw(JSON)
    if draw(st.integers(0, 4)) == 0:
        record["from_a_newer_version"] = draw(JSON)
    return record


def quiet(*argv: str) -> tuple[int, str]:
    """tuitrain's CLI in this process: (exit code, what it said); any exception is a traceback a user would see."""
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))  # as a terminal's: UTF-8, strict
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    said = []
    for stream in (out, err):
        stream.flush()
        said.append(stream.buffer.getvalue().decode())  # type: ignore[attr-defined]
    return code, "".join(said)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A runs root of the fixture runs plus one run whose record each example writes, and a queue folder of this
    test's own in which that run waits and another waits for it."""
    base = tmp_path_factory.mktemp("records")
    runs = base / "runs"
    make_runs(runs)
    generated = runs / "20260101-003000-generated"
    shutil.copytree(runs / FAILED, generated)  # logs, events, checkpoints: readers go as deep as a real run's
    (generated / ".lost-word-sent").touch()  # a run found lost sends word once: not from a test
    queue = base / "queue"
    saved = {k: os.environ.get(k) for k in ("TUITRAIN_QUEUE_DIR", "TUITRAIN_RUNS_DIR")}
    os.environ.update(TUITRAIN_QUEUE_DIR=str(queue), TUITRAIN_RUNS_DIR=str(runs))
    try:
        base_record = {**json.loads((runs / FAILED / "run.json").read_text()), "id": generated.name}
        yield {"runs": runs, "generated": generated, "queue": queue, "base": base_record}
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def write_queue(queue: Path, generated: Path) -> None:
    """The generated run waits in the queue, and a run after it waits for it (the queue's rule reads its record)."""
    queue.mkdir(exist_ok=True)
    for old in queue.glob("*.json"):
        old.unlink()
    me = {"pid": os.getpid(), "started": psutil.Process().create_time()}
    now = time.time()
    for index, (run, after) in enumerate([(generated.name, []), ("20260101-004000-after",
                                          [{"run": generated.name, "run_dir": str(generated), "ok": True}])]):
        entry = {"run": run, "run_dir": str(generated if not after else generated.parent / FINISHED), "uid": os.getuid(),
                 "user": "me", "queued": now + index, "gpus": [], "after": after, "count": 0, "min_free": None,
                 "state": "waiting", "supervisor": me, "started": None}
        (queue / f"{int((now + index) * 1e9):020d}-{os.getuid()}-{run}.json").write_text(json.dumps(entry))


def read_by_every_reader(world: dict[str, Any]) -> None:
    from tuitrain.backends import for_run, settle_runs
    from tuitrain.cli.follow import report_end
    from tuitrain.runs.view.diff import compare_runs
    from tuitrain.runs.view.hang import process_names, run_hang
    from tuitrain.runs.view.lineage import read_lineage
    from tuitrain.runs.view.live import RunsWatcher, RunWatch
    from tuitrain.runs.view.owners import read_owners
    from tuitrain.runs.view.summary import run_summary
    from tuitrain.tui.machines import run_machines

    runs, generated = world["runs"], world["generated"]
    paths = RunPaths(generated)
    entries = {e.paths.id: e for e in scan_runs(runs)}
    assert len(entries) == 4  # one damaged record hides no other run
    assert {i for i, e in entries.items() if e.record is None} <= {generated.name}
    assert find_run(runs, generated.name) == paths
    list_runs(runs)
    try:
        record = read_record(paths)
    except RecordDamaged as exc:
        record = None
        assert entries[generated.name].reason == exc.reason
    for argv in (["runs"], ["runs", "--json"], ["status", generated.name], ["status", generated.name, "--json"],
                 ["diff", FINISHED, generated.name], ["queue"], ["queue", "--json"]):
        code, said = quiet(*argv, "--runs-dir", str(runs)) if argv[0] != "queue" else quiet(*argv)
        if record is None and argv[0] in ("status", "diff"):
            assert code != 0 and "is damaged" in said, said
    listed = {Path(s["run_dir"]).name: s for s in json.loads(quiet("runs", "--json", "--runs-dir", str(runs))[1])}
    assert set(listed) == set(entries)
    if record is None:
        assert listed[generated.name]["status"] == UNREADABLE
    rows, _ = RunsWatcher(runs, settle_runs).poll()
    assert {Path(r.run_dir).name for r in rows} == set(entries)
    read_owners(runs)
    try:
        watch = RunWatch(generated)
    except RunRecordError:
        assert record is None
    else:
        watch.poll()
        watch.close()
    if record is not None:
        record = read_record(paths)  # a viewer may have settled it (lost, a job's end) meanwhile
        run_summary(paths, record)
        run_hang(paths, record)
        process_names(paths, record)
        read_lineage(paths, record)
        backend = for_run(record)  # the backends answer viewers from the checked record, with no guards of their own
        backend.job_words(record)
        run_machines(backend.machines(record), record, hostname="home")
        compare_runs(RunPaths(runs / FINISHED), read_record(RunPaths(runs / FINISHED)), paths, record)
        report_end(paths, record, io.StringIO())


@FUZZ
@given(data=st.data())
def test_generated_records_through_every_reader(world: dict[str, Any], data: st.DataObject) -> None:
    record = data.draw(records(world["base"]))
    (world["generated"] / "run.json").write_text(json.dumps(record))
    write_queue(world["queue"], world["generated"])
    read_by_every_reader(world)


EVENT_HINTS = {**typing.get_type_hints(Event, include_extras=True), "loss": float, "eval_loss": float,
               "checkpoint": str, "rank": int, "message": str, "learning_rate": float, "epoch": float}


@FUZZ
@given(data=st.data())
def test_generated_events_through_every_reader(world: dict[str, Any], data: st.DataObject) -> None:
    """events.jsonl as the world leaves it: the real run's events with fields given values of any kind or size (a
    step of -1 or 2**70, a time as text, a loss as a list, "nan" as the engine writes a non-finite one), lines cut
    or not JSON. Every reader of a run and the app's curves go on; a line that is no event is passed over."""
    from tuitrain.tui.curves import RunCurves

    (world["generated"] / "run.json").write_text(json.dumps(world["base"]))
    real = [json.loads(line) for line in (world["runs"] / FAILED / "events.jsonl").read_text().splitlines()]
    lines = []
    for event in data.draw(st.lists(st.sampled_from(real), min_size=1, max_size=6)):
        drawn = data.draw(records(event, EVENT_HINTS))
        line = json.dumps(drawn) if data.draw(st.integers(0, 5)) else json.dumps(drawn)[: data.draw(st.integers(0, 40))]
        lines.append(line + "\n")
    (world["generated"] / "events.jsonl").write_text("".join(lines))
    write_queue(world["queue"], world["generated"])
    read_by_every_reader(world)
    curves = RunCurves(world["generated"] / "events.jsonl")
    curves.poll()


# (a) the fields users have met damaged, each named in one line, and nothing else hidden
@pytest.mark.parametrize(("key", "value", "said"), [
    ("started", "1795000000", "started: '1795000000' is not a time in seconds since 1970"),
    ("pids", {"supervisor": -1}, "pids.supervisor: -1 is not a process id"),
    ("pids", {"ranks": {"0": 2**70}}, "pids.ranks.0: 1180591620717411303424 is not a process id"),
    ("status", 7, "status: 7 is not one of planned, queued"),
    ("status", "paused", "status: 'paused' is not one of planned"),
    ("processes", [], "processes: [] is not an object"),
    ("num_processes", 10**30, "num_processes: 10000000000000000000000… is not a count"),
    ("created", 1e300, "created: 1e+300 is not a time in seconds since 1970"),
    ("exit_codes", {"launcher": [1]}, "exit_codes.launcher: a list is not a whole number or text"),
    ("slurm", {"requeued": [{"restart": 1, "time": 0, "previous": None, "resume_from": None}]}, "no slurm.requeued[0].error"),
    ("pids", {"ranks": {"launcher": 12}}, "pids.ranks: the key 'launcher' is not a rank"),
    ("profile", "\udc80", "profile: '\\udc80' is not text"),
    ("restarts", [{"attempt": 2, "at": 4.6e18}], "restarts[0].at: 4.6e+18 is not a time in seconds since 1970"),
    ("restarts", [{"batch": {"per_device_train_batch_size": [8], "gradient_accumulation_steps": [1, 2]}}],
     "restarts[0].batch.per_device_train_batch_size: a list is not a list of 2"),
    ("slurm", {"job_id": "\x00"}, "slurm.job_id: '\\x00' is not a Slurm job id"),  # handed to squeue as an argument
])
def test_a_damaged_field_is_named_and_hides_nothing(world: dict[str, Any], key: str, value: Any, said: str) -> None:
    runs, generated = world["runs"], world["generated"]
    (generated / "run.json").write_text(json.dumps({**world["base"], key: value}))
    entries = {e.paths.id: e for e in scan_runs(runs)}
    assert entries[generated.name].record is None and said in (entries[generated.name].reason or ""), entries[generated.name]
    assert all(e.record is not None for i, e in entries.items() if i != generated.name)
    code, text = quiet("runs", "--runs-dir", str(runs))
    assert code == 0 and UNREADABLE in text and said[:30] in text, text
    code, text = quiet("status", generated.name, "--runs-dir", str(runs))
    assert code == 2 and text.count("\n") == 1 and f"{generated / 'run.json'} is damaged ({said}" in text, text
    listed = {r["id"]: r for r in json.loads(quiet("runs", "--json", "--runs-dir", str(runs))[1])}
    assert listed[generated.name]["status"] == UNREADABLE and said in listed[generated.name]["error"]
    code, text = quiet("logs", generated.name, "--runs-dir", str(runs))  # its logs are whole: shown as ever
    assert code == 0 and "Traceback" in text and "is damaged" not in text, text  # the failed run's own traceback


def test_a_key_of_a_newer_version_is_kept(world: dict[str, Any]) -> None:
    from tuitrain.rundir.record import update_record

    generated = world["generated"]
    (generated / "run.json").write_text(json.dumps({**world["base"], "newer": {"what": [1, 2]}}))
    paths = RunPaths(generated)
    assert read_record(paths)["newer"] == {"what": [1, 2]}  # type: ignore[typeddict-item]
    update_record(paths, error="x")
    assert json.loads((generated / "run.json").read_text())["newer"] == {"what": [1, 2]}


def home_goes_on(app: Any, runs: int) -> None:
    """The app on Home lists `runs` runs, polls twice more, is moved through, and is still there."""
    from test_tui_app import until

    async def drive() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.screen.query_one("#runs")
            await until(pilot, lambda: table.row_count == runs, what="every run listed")
            polls = app.polls
            await until(pilot, lambda: app.polls >= polls + 2, what="two more polls")
            await pilot.press("down", "down", "down")
            await pilot.pause(0.2)

    asyncio.run(drive())


@settings(FUZZ, max_examples=max(3, EXAMPLES // 20))
@given(data=st.data())
def test_the_apps_home_lists_generated_records_and_goes_on(world: dict[str, Any], data: st.DataObject) -> None:
    """Home under Pilot over runs whose records are generated (a damaged one among them, always): every run is
    listed, the damaged as unreadable, and the app is still there after polls."""
    from test_tui_app import make_app

    drawn = data.draw(st.lists(records(world["base"]), min_size=4, max_size=4))
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        runs = base / "runs"
        make_runs(runs)
        for index, record in enumerate([*drawn, {**world["base"], "pids": {"supervisor": -1}}]):
            run = runs / f"20260101-01{index}000-generated"
            shutil.copytree(runs / FAILED, run)
            (run / ".lost-word-sent").touch()
            (run / "run.json").write_text(json.dumps(record))
        home_goes_on(make_app(base), runs=8)


def test_the_monitor_says_a_record_damaged_under_it_and_goes_on(tmp_path: Path) -> None:
    """A run open in the monitor whose run.json turns damaged (a pid of -1) shows `unreadable` and the one line
    naming the key, its logs still there; once run.json is whole again it shows the run's status."""
    from test_tui_app import make_app, open_run, until

    make_runs(tmp_path / "runs")
    record = tmp_path / "runs" / FAILED / "run.json"
    whole = record.read_text()
    app = make_app(tmp_path)

    async def drive() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            monitor = await open_run(pilot, app, FAILED)
            header = monitor.query_one("#header")
            await until(pilot, lambda: "failed" in header.text, what="the failed run's header")
            record.write_text(json.dumps({**json.loads(whole), "pids": {"supervisor": -1}}))
            await until(pilot, lambda: "pids.supervisor: -1 is not a process id" in header.text, what="the damage named")
            assert UNREADABLE in header.text and sum(log.line_count for log in monitor.run_watch.ranks) > 0
            record.write_text(whole)
            await until(pilot, lambda: "failed" in header.text and UNREADABLE not in header.text, what="whole again")
            assert app.screen is monitor

    asyncio.run(drive())


@pytest.mark.parametrize(("record", "shown", "said"), [
    ({"status": "failed", "failed_rank": 1, "error": None}, None, "rank 1 failed"),
    ({"status": "failed", "failed_rank": None, "error": "no column [/data/train.csv:text]"}, None,
     "no column [/data/train.csv:text]"),
    ({"status": "failed", "failed_rank": None}, None, "the launcher failed"),
    ({"status": "running"}, "lost", "its supervisor is gone without recording an end (killed, or the machine restarted)"),
    ({"status": "cancelled"}, None, "dropped while queued; it never started"),
    ({"status": "finished", "error": None}, None, ""),
])
def test_an_end_is_told_by_one_rule(record: dict[str, Any], shown: Any, said: str) -> None:
    """`status`, `logs -f`'s last word and the app's toast say why a run ended through `rundir.run.end_cause`: a
    running record a viewer found lost is the supervisor gone, not "the launcher failed" (what the toast said)."""
    assert end_cause(record, shown) == said  # type: ignore[arg-type]


def test_how_long_a_run_ran_is_one_rule() -> None:
    """`status`'s duration and the monitor's elapsed (`rundir.run.elapsed`): to its end, or to now while it runs;
    an end with no time says nothing rather than a duration that grows."""
    assert elapsed({"status": "running", "started": 100.0}, 160.0) == 60.0  # type: ignore[typeddict-item]
    assert elapsed({"status": "finished", "started": 100.0, "ended": 130.0}, 160.0) == 30.0  # type: ignore[typeddict-item]
    assert elapsed({"status": "failed", "started": 100.0, "ended": None}, 160.0) is None  # type: ignore[typeddict-item]
    assert elapsed({"status": "running", "started": 100.0}, 160.0, "lost") is None  # type: ignore[typeddict-item]
    assert elapsed({"status": "queued", "started": None}, 160.0) is None  # type: ignore[typeddict-item]
