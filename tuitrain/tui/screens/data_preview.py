"""The training data before a launch: the first rows as the engine tokenizes them, the label
balance and the token lengths with a suggested max_length (tuitrain.profile.preview, in a worker)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.widgets.words import Words


class DataPreviewScreen(PassesFailedWorkUp, QuitSafe, ModalScreen[None]):
    DEFAULT_CSS = """
    DataPreviewScreen { align: center middle; }
    DataPreviewScreen > Vertical {
        width: 95%; max-width: 130; height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    DataPreviewScreen #preview-title { text-style: bold; height: auto; }
    DataPreviewScreen #preview { height: auto; }
    """
    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, path: Path, overrides: Sequence[str] = (), rows: int = 5) -> None:
        super().__init__()
        self.path = Path(path)
        self.overrides = list(overrides)
        self.rows = rows
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Words(Text.assemble(f"Training data of {self.path.stem}  ", ("escape: close", "dim")), id="preview-title")
            with VerticalScroll(id="preview-box"):
                yield Words("reading the data…", id="preview")

    def on_mount(self) -> None:
        self.query_one("#preview-box").focus()
        self.read()

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def read(self) -> None:
        from tuitrain.profile import ProfileError, load_profile
        from tuitrain.profile.preview import preview_lines, preview_profile

        try:
            lines = preview_lines(preview_profile(load_profile(self.path, self.overrides), rows=self.rows))
        except ProfileError as exc:
            lines = [str(p) for p in exc.problems]
        except OSError as exc:
            lines = [f"{self.path}: cannot be read ({exc.strerror or exc})"]
        self.app.call_from_thread(self._show, lines)

    def _show(self, lines: list[str]) -> None:
        self.lines = lines
        self.query_one("#preview", Static).update(Text("\n".join(lines)))

    def action_close(self) -> None:
        self.dismiss(None)
