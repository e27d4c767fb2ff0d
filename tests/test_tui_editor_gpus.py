"""The editor's GPU picker keeps [hardware] gpus in the order the user means (issue 13, defect 1):
gpus = [2, 0] makes physical GPU 2 cuda:0. Ticking goes last, unticking takes out one GPU, the
cuda:N each ticked GPU becomes is shown beside it and under the list, and keys move a GPU earlier or
later. GPUs come from a recorded NVML table (eight H100s), the one stand-in allowed."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from test_editor_model import DEMO
from test_tui_app import make_app, run, until
from test_tui_fixtures import make_runs

TABLE = Path(__file__).parent / "fixtures" / "nvml" / "eight_h100.json"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    make_runs(tmp_path / "runs")
    return tmp_path


def gpu_app(base: Path):
    from tuitrain.hardware import Hardware
    from tuitrain.hardware.devices import discover, no_identity
    from tuitrain.hardware.recorded import RecordedNvml, load_table

    gpus = discover(RecordedNvml(load_table(TABLE)), no_identity).gpus
    return make_app(base, hardware=Hardware(gpus=gpus, cpu_count=16))


def write_profile(base: Path, gpus: str | None) -> Path:
    """The demo on CUDA with ddp, with `gpus = ...` written as given (None: no gpus key)."""
    text = DEMO.replace('accelerator = "cpu"', 'accelerator = "cuda"' + (f"\ngpus = {gpus}" if gpus else ""))
    text = text.replace('strategy = "single"\nnum_processes = 1', 'strategy = "ddp"')
    (base / "profiles").mkdir(exist_ok=True)
    path = base / "profiles" / "gpus.toml"
    path.write_text(text)
    return path


async def open_picker(pilot, path: Path):
    from textual.widgets import TabbedContent

    app = pilot.app
    app.open_editor(path)
    await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="the editor")
    editor = app.screen
    editor.query_one("#sections", TabbedContent).active = "sec-hardware"
    gpu_list = await until(pilot, lambda: editor.query("#gpu-list").first() if editor.query("#gpu-list") else None,
                           what="the GPU checklist")
    await until(pilot, lambda: gpu_list.option_count == 8, what="eight GPUs")
    gpu_list.focus()
    await pilot.pause(0.1)
    return editor, gpu_list


async def toggle(pilot, gpu_list, index: int) -> None:
    """Highlight GPU `index` and press space, as a user does."""
    gpu_list.highlighted = index
    await pilot.press("space")
    await pilot.pause(0.1)


def labels(gpu_list) -> dict[int, str]:
    """The cuda:N label shown beside each GPU that has one."""
    out = {}
    for i in range(gpu_list.option_count):
        prompt = str(gpu_list.get_option_at_index(i).prompt)
        if "→ cuda:" in prompt:
            out[i] = prompt.rsplit("→ ", 1)[1]
    return out


def mapping(editor) -> str:
    return str(editor.query_one("#gpu-mapping").content)


def test_ticking_and_unticking_another_gpu_keeps_the_order_written(base):
    path = write_profile(base, "[2, 0]")
    app = gpu_app(base)

    async def script(pilot):
        editor, gpu_list = await open_picker(pilot, path)
        assert labels(gpu_list) == {2: "cuda:0", 0: "cuda:1"}
        assert "physical GPU 2 → cuda:0" in mapping(editor) and "physical GPU 0 → cuda:1" in mapping(editor)
        await toggle(pilot, gpu_list, 5)
        await until(pilot, lambda: editor.data["hardware"]["gpus"] == [2, 0, 5], what="GPU 5 last")
        await until(pilot, lambda: labels(gpu_list) == {2: "cuda:0", 0: "cuda:1", 5: "cuda:2"}, what="its label")
        await toggle(pilot, gpu_list, 5)
        await until(pilot, lambda: editor.data["hardware"]["gpus"] == [2, 0], what="GPU 5 gone")
        await until(pilot, lambda: "CUDA_VISIBLE_DEVICES=2,0" in str(editor.query_one("#plan").content),
                    what="the preview in that order")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(140, 50))
    assert tomllib.loads(path.read_text())["hardware"]["gpus"] == [2, 0]


def test_gpus_ticked_2_then_0_stay_in_that_order_and_can_be_reordered(base):
    path = write_profile(base, None)
    app = gpu_app(base)

    async def script(pilot):
        editor, gpu_list = await open_picker(pilot, path)
        assert labels(gpu_list) == {} and "physical GPU 7 → cuda:7" in mapping(editor)  # none ticked: every GPU
        await toggle(pilot, gpu_list, 2)
        await toggle(pilot, gpu_list, 0)
        await until(pilot, lambda: editor.data["hardware"]["gpus"] == [2, 0], what="2 then 0")
        await until(pilot, lambda: labels(gpu_list) == {2: "cuda:0", 0: "cuda:1"}, what="the labels")
        assert mapping(editor).splitlines()[:2] == ["physical GPU 2 → cuda:0", "physical GPU 0 → cuda:1"]

        # GPU 0 (highlighted) moves earlier: it becomes cuda:0
        await pilot.press("shift+up")
        await until(pilot, lambda: editor.data["hardware"]["gpus"] == [0, 2], what="0 moved first")
        await until(pilot, lambda: labels(gpu_list) == {0: "cuda:0", 2: "cuda:1"}, what="the labels follow")
        assert mapping(editor).splitlines()[:2] == ["physical GPU 0 → cuda:0", "physical GPU 2 → cuda:1"]
        gpu_list.highlighted = 2
        await pilot.press("shift+up")
        await until(pilot, lambda: editor.data["hardware"]["gpus"] == [2, 0], what="2 moved back first")
        await until(pilot, lambda: "CUDA_VISIBLE_DEVICES=2,0" in str(editor.query_one("#plan").content),
                    what="the preview in that order")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not editor.dirty, what="the save")

    run(script, app, size=(140, 50))
    assert tomllib.loads(path.read_text())["hardware"]["gpus"] == [2, 0]


def test_a_gpu_named_by_uuid_keeps_its_place_and_spelling(base):
    import json

    uuid = json.loads(TABLE.read_text())["devices"][3]["uuid"]
    path = write_profile(base, f'["{uuid}", 1]')
    app = gpu_app(base)

    async def script(pilot):
        editor, gpu_list = await open_picker(pilot, path)
        assert labels(gpu_list) == {3: "cuda:0", 1: "cuda:1"}
        await toggle(pilot, gpu_list, 6)
        await toggle(pilot, gpu_list, 1)
        await until(pilot, lambda: editor.data["hardware"]["gpus"] == [uuid, 6], what="1 out, 6 in, the UUID first")

    run(script, app, size=(140, 50))


def test_with_accelerator_cpu_the_picker_says_no_gpu_is_used(base):
    """It used to show 'physical GPU 0 → cuda:0' for a profile whose ranks train on the CPU (issue 21, item 11)."""
    from tuitrain.tui.editor_model import CPU_MAPPING

    path = write_profile(base, "[0]")
    path.write_text(path.read_text().replace('accelerator = "cuda"', 'accelerator = "cpu"'))
    app = gpu_app(base)

    async def script(pilot):
        editor, gpu_list = await open_picker(pilot, path)
        await until(pilot, lambda: CPU_MAPPING in mapping(editor), what="the CPU line")
        assert "→ cuda:" not in mapping(editor) and labels(gpu_list) == {}

    run(script, app, size=(140, 50))
