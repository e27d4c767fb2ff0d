"""A virtual log view: only the visible lines are read and rendered (an LRU cache keeps recent ones).

The source is a `LogFile` (one rank) or a `MergedLog` (every rank, each line prefixed with its
rank in the rank's colour). Lines show what a terminal would: the text after the last carriage
return (tqdm) with its ANSI colours. The view follows the tail until the user scrolls up, and
follows again from the end (End / G).
"""

from __future__ import annotations

from typing import Protocol

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from tuitrain.runs.logfile import display_text
from tuitrain.tui.format import RANK_STYLES


class LineSource(Protocol):
    generation: int

    @property
    def count(self) -> int: ...

    def raw(self, index: int) -> tuple[int | str | None, bytes]: ...

    def cacheable(self, index: int) -> bool: ...

    def find(self, needle: bytes, start: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None: ...


class LogView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LogView {
        background: $surface;
        color: $text;
        overflow: scroll;
        &:focus { background-tint: $foreground 3%; }
    }
    """
    BINDINGS = [
        Binding("end,G", "follow", "Follow", show=False),
        Binding("home,g", "top", "Top", show=False),
    ]

    class Moved(Message):
        """The view scrolled, or started or stopped following (many may fold into one)."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LogView.Moved)

    follow: reactive[bool] = reactive(True)
    """Whether the view keeps the last line in sight as lines arrive."""

    def __init__(self, source: LineSource, ranks: bool = False, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.source = source
        self.ranks = ranks
        self.line_count = 0
        self._generation = getattr(source, "generation", 0)
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        # lines cropped to the view: while following, every line moves up on each repaint
        self._crops: LRUCache[int, Strip] = LRUCache(1024)
        self._crop_key: tuple[int, int] = (-1, -1)
        self._width = 0
        self._style: Style | None = None
        self.term: str | None = None
        self.current: int | None = None

    # ------------------------------------------------------------------------------ updates
    def refresh_source(self) -> None:
        """Take in what the source indexed since the last call (on the event loop, after a worker)."""
        generation = getattr(self.source, "generation", 0)
        if generation != self._generation:
            self._generation = generation
            self._clear_caches()
            self.current = None
        count = self.source.count
        if count == self.line_count and not self._has_partial_tail():
            return
        old = self.line_count
        self.line_count = count
        for y in range(max(0, old - 4), count):
            if not self.source.cacheable(y):
                self._cache.discard(y)
                self._crops.discard(y)
        self._set_virtual(Size(self._width, count))
        if self.follow and self.max_scroll_y > self.scroll_offset.y:
            self.scroll_end(animate=False, immediate=True, x_axis=False)  # repaints
        else:
            self.refresh()

    def _has_partial_tail(self) -> bool:
        return self.line_count > 0 and not self.source.cacheable(self.line_count - 1)

    def set_source(self, source: LineSource) -> None:
        """Show another source (the merged log folded or not), keeping the follow state."""
        self.source = source
        self._generation = getattr(source, "generation", 0)
        self.line_count = 0
        self._clear_caches()
        self.current = None
        self.refresh_source()
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def set_term(self, term: str | None) -> None:
        self.term = term or None
        self._clear_caches()
        self.refresh()

    def goto(self, index: int) -> None:
        """Show line `index` (a third of the way down) and stop following."""
        self.current = index
        self.follow = False
        if not self.size.height:  # a view just shown has no size until its first layout
            self.call_after_refresh(self.goto, index)
            return
        self._clear_caches()
        self.follow = False
        target = max(0, index - max(1, self.size.height // 3))
        self.scroll_to(y=target, animate=False, immediate=True)
        self.refresh()

    def _clear_caches(self) -> None:
        self._cache.clear()
        self._crops.clear()

    # ------------------------------------------------------------------------------ following
    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.follow = round(new_value) >= self.max_scroll_y
        self.post_message(self.Moved())

    def action_follow(self) -> None:
        self.follow = True
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def action_top(self) -> None:
        self.follow = False
        self.scroll_home(animate=False, immediate=True)

    # ------------------------------------------------------------------------------ rendering
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._clear_caches()
        self._style = None

    @property
    def line_style(self) -> Style:
        """The widget's rich style, computed once per style change (not once a line)."""
        if self._style is None:
            self._style = self.rich_style
        return self._style

    def line_text(self, index: int) -> Text:
        """One line as shown (rank prefix, ANSI colours, search matches)."""
        rank, raw = self.source.raw(index)
        body = display_text(raw)
        text = Text.from_ansi(body, end="") if "\x1b" in body else Text(body, end="")
        text.no_wrap = True
        if self.ranks and rank is not None:
            # one rank in its colour; a line several ranks printed alike ("0-7") stands out in reverse
            style = f"bold {RANK_STYLES[rank % len(RANK_STYLES)]}" if isinstance(rank, int) else "bold reverse"
            prefix = Text(f"{rank}│", style=style, end="")
            text = Text.assemble(prefix, text, no_wrap=True, end="")
        if self.term:
            text.highlight_words([self.term], style="reverse", case_sensitive=False)
        if index == self.current:
            text.stylize("bold underline")
        return text

    def _strip(self, index: int) -> Strip:
        """The line rendered and styled (cached: a repaint of unchanged lines renders nothing)."""
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        text = self.line_text(index)
        segments = list(text.render(self.app.console))
        strip = Strip([s for s in segments if s.text != "\n"], text.cell_len).apply_style(self.line_style)
        if strip.cell_length > self._width:
            self._width = strip.cell_length
            if self._width > self.virtual_size.width:
                self.call_later(self._widen)
        if self.source.cacheable(index):
            self._cache[index] = strip
        return strip

    def _widen(self) -> None:
        if self._width > self.virtual_size.width:
            self._set_virtual(Size(self._width, self.line_count))

    def _set_virtual(self, size: Size) -> None:
        """Grow the scrollable area. Widget.virtual_size asks for a new layout of the whole screen
        (a full repaint); while no scrollbar appears or goes, only this view and its scrollbar
        need repainting, which is what lines arriving 2,000 a second can afford."""
        old = self.virtual_size
        if size == old:
            return
        rows = self.scrollable_content_region.height
        if size.width != old.width or (old.height > rows) != (size.height > rows) or not self.is_mounted:
            self.virtual_size = size
            return
        self.set_reactive(Widget.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        style = self.line_style
        if index >= self.line_count:
            return Strip.blank(width, style)
        if (scroll_x, width) != self._crop_key:
            self._crop_key = (scroll_x, width)
            self._crops.clear()
        cropped = self._crops.get(index)
        if cropped is None:
            cropped = self._strip(index).crop_extend(scroll_x, scroll_x + width, style)
            if self.source.cacheable(index):
                self._crops[index] = cropped
        return cropped

    def visible_text(self) -> list[str]:
        """The plain text of the lines in view (for tests and search)."""
        top = self.scroll_offset.y
        return [self.line_text(i).plain for i in range(top, min(self.line_count, top + self.size.height))]


