"""The app driven as a user drives it (Textual's Pilot), on fixed run directories: no training here.

Pytest has no asyncio plugin in this project: each test runs its Pilot script with asyncio.run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import patient
from test_tui_fixtures import FAILED, FINISHED, FIXED_CLOCK, HARDWARE_LINE, RUNNING, fixed_time, make_runs

fixed_time()


def make_app(base: Path, **kwargs: Any):
    from tuitrain.hardware import Hardware
    from tuitrain.tui.app import TuitrainApp

    options = dict(cwd=base, clock=lambda: FIXED_CLOCK, hardware_line=HARDWARE_LINE, hardware=Hardware(),
                   poll_interval=0.2, monitor_interval=0.1)
    options.update(kwargs)
    return TuitrainApp(base / "runs", **options)


async def until(pilot, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "a condition") -> Any:
    """Pause the app until `predicate` holds, within `timeout` times the suite's patience (conftest.patient)."""
    deadline = time.monotonic() + patient(timeout)
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {patient(timeout):.0f}s waiting for {what}")


async def press_and_confirm(pilot, key: str) -> None:
    """A key that asks first (a stop, a kill, dropping a queued run: screens.confirm.ask_first), answered yes."""
    await pilot.press(key)
    await until(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmScreen", what=f"{key}'s question")
    await pilot.press("y")


def run(script, app, size=(100, 30), notifications: bool = False) -> None:
    async def main() -> None:
        async with app.run_test(size=size, notifications=notifications) as pilot:
            await until(pilot, lambda: app.polls > 0, what="the first poll of the runs root")
            await script(pilot)

    asyncio.run(main())


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    return tmp_path


def table_rows(table) -> list[list[str]]:
    """Each row's cells as text; the runs table's rows start with the run's id (the row's key), not with the
    short label its RUN column shows ('00:20 demo'), so that tests name runs by id."""
    rows = [[str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)]
    if table.id == "runs":
        for i, row in enumerate(rows):
            row[0] = table.coordinate_to_cell_key((i, 0)).row_key.value
    return rows


# ------------------------------------------------------------------------------ home

def test_home_lists_profiles_beside_runs_newest_first(base):
    from textual.widgets import DataTable, OptionList

    app = make_app(base)

    async def script(pilot):
        table = app.screen.query_one("#runs", DataTable)
        rows = await until(pilot, lambda: table_rows(table) if table.row_count == 3 else None, what="three runs")
        assert [r[0] for r in rows] == [RUNNING, FAILED, FINISHED]
        assert rows[0][1:4] == ["running", "23/40 ██▉··", "0.2777"]
        assert rows[1][1] == "failed r1" and rows[2][1] == "finished"
        assert rows[2][4] == "eval_loss 0.1668"
        options = app.screen.query_one("#profiles", OptionList)
        await until(pilot, lambda: options.option_count > 0, what="profiles")
        assert "demo" in str(options.get_option_at_index(0).prompt)

    run(script, app)


def test_runs_started_elsewhere_appear_live_and_are_announced(base):
    from textual.widgets import DataTable

    app = make_app(base)
    new_id = "20260101-003000-demo"

    async def script(pilot):
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count == 3, what="three runs")
        shutil.copytree(base / "runs" / RUNNING, base / "runs" / new_id)
        record = json.loads((base / "runs" / new_id / "run.json").read_text())
        record.update(id=new_id, created=record["created"] + 600)
        (base / "runs" / new_id / "run.json").write_text(json.dumps(record))
        await until(pilot, lambda: table.row_count == 4, what="the run started elsewhere")
        assert table_rows(table)[0][:2] == [new_id, "running"]
        with open(base / "runs" / new_id / "events.jsonl", "a") as handle:
            handle.write(json.dumps({"event": "log", "time": 1.0, "step": 24, "loss": 0.25}) + "\n")
        await until(pilot, lambda: table_rows(table)[0][2].startswith("24/40"), what="the new step")
        record.update(status="failed", failed_rank=0, ended=record["created"] + 100)
        (base / "runs" / new_id / "run.json").write_text(json.dumps(record))
        await until(pilot, lambda: any("rank 0 failed" in n.message for n in app._notifications),
                    what="a toast naming the failed rank")

    run(script, app, notifications=True)


def test_command_palette_lists_every_action_of_the_screen(base):
    app = make_app(base)

    async def script(pilot):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for action in ("Run", "New", "Edit", "Open", "Resume", "Stop", "Quit", "Help"):
            assert action in titles
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        assert type(app.screen).__name__ == "CommandPalette"

    run(script, app)


def test_help_lists_the_keys(base):
    app = make_app(base)

    async def script(pilot):
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home again")

    run(script, app)


# ------------------------------------------------------------------------------ monitor

def open_run(pilot, app, run_id: str):
    from textual.widgets import DataTable

    async def go():
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count >= 3, what="runs")
        ids = [r[0] for r in table_rows(table)]
        table.move_cursor(row=ids.index(run_id))
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")
        await until(pilot, lambda: app.screen.run_watch.polls > 0 and app.screen._landed, what="the first read")
        await pilot.pause(0.1)
        return app.screen

    return go()


def test_a_failed_run_opens_on_its_traceback(base):
    from textual.widgets import TabbedContent

    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FAILED)
        tabs = monitor.query_one("#tabs", TabbedContent)
        await until(pilot, lambda: tabs.active == "tab-rank-1", what="the failing rank's tab")
        view = monitor.active_view()
        await until(pilot, lambda: view.current is not None, what="the traceback")
        assert view.line_text(view.current).plain == "Traceback (most recent call last):"
        assert any(line.startswith("RuntimeError: CUDA error") for line in view.visible_text())
        header = monitor.query_one("#header").text
        assert "failed (rank 1)" in header

    run(script, app)


def test_merged_view_prefixes_ranks_and_search_finds_lines(base):
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        view = monitor.active_view()
        assert view.id == "log-all"
        # lines both ranks printed alike show once, marked 0-1; the lines that differ keep their rank
        prefixes = {view.line_text(i).plain.split("│")[0] for i in range(view.line_count)}
        assert prefixes == {"0-1", "0", "1"}
        assert "0-1│{'loss': '0.6720', 'epoch': '0.016'}" in [view.line_text(i).plain for i in range(view.line_count)]
        folded = view.line_count
        await pilot.press("z")
        await until(pilot, lambda: view.line_count > folded, what="the unfolded view")
        assert {view.line_text(i).plain.split("│")[0] for i in range(view.line_count)} == {"0", "1"}
        assert view.line_count == sum(log.line_count for log in monitor.run_watch.ranks)
        await pilot.press("home")
        await until(pilot, lambda: not view.follow, what="the top")
        await pilot.press("slash")
        await pilot.press(*"yellow warning from rank 1")
        await pilot.press("enter")
        await until(pilot, lambda: view.current is not None, what="a match")
        first = view.current
        assert "yellow warning from rank 1" in view.line_text(first).plain
        assert not view.follow
        await pilot.press("n")
        await until(pilot, lambda: view.current != first, what="the next match")
        assert "step 20: a yellow warning from rank 1" in view.line_text(view.current).plain
        await pilot.press("N")
        await until(pilot, lambda: view.current == first, what="the previous match")

    run(script, app)


def test_the_log_follows_the_tail_until_the_user_scrolls_up(base):
    app = make_app(base)
    log = base / "runs" / RUNNING / "logs" / "rank-0.log"

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        await pilot.press("right_square_bracket")  # Rank 0
        view = monitor.active_view()
        assert view.id == "log-rank-0" and view.follow
        assert view.visible_text()[-1] == " 57%|█████     | 23/40 [00:11<00:08, 2.00it/s]"  # the partial tqdm line
        with open(log, "ab") as handle:
            handle.write(b"\r 60%|######    | 24/40\r\x1b[31mnew red line\x1b[0m\n" + b"".join(b"line %d\n" % i for i in range(60)))
        await until(pilot, lambda: view.visible_text()[-1] == "line 59", what="new lines at the tail")
        red = view.line_text(view.line_count - 61)
        assert red.plain == "new red line" and red.spans[0].style.color.number == 1  # ANSI red
        await pilot.press("pageup")
        await until(pilot, lambda: not view.follow, what="follow off")
        top = view.scroll_offset.y
        with open(log, "ab") as handle:
            handle.write(b"".join(b"more %d\n" % i for i in range(30)))
        await until(pilot, lambda: view.line_count > 100, what="more lines indexed")
        assert view.scroll_offset.y == top and not view.follow
        await pilot.press("end")
        await until(pilot, lambda: view.visible_text()[-1] == "more 29", what="following again")
        assert view.follow

    run(script, app, size=(80, 24))


def test_metrics_and_checkpoints_tabs(base):
    from textual.widgets import DataTable

    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FAILED)
        await pilot.press("m")
        loss = monitor.query_one("#plot-loss")
        assert [line.label for line in loss.lines] == ["train", "eval"]
        assert len(loss.lines[0].values) == 17
        assert {line.label for line in monitor.query_one("#plot-eval").lines} == {"accuracy", "f1"}
        await pilot.press("p")
        table = monitor.query_one("#checkpoints", DataTable)
        await until(pilot, lambda: table.row_count == 2, what="two checkpoints")
        rows = table_rows(table)
        assert rows[0][:3] == ["15", "", "INCOMPLETE"] and "optimizer state" in rows[0][5]
        assert rows[1][:4] == ["10", "★", "complete", "00:10:15"], rows

    run(script, app)


def test_a_single_loss_spike_survives_downsampling():
    """A long flat curve with one spike: the plot keeps each bucket's lowest and highest point, so the
    spike is drawn (a stride would keep one point in many and drop it), and so is a dip."""
    from textual.app import App

    from tuitrain.tui.widgets.plot import Line, LinePlot, downsample

    n = 10_000
    values = [1.0] * n
    values[5_001] = 9.0  # not on any stride's grid
    values[7_333] = 0.1
    kept = downsample(values, 80)
    assert 5_001 in kept and 7_333 in kept
    assert kept == sorted(kept) and len(kept) <= 2 * 80
    assert downsample(values[:100], 80) == list(range(100))  # fewer than two a bucket: every point

    class One(App):
        def compose(self):
            yield LinePlot("loss", id="plot")

    async def main() -> None:
        app = One()
        async with app.run_test(size=(60, 12)) as pilot:
            plot = app.query_one(LinePlot)
            plot.set_lines([Line("train", list(range(n)), values, "cyan")])
            await pilot.pause()
            body = plot.render().plain.splitlines()[1:-1]
            assert any(ch != " " and ord(ch) >= 0x2800 for ch in body[0]), "the spike reaches the top row"
            assert any(ch != " " and ord(ch) >= 0x2800 for ch in body[-1]), "the dip reaches the bottom row"

    asyncio.run(main())


def test_requests_to_a_live_run_and_refusals(base):
    app = make_app(base)
    control = base / "runs" / RUNNING / "control"

    async def script(pilot):
        monitor = await open_run(pilot, app, RUNNING)
        await pilot.press("c")
        await until(pilot, lambda: (control / "save-now").exists(), what="a save-now request")
        await pilot.press("e")
        await until(pilot, lambda: (control / "evaluate-now").exists(), what="an evaluate-now request")
        await pilot.press("R")  # still running: refused, says why
        await until(pilot, lambda: any("stop it first" in n.message for n in app._notifications), what="a refusal")
        await pilot.press("o")
        output = str(base / "runs" / RUNNING / "output")
        await until(pilot, lambda: any(output in n.message for n in app._notifications), what="the output folder")
        assert app.clipboard == output
        await pilot.press("k")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="a confirmation")
        await pilot.press("n")
        await pilot.pause(0.2)
        assert not (control / "terminate").exists()
        await pilot.press("k")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="a confirmation")
        await pilot.press("y")
        await until(pilot, lambda: (control / "terminate").exists(), what="a terminate request")
        await press_and_confirm(pilot, "s")
        await until(pilot, lambda: (control / "stop").exists(), what="a stop request")
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="home")
        del monitor

    run(script, app, notifications=True)


# ------------------------------------------------------------------------------ editor

BAD_PROFILE = """# my profile: a comment saving keeps
[run]
name = "mine"

[model]
task = "sequence-classification"

[model.config]
model_type = "bert"
vocab_size = 128
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 64
max_position_embeddings = 64

[model.train_tokenizer]
vocab_size = 128

[data]
generate = "sentiment-words"
max_length = 24

[training]
max_steps = 10
learning_rate = -1
report_to = "none"

[hardware]
accelerator = "cpu"
"""


def editor_open(pilot, app, key: str):
    async def go():
        await pilot.press(key)
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
        await until(pilot, lambda: app.screen.loaded and app.screen.problems is not None and
                    str(app.screen.query_one("#problems").content), what="the first check")
        return app.screen

    return go()


async def show_field(pilot, editor, key: str):
    """Show the section of a field (its form is built when first shown); returns the field's row."""
    from textual.widgets import TabbedContent

    editor.query_one("#sections", TabbedContent).active = "sec-" + key.split(".")[0]
    row = await until(pilot, lambda: editor.rows.get(key), what=f"the {key} field")
    await until(pilot, lambda: row.is_mounted and row.children, what="the row's widgets")
    await pilot.pause(0.1)
    return row


async def add_training_key(pilot, editor, key: str, value: str) -> None:
    """Type a raw [training] key and its value into the last row of the Training form; enter adds it."""
    from textual.widgets import Input, TabbedContent

    editor.query_one("#sections", TabbedContent).active = "sec-training"
    await pilot.pause(0.1)
    editor.query_one("#new-key", Input).focus()
    await pilot.press(*key)
    await pilot.press("tab")
    await pilot.press(*value)
    await pilot.press("enter")


def test_fixing_a_field_the_validator_flagged_and_saving(base):
    from textual.widgets import Input, OptionList

    (base / "profiles").mkdir()
    profile = base / "profiles" / "mine.toml"
    profile.write_text(BAD_PROFILE)
    app = make_app(base)

    async def script(pilot):
        options = app.screen.query_one("#profiles", OptionList)
        await until(pilot, lambda: options.option_count >= 2, what="profiles")
        names = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = names.index(str(profile))
        editor = await editor_open(pilot, app, "e")
        assert "learning_rate" in " ".join(p.key for p in editor.errors)
        row = await show_field(pilot, editor, "training.learning_rate")
        await until(pilot, lambda: row.error == "must be greater than 0, got -1", what="the flagged field")
        box = row.query_one(Input)
        box.focus()
        box.value = ""
        await pilot.press(*"0.001")
        await until(pilot, lambda: not row.error and not editor.errors, what="the error to go")
        assert "accelerate launch" in editor.command
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(120, 40))
    import tomllib

    saved = tomllib.loads(profile.read_text())
    assert saved["training"]["learning_rate"] == 0.001 and saved["training"]["max_steps"] == 10
    assert saved["model"]["config"]["hidden_size"] == 32
    assert profile.read_text() == BAD_PROFILE.replace("learning_rate = -1\n", "learning_rate = 0.001\n")  # comments kept
    assert not (base / "profiles" / "mine.toml.bak").exists()


def test_creating_a_profile_through_the_editor(base):
    from textual.widgets import Input, Select

    app = make_app(base)

    async def script(pilot):
        editor = await editor_open(pilot, app, "n")
        assert editor.path is None and not editor.errors
        name = editor.rows["run.name"].query_one(Input)
        name.focus()
        name.value = ""
        await pilot.press(*"tiny")
        steps = (await show_field(pilot, editor, "training.max_steps")).query_one(Input)
        steps.value = "12"
        editor.rows["training.lr_scheduler_type"].query_one(Select).value = "cosine"
        (await show_field(pilot, editor, "distributed.strategy")).query_one(Select).value = "ddp"
        await until(pilot, lambda: editor.data.get("distributed", {}).get("strategy") == "ddp", what="the edits")
        (await show_field(pilot, editor, "distributed.num_processes")).query_one(Input).value = "2"  # ddp's field
        await until(pilot, lambda: "num_processes: 2" in str(editor.query_one("#plan").content), what="the preview")
        await add_training_key(pilot, editor, "adam_beta2", "0.98")
        await until(pilot, lambda: "training.adam_beta2" in editor.rows, what="the raw key row")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the save-as question")
        answer = app.screen.query_one(Input)
        assert answer.value == "profiles/tiny.toml"
        await pilot.press("enter")
        await until(pilot, lambda: (base / "profiles" / "tiny.toml").exists(), what="the file")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(120, 40))
    import tomllib

    saved = tomllib.loads((base / "profiles" / "tiny.toml").read_text())
    assert saved["run"]["name"] == "tiny"
    assert saved["training"]["max_steps"] == 12 and saved["training"]["lr_scheduler_type"] == "cosine"
    assert saved["training"]["adam_beta2"] == 0.98
    assert saved["distributed"] == {"strategy": "ddp", "num_processes": 2}
    assert saved["model"]["config"]["model_type"] == "bert"  # the template's tables are kept
    from tuitrain.profile import load_profile

    assert load_profile(base / "profiles" / "tiny.toml").name == "tiny"


MULTI_PROCESS_KEYS = {"num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port",
                      "rdzv_backend", "same_network"}


def distributed_rows(editor) -> set[str]:
    """The [distributed] keys of the strategy's fields on screen now (strategy itself and the machines
    section below them left out)."""
    box = editor.query_one("#strategy-fields")
    return {k.removeprefix("distributed.") for k, row in editor.rows.items()
            if k.startswith("distributed.") and row.is_mounted and box in row.ancestors}


async def new_profile_editor(pilot):
    """The editor on a new profile (the demo's content), loaded."""
    app = pilot.app
    app.open_editor(None)
    await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
    await until(pilot, lambda: app.screen.loaded, what="the profile")
    return app.screen


async def choose_strategy(pilot, editor, strategy: str, shown: str) -> None:
    from textual.widgets import Select

    row = await show_field(pilot, editor, "distributed.strategy")
    row.query_one(Select).value = strategy
    await until(pilot, lambda: editor.data["distributed"]["strategy"] == strategy
                and shown in editor.rows and editor.rows[shown].is_mounted, what=f"the {strategy} fields")


def test_the_distributed_form_shows_the_chosen_strategys_settings_only(base):
    from tuitrain.launch.strategies import fields_for
    from tuitrain.profile.schema import DEEPSPEED_KEYS, FSDP_KEYS

    app = make_app(base)

    async def script(pilot):
        editor = await new_profile_editor(pilot)
        await show_field(pilot, editor, "distributed.strategy")
        assert editor.data["distributed"] == {"strategy": "single", "num_processes": 1}  # the demo's
        assert distributed_rows(editor) == set()  # one process: no process count, machines or rendezvous
        assert "downcast_bf16" not in distributed_rows(editor)

        await choose_strategy(pilot, editor, "fsdp", "distributed.fsdp.sharding_strategy")
        assert distributed_rows(editor) == MULTI_PROCESS_KEYS | {f"fsdp.{k}" for k in FSDP_KEYS}
        assert distributed_rows(editor) == {f.key.removeprefix("distributed.") for f in fields_for("fsdp")
                                            if f.key.startswith("distributed.")}

        await choose_strategy(pilot, editor, "deepspeed", "distributed.deepspeed.zero_stage")
        assert distributed_rows(editor) == MULTI_PROCESS_KEYS | {f"deepspeed.{k}" for k in DEEPSPEED_KEYS}

        await choose_strategy(pilot, editor, "ddp", "distributed.num_machines")
        assert distributed_rows(editor) == MULTI_PROCESS_KEYS
        from textual.widgets import Input

        editor.rows["distributed.num_machines"].query_one(Input).value = "2"
        await until(pilot, lambda: editor.data["distributed"].get("num_machines") == 2, what="the edit")

        # back to single: the hidden keys stay in the profile; one set away from its default is
        # listed apart (so it can be emptied), with the validator's words beside it
        await choose_strategy(pilot, editor, "single", "distributed.num_machines")
        assert distributed_rows(editor) == {"num_machines"}
        assert editor.data["distributed"] == {"strategy": "single", "num_processes": 1, "num_machines": 2}
        row = editor.rows["distributed.num_machines"]
        await until(pilot, lambda: 'strategy = "single"' in row.error, what="the error beside the stale field")
        row.query_one(Input).value = ""
        await until(pilot, lambda: "num_machines" not in editor.data["distributed"], what="the key removed")

    run(script, app, size=(120, 40))


def test_every_field_of_the_distributed_form_shows_its_help_and_default(base):
    from textual.widgets import Input, Select, Static

    from tuitrain.profile.schema import FSDP_KEYS

    app = make_app(base)

    def shown(row) -> str:
        return " ".join(str(w.render()) for w in row.query(Static).results() if w.has_class("field-help"))

    async def script(pilot):
        editor = await new_profile_editor(pilot)
        await choose_strategy(pilot, editor, "fsdp", "distributed.fsdp.sharding_strategy")
        await pilot.pause(0.2)
        sharding = editor.rows["distributed.fsdp.sharding_strategy"]
        assert sharding.query_one(Select)  # a choice
        help_text = shown(sharding)
        assert "shard_grad_op: grads and optimizer state" in help_text and "default: full_shard" in help_text
        offload = editor.rows["distributed.fsdp.offload_params"]  # true/false
        assert offload.query_one(Select) and "keep parameters and gradients in CPU memory" in shown(offload)
        assert "default: false" in shown(offload)
        port = editor.rows["distributed.main_process_port"]  # a number with no default
        assert "a free port picked at launch" in shown(port) and "several machines: required" in shown(port)
        processes = editor.rows["distributed.num_processes"].query_one(Input)
        assert processes.placeholder == "default: 1" and "default: 1" in shown(editor.rows["distributed.num_processes"])
        for key, spec in FSDP_KEYS.items():
            row = editor.rows[f"distributed.fsdp.{key}"]
            assert spec.doc and spec.doc in shown(row).replace("\n", " "), key
            if spec.default is not None:
                assert "default: " in shown(row), key
        # the help is on screen: it is what the terminal shows
        sharding.scroll_visible(animate=False, top=True)
        await pilot.pause(0.3)
        screen_text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "full_shard: params, grads and optimizer state" in screen_text, screen_text
        assert "(default: full_shard)" in screen_text and "hybrid_shard_zero2" in screen_text, screen_text

    run(script, app, size=(120, 40))


def test_the_preview_follows_an_fsdp_field(base):
    from textual.widgets import Select

    from tuitrain.hardware import Hardware
    from tuitrain.hardware.devices import discover, no_identity
    from tuitrain.hardware.recorded import RecordedNvml, load_table

    table = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
    app = make_app(base, hardware=Hardware(gpus=discover(RecordedNvml(load_table(table)), no_identity).gpus, cpu_count=16))

    async def script(pilot):
        editor = await new_profile_editor(pilot)
        row = await show_field(pilot, editor, "hardware.accelerator")  # FSDP is refused on the CPU (issue 10)
        row.query_one(Select).value = "cuda"
        await until(pilot, lambda: editor.data["hardware"]["accelerator"] == "cuda", what="the accelerator")
        await choose_strategy(pilot, editor, "fsdp", "distributed.fsdp.sharding_strategy")
        await until(pilot, lambda: "fsdp_sharding_strategy: FULL_SHARD" in str(editor.query_one("#plan").content),
                    what="the FSDP preview")
        editor.rows["distributed.fsdp.sharding_strategy"].query_one(Select).value = "shard_grad_op"
        await until(pilot, lambda: "fsdp_sharding_strategy: SHARD_GRAD_OP" in str(editor.query_one("#plan").content),
                    what="the preview to follow")
        assert editor.data["distributed"]["fsdp"] == {"sharding_strategy": "shard_grad_op"}

    run(script, app, size=(120, 40))


def test_a_table_the_strategy_does_not_use_can_be_removed_from_the_form(base):
    from textual.widgets import Button, Input, Select

    app = make_app(base)

    async def script(pilot):
        editor = await new_profile_editor(pilot)
        await choose_strategy(pilot, editor, "fsdp", "distributed.fsdp.sharding_strategy")
        editor.rows["distributed.fsdp.sharding_strategy"].query_one(Select).value = "no_shard"
        await until(pilot, lambda: editor.data["distributed"].get("fsdp"), what="the fsdp edit")
        await choose_strategy(pilot, editor, "ddp", "distributed.num_machines")
        button = await until(pilot, lambda: next(iter(editor.query("#drop-fsdp").results(Button)), None),
                             what="the remove button")
        button.press()
        await until(pilot, lambda: "fsdp" not in editor.data["distributed"], what="[distributed.fsdp] removed")
        # the strategy's fields are rebuilt after the data changes: wait for them, not just the data
        await until(pilot, lambda: not editor.query("#drop-fsdp") and editor.rows.get("distributed.num_machines")
                    and editor.rows["distributed.num_machines"].is_mounted, what="the ddp fields rebuilt")
        # an empty number box means "the default": leaving it does not mark it invalid
        machines = editor.rows["distributed.num_machines"].query_one(Input)
        machines.focus()
        await pilot.press("tab")
        await pilot.pause(0.2)
        assert not machines.has_class("-invalid") and machines.value == ""

    run(script, app, size=(80, 24))


def test_a_deepspeed_json_disables_the_plugin_fields(base):
    from textual.widgets import Input, Select

    app = make_app(base)

    async def script(pilot):
        editor = await new_profile_editor(pilot)
        await choose_strategy(pilot, editor, "deepspeed", "distributed.deepspeed.zero_stage")
        stage = editor.rows["distributed.deepspeed.zero_stage"]
        assert stage.query_one(Select) and not stage.disabled  # 0-3 is picked, not typed
        editor.rows["distributed.deepspeed.config_file"].query_one(Input).value = "ds.json"
        await until(pilot, lambda: stage.disabled, what="the plugin fields disabled")
        assert editor.rows["distributed.deepspeed.offload_param_device"].disabled
        editor.rows["distributed.deepspeed.config_file"].query_one(Input).value = ""
        await until(pilot, lambda: not stage.disabled, what="the plugin fields back")

    run(script, app, size=(120, 40))


def app_with_default_config(base, monkeypatch, text: str):
    """The app, with `text` as accelerate's default config (HF_HOME in the test folder)."""
    home = base / "hf-home"
    (home / "accelerate").mkdir(parents=True)
    (home / "accelerate" / "default_config.yaml").write_text(text)
    monkeypatch.setenv("HF_HOME", str(home))
    return make_app(base)


async def accept_the_offer(pilot):
    """Wait for Home to offer the default config, take it, and return the editor it opens."""
    app = pilot.app
    await until(pilot, lambda: any("press a to make a profile" in n.message for n in app._notifications),
                what="the offer")
    await pilot.press("a")
    await until(pilot, lambda: type(app.screen).__name__ == "PromptScreen", what="the file asked for")
    assert app.screen.query_one("#answer").value.endswith("default_config.yaml")  # the offer, filled in
    await pilot.press("enter")
    await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="the editor")
    return app.screen


def test_accelerates_default_config_is_offered_and_becomes_a_new_profile(base, monkeypatch):
    fixture = Path(__file__).parent / "fixtures" / "accelerate" / "fsdp.yaml"
    app = app_with_default_config(base, monkeypatch, fixture.read_text())

    async def script(pilot):
        editor = await accept_the_offer(pilot)
        assert editor.path is None  # a new profile: saving asks for a name
        assert editor.data["distributed"]["strategy"] == "fsdp"
        assert editor.data["distributed"]["fsdp"]["sharding_strategy"] == "full_shard"
        assert editor.data["model"] and editor.data["data"]  # the rest from the demo, so it can run
        assert "[distributed] and [hardware] imported from" in str(editor.query_one("#notice").content)

    run(script, app, size=(120, 40), notifications=True)


def test_a_broken_default_config_still_opens_with_what_was_left_out(base, monkeypatch):
    app = app_with_default_config(base, monkeypatch, "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                  "num_processes: 2\ndeepspeed_config: foo\n")

    async def script(pilot):
        editor = await accept_the_offer(pilot)
        assert editor.data["distributed"]["strategy"] == "deepspeed"
        assert any("deepspeed_config" in note and "not a mapping" in note for note in editor.model.imported_notes)

    run(script, app, size=(120, 40), notifications=True)


def test_an_unknown_training_key_is_flagged_in_the_validators_words(base):
    app = make_app(base)

    async def script(pilot):
        editor = await editor_open(pilot, app, "n")
        await add_training_key(pilot, editor, "learning_rat", "0.1")
        row = await until(pilot, lambda: editor.rows.get("training.learning_rat"), what="the row")
        await until(pilot, lambda: "did you mean 'learning_rate'" in row.error, what="the validator's words")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: any("to fix first" in n.message for n in app._notifications), what="no launch")

    run(script, app, size=(120, 40), notifications=True)


# ------------------------------------------------------------------------------ hardware (a recorded NVML table)

NVML_TABLE = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"


def test_gpus_of_a_run_live_in_the_strip_the_monitor_and_the_editor(base, monkeypatch):
    """GPU figures come from NVML (here a recorded table at the pynvml boundary); the run's own
    GPUs are the ones its CUDA_VISIBLE_DEVICES names, and its ranks are found by pid."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML_TABLE))
    names = [d["name"] for d in json.loads(NVML_TABLE.read_text())["devices"]]
    run_dir = base / "runs" / RUNNING
    record = json.loads((run_dir / "run.json").read_text())
    record.update(accelerator="cuda", env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "2,3"})
    (run_dir / "run.json").write_text(json.dumps(record))
    (run_dir / "ranks").mkdir(exist_ok=True)
    (run_dir / "ranks" / "rank-0.json").write_text(json.dumps({"rank": 0, "pid": os.getpid(), "world_size": 1}))
    app = make_app(base, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        strip = app.screen.query_one("#hardware")
        await until(pilot, lambda: "4 GPUs" in strip.text, what="the GPUs in the hardware strip")
        assert "GiB in use" in strip.text and "CPU" in strip.text
        monitor = await open_run(pilot, app, RUNNING)
        await pilot.press("u")
        panel = monitor.query_one("#gpus")
        await until(pilot, lambda: "rank 0  pid" in str(panel.content), what="the run's rank")
        await until(pilot, lambda: len(app.hardware_view.host_history) >= 3, what="some history")
        await pilot.pause(0.3)
        text = str(panel.content)
        assert f"cuda:0 = GPU 2  {names[2]}" in text and f"cuda:1 = GPU 3  {names[3]}" in text, text
        assert "GPU 0" not in text and "GPU 1 " not in text  # not this run's devices
        assert "util" in text and "memory" in text and "°C" in text and " W" in text
        assert f"rank 0  pid {os.getpid()}" in text and "RSS" in text
        await pilot.press("escape")
        app.open_editor(None)
        await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
        from textual.widgets import SelectionList, TabbedContent

        editor = app.screen
        await until(pilot, lambda: editor.loaded, what="the editor's profile")
        editor.query_one("#sections", TabbedContent).active = "sec-hardware"
        gpu_list = await until(pilot, lambda: editor.query(SelectionList).first() if editor.query(SelectionList) else None,
                               what="the GPU checklist")
        prompts = [str(gpu_list.get_option_at_index(i).prompt) for i in range(gpu_list.option_count)]
        assert len(prompts) == 4 and all("in use" in p for p in prompts), prompts

    run(script, app, size=(120, 40))


def test_a_cpu_run_says_so_in_the_gpus_tab(base):
    app = make_app(base, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        monitor = await open_run(pilot, app, FINISHED)
        await pilot.press("u")
        panel = monitor.query_one("#gpus")
        await until(pilot, lambda: "host" in str(panel.content), what="the panel")
        text = str(panel.content)
        assert "this run trains on CPU" in text and "cuda:" not in text

    run(script, app)


# ------------------------------------------------------------------------------ terminal and imports

def test_no_color_is_respected(base, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(base)

    async def script(pilot):
        assert app.no_color
        import re

        svg = app.export_screenshot()
        window_chrome = {"ff5f57", "febc2e", "28c840", "c5c8c6"}  # the SVG's own frame, not the app
        colours = set(re.findall(r"#([0-9a-fA-F]{6})\b", svg)) - window_chrome
        greys = {c for c in colours if c[0:2] == c[2:4] == c[4:6]}
        assert colours and colours == greys, colours - greys

    run(script, app)


def test_the_app_never_loads_the_ml_stack(tmp_path):
    code = (
        "import sys, asyncio\n"
        "from pathlib import Path\n"
        "from tuitrain.tui.app import TuitrainApp\n"
        "from tuitrain.tui.screens import monitor, editor, launch, help, confirm, prompt\n"
        "async def main():\n"
        "    app = TuitrainApp(Path(sys.argv[1]))\n"
        "    async with app.run_test() as pilot:\n"
        "        await pilot.pause(0.5)\n"
        "        await pilot.press('n')\n"
        "        await pilot.pause(1.5)\n"
        "asyncio.run(main())\n"
        "heavy = {'torch', 'transformers', 'datasets', 'evaluate', 'accelerate'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
