"""One line about the machine at the foot of Home (the text comes from `gpu_panel.strip_line`)."""

from __future__ import annotations

from tuitrain.tui.widgets.text_line import TextLine


class HardwareStrip(TextLine):
    DEFAULT_CSS = """
    HardwareStrip { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """
