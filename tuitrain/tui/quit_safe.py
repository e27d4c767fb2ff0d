"""A screen opened as the app quits sets nothing up.

Textual still mounts a screen pushed just before the app exits (a monitor opened by a launch as the user presses
`q`, a dialog as the terminal closes) while it prunes that screen's widgets: the screen's `on_mount` then finds its
own panes gone (`NoMatches`) and the app ends in a traceback. Every screen of the app is built on `QuitSafe`, which
drops the screen's Mount once the app has let go of it: `is_attached` is Textual's own test of an app told to exit,
and `app.is_running` is False once it shuts down without one (Pilot's end, which CI met)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events

if TYPE_CHECKING:
    from textual.screen import Screen

    _Base = Screen[Any]
else:
    _Base = object


class QuitSafe(_Base):
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Mount) and not (self.is_attached and self.app.is_running):
            return
        await super().on_event(event)
