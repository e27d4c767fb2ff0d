"""The smaller ones of issue 34, item 6, in the app: edits of `[[workstations]]` take effect without a restart; hints
name the key that does it in the app, not a CLI command; a process whose command cannot be seen reads `N/A` (it read
`A`); a script profile's overrides placeholder suggests keys it takes (not `training.max_steps`); "Where:" sits beside
its select (it was under it); the GPU picker's hint shows whole (it was cut at "(none ticked"); a command in a
preview never leaves its closing quote alone on a line."""

from __future__ import annotations

import shlex
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import cli, gpu_report, record, wait_for
from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_fixtures import RUNNING
from test_tui_home_columns import a_box_answers, header, listed_but_not_streamed
from test_tui_home_table import shown_ids
from test_tui_narrow import shown_rows
from tuitrain.profile.lookup import BUILTIN_DIR


def said(app, words: str) -> str | None:
    return next((n.message for n in app._notifications if words in n.message), None)


def launch_dialog(app, selector: str):
    """The launch dialog's widget once it is composed (None before)."""
    screen = app.screen
    return screen.query_one(selector) if type(screen).__name__ == "LaunchScreen" and screen.query(selector) else None


# ------------------------------------------------------------------------------ workstations, without a restart

def test_an_edit_of_the_workstations_takes_effect_without_a_restart(base, monkeypatch):  # noqa: F811
    listed_but_not_streamed(base, monkeypatch, [])
    settings_file = base / "config.toml"
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: len(shown_ids(app)) == 3, what="this machine's runs")
        await pilot.pause(0.5)
        assert header(app)[0] == "RUN"
        settings_file.write_text('[[workstations]]\nhost = "node9"\n')
        await until(pilot, lambda: header(app)[0] == "HOST" and "node9" in shown_ids(app), timeout=20,
                    what="node9 watched, without a restart")
        settings_file.write_text("")
        await until(pilot, lambda: header(app)[0] == "RUN" and len(shown_ids(app)) == 3, timeout=20,
                    what="node9 let go")

    run(script, app, size=(120, 30))


def test_the_streams_follow_the_settings(monkeypatch):
    from tuitrain.remote import runs_stream
    from tuitrain.remote.workstations import Workstation
    from tuitrain.tui.workstation_streams import WorkstationStreams

    events: list[str] = []

    class FakeStream:
        def __init__(self, station, version, on_news, on_gpus=None):
            self.station = station

        def start(self):
            events.append(f"start {self.station.host} {self.station.python}")

        def stop(self, wait=0.0):
            events.append(f"stop {self.station.host}")

    monkeypatch.setattr(runs_stream, "RunsStream", FakeStream)
    streams = WorkstationStreams(lambda news: None, lambda news: None)
    assert streams.follow([Workstation("a", "py"), Workstation("b", "py")]) == ["a", "b"]
    assert streams.follow([Workstation("b", "py3"), Workstation("c", "py")]) == ["b", "c"]
    streams.stop()
    assert events == ["start a py", "start b py", "stop a", "stop b", "start b py3", "start c py", "stop b", "stop c"]


# ------------------------------------------------------------------------------ hints name keys

def test_another_boxs_run_on_home_says_the_key_that_reaches_it(base, monkeypatch):  # noqa: F811
    listed_but_not_streamed(base, monkeypatch, ["node1"])
    app = make_app(base)

    async def script(pilot):
        await until(pilot, lambda: header(app)[0] == "HOST", what="the HOST column")
        a_box_answers(app, "node1")
        await until(pilot, lambda: f"node1:{RUNNING}" in shown_ids(app), what="node1's runs")
        table = app.screen.query_one("#runs")
        table.move_cursor(row=shown_ids(app).index(f"node1:{RUNNING}"))
        await pilot.press("s")
        message = await until(pilot, lambda: said(app, "runs on node1"), what="what reaches it")
        assert "enter opens its monitor" in message and "tuitrain" not in message, message

    run(script, app, size=(120, 30), notifications=True)


def test_a_box_process_of_a_run_says_the_key_and_an_unseen_command_reads_na(base, monkeypatch):  # noqa: F811
    from tuitrain.tui.widgets.hardware_strip import HardwareStrip
    from tuitrain.tui.workstation_streams import BoxGpus

    listed_but_not_streamed(base, monkeypatch, ["node1"])
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(Path(__file__).parent / "fixtures" / "nvml" / "eight_h100.json"))
    sample = {"nvml": {"status": "NVML: 1 GPU"}, "gpus": [
        {"index": 0, "name": "NVIDIA H100", "memory_used": 6 * 2**30, "memory_total": 80 * 2**30, "processes": [
            {"pid": 7, "used_memory": 6 * 2**30, "owner": {"run_id": RUNNING, "rank": 0,
                                                          "describe": f"rank 0 of run {RUNNING}"}}]}]}
    app = make_app(base, hardware_line=None, hardware=None, hardware_interval=0.5)  # the GPUs screen draws on samples

    async def script(pilot):
        await until(pilot, lambda: header(app)[0] == "HOST", what="the HOST column")
        app.post_message(HardwareStrip.HostGpus(BoxGpus("node1", gpus=gpu_report(sample))))
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "GpusScreen", what="the GPUs screen")
        table = app.screen.query_one("#gpu-table")
        await until(pilot, lambda: "node1/0:7" in [str(r.key.value) for r in table.ordered_rows], what="node1's rank")
        table.move_cursor(row=[str(r.key.value) for r in table.ordered_rows].index("node1/0:7"))
        command = str(table.get_row("node1/0:7")[3])
        assert command == "N/A", command  # its command, not seen from here (it read `A`)
        await pilot.press("k")
        message = await until(pilot, lambda: said(app, "pid 7 runs on node1"), what="what reaches it")
        assert f"enter on node1:{RUNNING} in Home opens its monitor, where s stops it" in message, message
        assert "`tuitrain" not in message

    run(script, app, size=(120, 30), notifications=True)


def test_a_run_queued_from_the_launch_dialog_says_its_monitor_shows_what_it_waits_for(base, monkeypatch):  # noqa: F811
    from queue_tables import gpu_two
    from tuitrain.tui.screens.launch import LaunchScreen

    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(base / "queue"))
    gpu_two(base / "nvml.json", taken=True)
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(base / "nvml.json"))
    app = make_app(base)
    queued: list[Path] = []

    async def script(pilot):
        app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml", ["hardware.accelerator=cuda", "hardware.gpus=[2]"]))
        await until(pilot, lambda: launch_dialog(app, "#queue"), what="the launch dialog")
        await pilot.press("ctrl+o")
        message = await until(pilot, lambda: said(app, "queued run "), timeout=60, what="the queued run's toast")
        queued.append(base / "runs" / message.split()[2].rstrip(":"))
        assert "its monitor says what it waits for" in message and "tuitrain" not in message, message

    try:
        run(script, app, size=(120, 40), notifications=True)
    finally:
        for run_dir in queued:
            assert cli("cancel", run_dir.name, runs_dir=base / "runs").returncode == 0
            wait_for(lambda run_dir=run_dir: record(run_dir)["status"] == "cancelled", 30, "the queued run cancelled")


# ------------------------------------------------------------------------------ the launch dialog and the editor

def test_a_script_profiles_overrides_placeholder_names_keys_it_takes(base):  # noqa: F811
    from textual.widgets import Input

    from tuitrain.tui.screens.launch import SCRIPT_EXAMPLE, LaunchScreen

    (base / "train.py").write_text("print('training')\n")
    profile = base / "mine.toml"
    profile.write_text('[script]\npath = "train.py"\n\n[hardware]\naccelerator = "cpu"\n')
    app = make_app(base)

    async def script(pilot):
        app.push_screen(LaunchScreen(profile))
        box: Input = await until(pilot, lambda: launch_dialog(app, "#overrides"), what="the launch dialog")
        await until(pilot, lambda: box.placeholder == SCRIPT_EXAMPLE, what="a script's placeholder")
        assert "training." not in box.placeholder

    run(script, app, size=(120, 40))


def test_where_sits_beside_its_select(base, monkeypatch):  # noqa: F811
    from textual.widgets import Select, Static

    from tuitrain.tui.screens.launch import LaunchScreen

    listed_but_not_streamed(base, monkeypatch, ["node1"])
    app = make_app(base)

    async def script(pilot):
        app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml"))
        select: Select = await until(pilot, lambda: launch_dialog(app, "#where"), what="the launch dialog")
        await pilot.pause(0.3)
        label = app.screen.query_one("#where-row").query_one(Static)
        said, chosen = label.content_region, select.content_region  # where each one's words are painted
        assert said.y == chosen.y and said.right <= chosen.x, (said, chosen)

    run(script, app, size=(120, 40))


def test_the_gpu_pickers_hint_shows_whole(base):  # noqa: F811
    from test_tui_editor_gpus import gpu_app, open_picker, write_profile

    path = write_profile(base, "[2, 0]")
    app = gpu_app(base)

    async def script(pilot):
        editor, _gpu_list = await open_picker(pilot, path)
        await pilot.pause(0.3)
        shown = " ".join(row.strip() for row in shown_rows(editor.query_one("#gpu-how")))
        assert "(none ticked = all visible)" in shown and shown.endswith("earlier / later"), shown

    run(script, app, size=(120, 40))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(codec="ascii", exclude_characters="\n\r\t\x0b\x0c"), max_size=60),
                min_size=1, max_size=8), st.integers(3, 100))
def test_a_folded_command_never_leaves_a_lone_character_on_a_line(args: list[str], width: int) -> None:
    from tuitrain.tui.command_fold import fold_command

    command = shlex.join(args)
    lines = fold_command(command, width)
    assert all(len(line) <= width for line in lines), lines
    assert "".join(lines).replace(" ", "") == command.replace(" ", "")  # nothing lost, nothing added
    words = set(command.split())
    assert all(len(line) > 1 or line in words for line in lines), (lines, width)  # no lone closing quote


def test_the_previews_fold_their_commands(base):  # noqa: F811
    """A quoted path one character longer than the pane: Rich puts its closing quote on a line of its own, the
    launch dialog's and the editor's previews (tui.command_fold) do not."""
    from rich.console import Console
    from rich.text import Text

    from tuitrain.tui.command_fold import WithCommands

    command = "accelerate launch -m tuitrain.engine '/home/ann/project/runs/<new-run>'"
    width = len("'/home/ann/project/runs/<new-run>'") - 1

    def lines(renderable) -> list[str]:
        console = Console(width=width, record=True, file=open("/dev/null", "w"))
        console.print(renderable)
        return [line.rstrip() for line in console.export_text().splitlines()]

    assert "'" in lines(Text(command))  # what the previews showed
    assert "'" not in lines(WithCommands([Text("cpu · 1 process(es)\n"), command]))
    app = make_app(base)

    async def script(pilot):
        from tuitrain.tui.screens.launch import LaunchScreen

        app.push_screen(LaunchScreen(BUILTIN_DIR / "demo.toml"))
        plan = await until(pilot, lambda: launch_dialog(app, "#plan"), what="the launch dialog")
        await until(pilot, lambda: "accelerate launch" in str(plan.content), timeout=30, what="the plan")
        assert isinstance(plan.content, WithCommands)
        app.pop_screen()
        app.open_editor(BUILTIN_DIR / "demo.toml")
        editor = await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded
                             and app.screen, what="the editor")
        preview = editor.query_one("#plan")
        await until(pilot, lambda: "accelerate launch" in str(preview.content), timeout=30, what="its preview")
        assert isinstance(preview.content, WithCommands)

    run(script, app, size=(120, 40))


def test_an_unseen_command_is_not_cut_as_a_path():
    from tuitrain.hardware.na import NA
    from tuitrain.hardware.processes import short_command

    assert short_command(str(NA)) == "N/A" and short_command("/opt/venv/bin/python train.py") == "python train.py"

