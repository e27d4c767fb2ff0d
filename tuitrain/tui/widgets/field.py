"""Field: the app's one-line text box (Textual's Input), for every field, filter and search.

What is typed or pasted is kept as text (tui.plain.typed): an escape sequence in a paste is dropped, not painted into
the terminal. A number field ("integer", "number") checks each edit with a pattern that takes time in proportion to
the text: Textual's own (`(?:\\d*|\\d+_)*`) backtracks, and 18 digits and a letter pasted into training.learning_rate
froze the app for a minute (issue 34, item 5; benchmarks/tui_paste.py)."""

from __future__ import annotations

from typing import Any, Literal

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
