"""Words: a Static whose text is text. Textual's Static reads a `str` as markup and paints control characters as
they are; every pane of words in the app (titles, hints, problems, a host's trouble, a field's error) is a Words,
so a run's, a file's, a host's or the user's words show as they are (tui.plain)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.visual import VisualType
from textual.widgets import Static

from tuitrain.tui.plain import visible, visible_text


def _text(content: VisualType) -> VisualType:
    if isinstance(content, str):
        return visible(content)
    return visible_text(content) if isinstance(content, Text) else content


class Words(Static):
    def __init__(self, content: VisualType = "", **options: Any) -> None:
        super().__init__(_text(content), markup=False, **options)

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        super().update(_text(content), layout=layout)
