"""A fixed-height line of text that repaints only itself when its text changes.

Static.update() asks for a new layout (its size might change), which repaints the whole screen;
for lines updated every second or faster (progress header, log status, hardware strip) that
would be most of what the app paints. Give a TextLine its height in CSS.

A line longer than the widget ends in an ellipsis, never cut mid-word without a sign. A `str` is text, its control
characters shown (tui.plain.visible), never markup."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from tuitrain.tui.plain import visible, visible_text


class TextLine(Widget):
    DEFAULT_CSS = """
    TextLine { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, text: Text | str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = text
        self._key = self._key_of(text)

    @staticmethod
    def _key_of(text: Text | str) -> str:
        return text.markup if isinstance(text, Text) else text

    def set(self, text: Text | str) -> None:
        key = self._key_of(text)
        if key != self._key:
            self._key = key
            self._text = text
            self.refresh()

    @property
    def text(self) -> str:
        return self._text.plain if isinstance(self._text, Text) else self._text

    def render(self) -> Text:
        return self.one_line(self._text)

    @staticmethod
    def one_line(content: Text | str) -> Text:
        """`content` as one line, ending in an ellipsis where the widget cuts it; words from outside shown as they are
        (control characters as pictures)."""
        text = Text(visible(content), end="") if isinstance(content, str) else visible_text(content).copy()
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text
