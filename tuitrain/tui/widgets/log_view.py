"""A virtual log view: only the visible lines are read and rendered (an LRU cache keeps recent ones).

The source is a `LogFile` (one rank) or a `MergedLog` (every rank, each line prefixed with its
rank in the rank's colour). Lines show what a terminal would: the text after the last carriage
return (tqdm) with its ANSI colours. The view follows the tail until the user scrolls up, and
follows again from the end (End / G).

A Python warning printed again (FSDP's on every save) shows as one short line, "… (same warning ×5) …": the view
shows its source through a `FoldedWarnings`, which the monitor's worker brings up to date with `sync()`, as it
does a filter. A filter (`set_filter`) shows only the lines holding a term (a `FilteredLog` over the folded source).
Wrapped (`set_wrap`), a long line takes as many rows as it needs, each row with the line's rank
prefix; the view still scrolls a line at a time (its scroll offset is the top line), and at the
end it shows as many of the last lines as fit.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from tuitrain.runs.view.logfile import display_text
from tuitrain.tui.format import RANK_STYLES
from tuitrain.tui.line_source import LineSource
from tuitrain.tui.log_filter import FilteredLog, FoldedWarnings
from tuitrain.tui.plain import visible_text


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
        Binding("home", "top", "Top", show=False),  # not `g`: the app's key for the GPUs screen
    ]

    class Moved(Message):
        """The view scrolled, or started or stopped following (many may fold into one)."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LogView.Moved)

    follow: reactive[bool] = reactive(True)
    """Whether the view keeps the last line in sight as lines arrive."""

    def __init__(self, source: LineSource, ranks: bool = False, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.base_source = FoldedWarnings(source)  # the source, its repeated warnings folded; without the filter
        self.base_source.sync(5_000)
        self.source: LineSource = self.base_source
        self.ranks = ranks
        self.wrap = False
        self._wrapped: LRUCache[int, list[Strip]] = LRUCache(1024)
        self._layout: list[Strip] = []  # wrapped: the rows in view, from the last paint
        self._layout_lines = (0, -1)  # wrapped: the first and last line (partly) in view
        self._wrap_width = 0
        self.line_count = 0
        self._generation = getattr(source, "generation", 0)
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        # lines cropped to the view: while following, every line moves up on each repaint
        self._crops: LRUCache[int, Strip] = LRUCache(1024)
        self._crop_key: tuple[int, int] = (-1, -1)
        self._width = 0
        self._style: Style | None = None
        self._rank_styles: dict[int | str, Style] = {}
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
        for y in range(max(0, old - 4), min(old, count)):  # lines past the old end were never cached
            if not self.source.cacheable(y):
                self._cache.discard(y)
                self._crops.discard(y)
        self._set_virtual(Size(self._virtual_width, count))
        if self.follow and self.max_scroll_y > self.scroll_offset.y:
            self.scroll_end(animate=False, immediate=True, x_axis=False)  # repaints
        else:
            self.refresh()

    def sync(self) -> bool:
        """Fold (and filter) the lines the source indexed since the last call: for the worker that polls the
        logs, after each poll. True when what the view shows changed."""
        changed = self.base_source.sync()
        filtered = self.filter
        if filtered is not None:
            changed |= filtered.sync()
        return changed

    def _has_partial_tail(self) -> bool:
        return self.line_count > 0 and not self.source.cacheable(self.line_count - 1)

    @property
    def filter(self) -> FilteredLog | None:
        return self.source if isinstance(self.source, FilteredLog) else None

    def set_filter(self, term: str | None) -> None:
        """Show only the lines holding `term` (None: every line). The filter fills as a worker
        calls its sync(); a first budget is judged here."""
        if term:
            filtered = FilteredLog(self.base_source, term)
            filtered.sync(5_000)
            self._show(filtered)
        else:
            self._show(self.base_source)

    def set_source(self, source: LineSource) -> None:
        """Show another source (the merged log folded or not), keeping the follow state and filter."""
        self.base_source = FoldedWarnings(source)
        self.base_source.sync(5_000)
        current = self.filter
        self.set_filter(current.term if current is not None else None)

    def _show(self, source: LineSource) -> None:
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
        # wrapped, the lines above may take several rows each: the line goes near the top
        target = max(0, index - (1 if self.wrap else max(1, self.size.height // 3)))
        self.scroll_to(y=target, animate=False, immediate=True)
        self.refresh()

    def _clear_caches(self) -> None:
        self._cache.clear()
        self._crops.clear()
        self._wrapped.clear()

    # ------------------------------------------------------------------------------ wrapping
    @property
    def _virtual_width(self) -> int:
        return 0 if self.wrap else self._width

    def set_wrap(self, wrap: bool) -> None:
        """Wrap long lines (no sideways scrolling) or not."""
        if wrap == self.wrap:
            return
        self.wrap = wrap
        self._clear_caches()
        self.scroll_to(x=0, animate=False, immediate=True)
        self.virtual_size = Size(self._virtual_width, self.line_count)
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def _rows_of(self, index: int, width: int) -> list[Strip]:
        """Line `index` wrapped to `width` cells, each row starting with the line's rank prefix."""
        cached = self._wrapped.get(index)
        if cached is not None:
            return cached
        prefix, body = self._parts(index)
        inner = max(1, width - (prefix.cell_len if prefix is not None else 0))
        rows = []
        for piece in body.wrap(self.app.console, inner, overflow="fold", no_wrap=False) or [Text("")]:
            row = Text.assemble(prefix, piece, end="") if prefix is not None else piece
            segments = [seg for seg in row.render(self.app.console) if seg.text != "\n"]
            rows.append(Strip(segments, row.cell_len).apply_style(self.line_style).crop_extend(0, width, self.line_style))
        if self.source.cacheable(index):
            self._wrapped[index] = rows
        return rows

    def _wrap_layout(self) -> None:
        """The rows in view: from the top line down, or, following, the last lines that fit."""
        width, height = self.size.width, self.size.height
        if width != self._wrap_width:
            self._wrap_width = width
            self._wrapped.clear()
        rows: list[Strip] = []
        count = self.line_count
        if not count or not height or not width:
            self._layout, self._layout_lines = [], (0, -1)
            return
        if self.follow:
            index = count - 1
            while index >= 0 and len(rows) < height:
                rows[:0] = self._rows_of(index, width)
                index -= 1
            self._layout, self._layout_lines = rows[-height:], (index + 1, count - 1)
            return
        index = top = min(self.scroll_offset.y, count - 1)
        while index < count and len(rows) < height:
            rows.extend(self._rows_of(index, width))
            index += 1
        self._layout, self._layout_lines = rows[:height], (top, index - 1)

    def shown_lines(self) -> tuple[int, int]:
        """The first and last line in view (a wrapped line partly in view counts)."""
        if self.wrap:
            return self._layout_lines
        top = self.scroll_offset.y
        return top, min(self.line_count, top + self.scrollable_content_region.height) - 1

    def render_lines(self, crop: Region) -> list[Strip]:
        if self.wrap:
            self._wrap_layout()
        return super().render_lines(crop)

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

    def _parts(self, index: int) -> tuple[Text | None, Text]:
        rank, raw = self.source.raw(index)
        return self._parts_of(index, rank, display_text(raw))

    def _parts_of(self, index: int, rank: int | str | None, shown: str) -> tuple[Text | None, Text]:
        """One line as shown, as its rank prefix (None without one) and its text (ANSI colours,
        search matches, the current match underlined)."""
        body = visible_text(Text.from_ansi(shown, end="") if "\x1b" in shown else Text(shown, end=""))
        body.no_wrap = True  # (any control character the colours leave is shown as its picture: tui.plain)
        prefix = None
        if self.ranks and rank is not None:
            prefix = Text(f"{rank}│", style=_prefix_style(rank), end="")
        if self.term:
            body.highlight_words([self.term], style="reverse", case_sensitive=False)
        if index == self.current:
            body.stylize("bold underline")
            if prefix is not None:
                prefix.stylize("bold underline")
        return prefix, body

    def line_text(self, index: int) -> Text:
        """One line as shown (rank prefix, ANSI colours, search matches)."""
        prefix, body = self._parts(index)
        return Text.assemble(prefix, body, no_wrap=True, end="") if prefix is not None else body

    def _strip(self, index: int) -> Strip:
        """The line rendered and styled (cached: a repaint of unchanged lines renders nothing)."""
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        rank, raw = self.source.raw(index)
        shown = display_text(raw)
        strip = self._plain_strip(rank, shown) if not self.term and index != self.current else None
        if strip is None:
            prefix, body = self._parts_of(index, rank, shown)
            text = Text.assemble(prefix, body, no_wrap=True, end="") if prefix is not None else body
            segments = list(text.render(self.app.console))
            strip = Strip([s for s in segments if s.text != "\n"], text.cell_len)
        strip = strip.apply_style(self.line_style)
        if strip.cell_length > self._width:
            self._width = strip.cell_length
            if self._virtual_width > self.virtual_size.width:
                self.call_later(self._widen)
        if self.source.cacheable(index):
            self._cache[index] = strip
        return strip

    def _plain_strip(self, rank: int | str | None, shown: str) -> Strip | None:
        """A line without colour codes made into segments directly, as Rich would render it (None for one with
        them): most lines of a followed log are plain, and each repaint of 8 busy ranks renders a screenful."""
        if "\x1b" in shown:
            return None
        body = Segment(shown)
        if not self.ranks or rank is None:
            return Strip([body], cell_len(shown))
        label = f"{rank}│"
        style = self._rank_styles.get(rank)
        if style is None:
            style = self._rank_styles[rank] = self.app.console.get_style(_prefix_style(rank))
        return Strip([Segment(label, style), body] if shown else [Segment(label, style)], cell_len(label) + cell_len(shown))

    def _widen(self) -> None:
        if self._virtual_width > self.virtual_size.width:
            self._set_virtual(Size(self._virtual_width, self.line_count))

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
        if self.wrap:
            return self._layout[y] if y < len(self._layout) else Strip.blank(width, style)
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
        """The plain text of the lines in view (the rows, wrapped; for tests and search)."""
        if self.wrap:
            return [strip.text.rstrip() for strip in self._layout]
        top = self.scroll_offset.y
        return [self.line_text(i).plain for i in range(top, min(self.line_count, top + self.size.height))]


def _prefix_style(rank: int | str) -> str:
    """One rank in its colour; a line several ranks printed alike ("0-7") stands out in reverse."""
    return f"bold {RANK_STYLES[rank % len(RANK_STYLES)]}" if isinstance(rank, int) else "bold reverse"
