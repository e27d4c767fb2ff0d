"""Tabs that show the pane they are told to show (a key, a click, `active`), and never one only because a
widget inside a hidden pane got the focus.

Textual's TabbedContent shows the pane of any widget that is focused. A screen that switches a tab and then
focuses the new pane's first widget asks for that focus a moment later; when keys come quickly, the next switch
happens in between, the late focus lands in the pane just left, and the tabs go back to it: keys seemed lost
and the user ended on the wrong tab. A screen that wants a pane shown sets `active` first."""

from __future__ import annotations

from textual.widgets import TabbedContent, TabPane


class SteadyTabbedContent(TabbedContent):
    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        event.stop()
        event.prevent_default()  # not TabbedContent's own handler, which shows the focused widget's pane
