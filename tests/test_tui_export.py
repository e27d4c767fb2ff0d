"""The monitor's export (x): the best, the last or the selected checkpoint into a folder prefilled
as <output_dir>/export-<step>, exported by `tuitrain export` in a worker. On a copy of the shared
real demo run (checkpoints at steps 4 and 8)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from test_tui_app import until
from test_tui_resume import app_on, run_copy  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow  # uses the shared finished run


def test_x_exports_the_last_checkpoint_into_its_prefilled_folder(run_copy: Path):  # noqa: F811
    app = app_on(run_copy)
    output = run_copy / "output"

    async def main() -> list[str]:
        async with app.run_test(size=(110, 32), notifications=True) as pilot:
            await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", 20, "the monitor")
            monitor = app.screen
            await until(pilot, lambda: len(monitor.run_watch.checkpoints) == 2, 20, "both checkpoints")
            await pilot.press("x")
            await until(pilot, lambda: type(app.screen).__name__ == "ExportScreen", 10, "the export dialog")
            dialog = app.screen
            kinds = [c.kind for c in dialog.choices]
            assert kinds[0] == "best" and "last" in kinds, kinds
            best = dialog.choices[0].step
            field = dialog.query_one("#export-out")
            assert field.value == str(output / f"export-{best}")
            dialog.pick("last")
            await until(pilot, lambda: field.value == str(output / "export-8"), 5, "the last checkpoint's folder")
            assert dialog.chosen.path.name == "checkpoint-8"
            await pilot.press("enter")
            await until(pilot, lambda: app.screen is monitor, 5, "the dialog closed")
            await until(pilot, lambda: any(n.title in ("Exported", "Cannot export") for n in app._notifications),
                        300, "the export's end")
            return [f"{n.title}: {n.message}" for n in app._notifications]

    said = asyncio.run(main())
    done = [line for line in said if line.startswith("Exported: ")]
    assert done and str(output / "export-8") in done[0], said
    folder = output / "export-8"
    assert json.loads((folder / "config.json").read_text())["model_type"] == "bert"
    assert (folder / "model.safetensors").stat().st_size > 0
    assert not (folder / "optimizer.pt").exists()  # a model, not a training state
