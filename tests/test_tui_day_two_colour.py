"""Issue 21, defect 9: colour alone carried meaning. A ticked and an unticked GPU in the editor's picker were both
`▐X▌`, told apart by colour; the export dialog's three choices were all `●`. Under NO_COLOR, on a monochrome
terminal or to a colour-blind eye they read the same; now their marks differ as text."""

from __future__ import annotations

import asyncio
import json

from test_tui_app import make_app, run, until
from test_tui_editor_gpus import toggle, write_profile
from test_tui_fixtures import make_runs
from test_tui_gpus_picker import FIXTURES, open_gpu_list


def painted(widget) -> list[str]:
    return [widget.render_line(y).text for y in range(widget.size.height)]


def test_ticked_and_unticked_gpus_read_apart_without_colour(tmp_path, monkeypatch):
    table = json.loads((FIXTURES / "four_gpu_mixed.json").read_text())
    (tmp_path / "table.json").write_text(json.dumps(table))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(tmp_path / "table.json"))
    make_runs(tmp_path / "runs")
    path = write_profile(tmp_path, "[2, 0]")
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        gpu_list = await open_gpu_list(pilot, app, path)
        await until(pilot, lambda: gpu_list.size.height >= 4, what="the GPUs listed")
        lines = painted(gpu_list)[:4]
        assert [line[:3] for line in lines] == ["▐✓▌", "▐ ▌", "▐✓▌", "▐ ▌"], lines
        assert lines[0].rstrip().endswith("→ cuda:1") and lines[2].rstrip().endswith("→ cuda:0")
        gpu_list.focus()
        await toggle(pilot, gpu_list, 1)
        await until(pilot, lambda: painted(gpu_list)[1].startswith("▐✓▌"), what="GPU 1's box ticked")
        await toggle(pilot, gpu_list, 0)
        await until(pilot, lambda: painted(gpu_list)[0].startswith("▐ ▌"), what="GPU 0's box emptied")

    run(script, app, size=(140, 50))


def test_the_export_dialogs_choice_reads_apart_without_colour(tmp_path):
    from tuitrain.tui.screens.export import ExportChoice, ExportScreen

    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)
    output = tmp_path / "output"
    choices = [ExportChoice("best", output / "checkpoint-4", 4), ExportChoice("last", output / "checkpoint-8", 8),
               ExportChoice("selected", output / "checkpoint-6", 6)]

    async def main() -> None:
        async with app.run_test(size=(110, 32)) as pilot:
            dialog = ExportScreen("20260101-000000-demo", output, choices)
            await app.push_screen(dialog)
            buttons = [dialog.query_one(f"#export-{kind}") for kind in ("best", "last", "selected")]
            await until(pilot, lambda: all(b.size.width for b in buttons), what="the dialog")

            def marks() -> list[str]:
                return [painted(b)[0].lstrip()[:3] for b in buttons]

            assert marks() == ["▐●▌", "▐○▌", "▐○▌"], marks()
            dialog.pick("last")
            await until(pilot, lambda: marks() == ["▐○▌", "▐●▌", "▐○▌"], what="the last chosen")
            assert dialog.chosen.kind == "last"

    asyncio.run(main())


def test_an_example_under_a_field_reads_as_an_example(tmp_path):
    """Issue 21, defect 11: the help under train_file read `train_file = "data/train.csv"`, as if it were its value."""
    from tuitrain.profile.schema import SCHEMA
    from tuitrain.tui.form_fields import field_for
    from tuitrain.tui.widgets.field_row import help_line

    assert help_line(field_for(("data", "train_file"), SCHEMA["data"]["train_file"])) == "e.g. data/train.csv"
    assert help_line(field_for(("data", "validation_file"), SCHEMA["data"]["validation_file"])) == \
        "e.g. data/validation.csv"
    name = help_line(field_for(("run", "name"), SCHEMA["run"]["name"]))  # its own help, not its example
    assert name.startswith("run name") and "e.g." not in name
