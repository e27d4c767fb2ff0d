"""Field: the app's one-line text box (Textual's Input), for every field, filter and search.

What is typed or pasted is kept as text (tui.plain.typed): an escape sequence in a paste is dropped, not painted into
the terminal. A number field ("integer", "number") checks each edit with a pattern that takes time in proportion to
the text: Textual's own (`(?:\\d*|\\d+_)*`) backtracks, and 18 digits and a letter pasted into training.learning_rate
froze the app for a minute (benchmarks/tui_paste.py)."""

from __future__ import annotations

from typing import Any, Literal

from textual.actions import SkipAction
from textual.screen import Screen
from textual.validation import Integer, Number
from textual.widgets import Input

from tuitrain.tui.plain import typed

NUMBER_PATTERNS = {
    "integer": r"[-+]?[\d_]*",
    "number": r"[-+]?[\d_]*(?:\.[\d_]*)?(?:[eE][-+]?[\d_]*)?",  # each part after its own sign: no backtracking
}


class Field(Input):
    def __init__(self, value: str | None = None, placeholder: str = "", *,
                 type: Literal["integer", "number", "text"] = "text", **options: Any) -> None:
        if type in NUMBER_PATTERNS and not options.get("validators"):
            options["validators"] = [Integer() if type == "integer" else Number()]
        super().__init__(value, placeholder, type="text", restrict=NUMBER_PATTERNS.get(type), **options)

    def validate_value(self, value: str) -> str:
        return typed(value)

    def focus_now(self) -> None:
        """Take the focus before the app reads its next key (Textual's focus() waits a turn of the app)."""
        self.screen.set_focus(self)


def open_field_key(screen: Screen[Any]) -> None:
    """The first thing an action does whose key opens a field (`/` search, `&`, Home's filter), bound with
    priority=True so that it runs before the app reads the keys after it. A terminal sends a word typed fast (`/loss`)
    at once: with an ordinary binding the app had handed `l o s s` to the log (then the screen's keys: `o` showed the
    output folder, `s` stopped a run) before the search took the focus. Inside a field the key is
    text: SkipAction hands it on to the field."""
    if isinstance(screen.focused, Input):
        raise SkipAction()
