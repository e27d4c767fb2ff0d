"""The editor's GPU picker warns beside a ticked GPU that is taken (issue 13): busy computing, not only
near-full of memory, by the one rule the launch's preflight uses. The GPUs are a recorded NVML table
(the one stand-in allowed), sampled live by the app."""

from __future__ import annotations

import json
from pathlib import Path

from test_tui_app import make_app, run, until
from test_tui_editor_gpus import toggle, write_profile
from test_tui_fixtures import make_runs

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"


def prompts(gpu_list) -> list[str]:
    return [str(gpu_list.get_option_at_index(i).prompt) for i in range(gpu_list.option_count)]


async def open_gpu_list(pilot, app, path):
    """The editor on `path`, its Hardware tab shown, once the app has a hardware sample; returns the GPU checklist."""
    from textual.widgets import TabbedContent

    await until(pilot, lambda: app.hardware is not None and app.hardware_view is not None, what="a sample")
    app.open_editor(path)
    await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.loaded, what="the editor")
    editor = app.screen
    editor.query_one("#sections", TabbedContent).active = "sec-hardware"
    return await until(pilot, lambda: editor.query("#gpu-list").first() if editor.query("#gpu-list") else None,
                       what="the GPU checklist")


def test_a_ticked_gpu_busy_by_utilisation_with_little_memory_is_flagged(tmp_path, monkeypatch):
    table = json.loads((FIXTURES / "four_gpu_mixed.json").read_text())
    table["devices"][2]["utilization"] = {"gpu": 95, "memory": 3}  # the RTX 4090: 95% busy, 1 of 24 GiB used
    table["devices"][2]["memory"]["used"] = 2**30
    table["devices"][2]["compute_processes"] = [{"pid": 4100077, "used_memory": 2**30}]
    (tmp_path / "table.json").write_text(json.dumps(table))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(tmp_path / "table.json"))
    make_runs(tmp_path / "runs")
    path = write_profile(tmp_path, "[2, 3]")
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        gpu_list = await open_gpu_list(pilot, app, path)
        shown = await until(pilot, lambda: prompts(gpu_list) if "→ cuda:0" in prompts(gpu_list)[2] else None,
                            what="the ticked GPUs")
        assert shown[2].startswith("GPU 2  NVIDIA GeForce RTX 4090  1.0/24.0 GiB in use, 95%")
        assert shown[2].endswith("  ⚠ taken: 95% busy, held by pid 4100077 (user unknown, 1.0 GiB)  → cuda:0")
        assert "⚠" not in shown[3] and shown[3].endswith("→ cuda:1")  # idle
        assert "⚠" not in shown[1]  # near-full and busy, but not ticked
        gpu_list.focus()
        await toggle(pilot, gpu_list, 1)  # ticked now: memory and utilisation both say so
        flagged = ("⚠ taken: 96% full, 97% busy, held by pid 4100001 (user unknown, 30.0 GiB), pid 4100002 "
                   "(user unknown, 16.0 GiB)  → cuda:2")
        await until(pilot, lambda: prompts(gpu_list)[1].endswith(flagged), what="GPU 1 flagged")
        await toggle(pilot, gpu_list, 2)  # unticked: no warning beside it
        await until(pilot, lambda: "⚠" not in prompts(gpu_list)[2], what="GPU 2's warning gone")

    run(script, app, size=(140, 50))


def test_a_lost_gpu_reads_lost_and_is_flagged_when_ticked(tmp_path, monkeypatch):
    """Issue 13, defect 7: a GPU that fell off the bus read 'N/A/N/A GiB' and could be ticked without a word."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(FIXTURES / "gpu_lost.json"))  # GPU 1 is lost after 3 samples
    make_runs(tmp_path / "runs")
    path = write_profile(tmp_path, "[0]")
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        gpu_list = await open_gpu_list(pilot, app, path)
        await until(pilot, lambda: prompts(gpu_list)[1] == "GPU 1  NVIDIA GeForce RTX 3090  LOST", what="GPU 1 lost")
        assert "N/A" not in prompts(gpu_list)[1]
        gpu_list.focus()
        await toggle(pilot, gpu_list, 1)
        await until(pilot, lambda: prompts(gpu_list)[1].endswith("LOST  ⚠ lost: stopped answering (NVML), untick it  → cuda:1"),
                    what="the lost GPU flagged once ticked")

    run(script, app, size=(140, 50))
