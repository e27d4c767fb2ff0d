"""One line of keys for the screen in view (what Textual's Footer shows, at a fraction of its cost
to build: one widget, not one a key). A click on a key runs its action.

It follows the focus, as Textual's Footer does: the focused widget's own keys first, then the screen's; a screen
whose keys concern one pane each names them in `PANE_KEYS` (a pane's id → the actions of its keys), and those show
only while that pane holds the focus (they still work from anywhere on the screen; the help and the palette list
them all). The app's own keys (quit, help) always show, at the end of the screen's: where the line is too
narrow, the screen's last keys give way whole (an ellipsis says so)."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.widget import Widget


class KeyBar(Widget):
    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $footer-background; color: $footer-foreground; }
    KeyBar > .keybar--key { color: $footer-key-foreground; text-style: bold; }
    """
    COMPONENT_CLASSES = {"keybar--key"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, object, str]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._focus_moved)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _focus_moved(self, _screen: object) -> None:
        self.refresh()

    def _focus_chain(self) -> list[Widget]:
        """The focused widget and the widgets it is in, up to (not with) the screen."""
        screen = self.screen
        chain: list[Widget] = []
        node: object = screen.focused
        while isinstance(node, Widget) and node is not screen:
            chain.append(node)
            node = node.parent
        return chain

    def _shown_keys(self) -> list[tuple[object, Binding]]:
        screen = self.screen
        panes: dict[str, frozenset[str]] = getattr(screen, "PANE_KEYS", {})
        chain = self._focus_chain()
        here = frozenset().union(*(panes.get(node.id or "", frozenset()) for node in chain))
        claimed = frozenset().union(*panes.values())
        out: list[tuple[object, Binding]] = []
        for node in (*chain, screen, self.app):
            for binding in getattr(node, "BINDINGS", []):
                if not (isinstance(binding, Binding) and binding.show and binding.description):
                    continue
                if node is screen and binding.action in claimed and binding.action not in here:
                    continue  # another pane's key
                out.append((node, binding))
        return out

    def render(self) -> Text:
        key_style: Style = self.get_component_rich_style("keybar--key")
        width = self.size.width or 10_000
        chunks: list[tuple[object, str, str, str]] = []
        for node, binding in self._shown_keys():
            key = binding.key_display or self.app.get_key_display(binding)
            chunks.append((node, binding.action, f" {key} ", f"{binding.description} "))
        screen_keys = [c for c in chunks if c[0] is not self.app]
        app_keys = [c for c in chunks if c[0] is self.app]
        room = width - sum(len(k) + len(d) for _, _, k, d in app_keys)
        kept: list[tuple[object, str, str, str]] = []
        for chunk in screen_keys:
            size = len(chunk[2]) + len(chunk[3])
            if size > room - (2 if len(kept) + 1 < len(screen_keys) else 0):  # keep room for the ellipsis
                break
            kept.append(chunk)
            room -= size
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        self._spans = []
        for position, (node, action, key, description) in enumerate([*kept, *app_keys]):
            if position == len(kept) and len(kept) < len(screen_keys):
                text.append("… ")
            start = text.cell_len
            text.append(key, style=key_style)
            text.append(description)
            self._spans.append((start, text.cell_len, node, action))
        palette = " ^p palette "
        if self.size.width and text.cell_len + len(palette) <= width:
            text.append(" " * (width - text.cell_len - len(palette)))
            text.append(palette, style=key_style)
        return text

    async def on_click(self, event: events.Click) -> None:
        for start, end, node, action in self._spans:
            if start <= event.x < end:
                await node.run_action(action)  # type: ignore[attr-defined]
                return
