"""Issue 24: `d` on the Compare screen shows what differs between the first two marked runs (the lines
`tuitrain diff` prints), and hides it again."""

from __future__ import annotations

import json

from test_manifest import manifest
from test_tui_app import base, make_app, run, until  # noqa: F401  (base: the fixture)
from test_tui_compare import open_compare
from test_tui_fixtures import FAILED, FINISHED


def test_d_on_compare_shows_what_differs_between_the_two_runs(base):  # noqa: F811
    for run_id, torch in ((FINISHED, "2.3.1"), (FAILED, "2.2.0")):
        machines = base / "runs" / run_id / "machines"
        machines.mkdir(exist_ok=True)
        (machines / "machine-0-manifest.json").write_text(json.dumps(manifest(0, "gpu-box", torch)))
    app = make_app(base)

    async def script(pilot):
        screen = await open_compare(pilot, [FINISHED, FAILED])
        panel = screen.query_one("#diff-panel")
        assert not panel.display
        await pilot.press("d")
        await until(pilot, lambda: "torch" in str(panel.render()), what="the diff's lines")
        text = str(panel.render())
        assert panel.display
        assert f"a  {FINISHED} · demo" in text and f"b  {FAILED} · demo" in text
        assert "versions  torch  2.3.1 → 2.2.0" in text, text
        await pilot.press("d")
        await until(pilot, lambda: not panel.display, what="the panel hidden again")
        assert type(app.screen).__name__ == "CompareScreen"

    run(script, app, size=(120, 40))
