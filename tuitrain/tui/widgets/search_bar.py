"""Search in a log view: a box under the log (/ opens it, enter finds, escape closes), the term it
keeps for n / N, and the finding itself, in a worker (a log may be millions of lines). A search
wraps around as a pager does. The same box, opened for a filter (& as in less), asks for the term
whose lines alone the view shows. It tells its screen when the term or the filter changed or a
search ended (messages up); the screen says which log view it searches (method calls down)."""

from __future__ import annotations

import time

from textual import on, work
from textual.message import Message
from textual.widgets import Input
from textual.worker import get_current_worker

from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.log_view import LogView


class SearchBar(Field):
    class TermChanged(Message):
        """The user submitted a term (None: no search)."""

        def __init__(self, term: str | None) -> None:
            super().__init__()
            self.term = term

    class FilterChanged(Message):
        """The user submitted a filter (None: every line)."""

        def __init__(self, term: str | None) -> None:
            super().__init__()
            self.term = term

    class Done(Message):
        """A search ended (found, fell back to the end, or said it was not found)."""

    INDEXING_WAIT = 60.0  # seconds a search waits for the log's lines to be indexed

    SEARCH = "search the log in view (enter: find, escape: close)"
    FILTER = "show only the lines holding… (enter: filter, empty: every line, escape: close)"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder=self.SEARCH, id=id)
        self.term: str | None = None
        self.filtering = False  # opened for a filter, not a search

    def on_mount(self) -> None:
        self.display = False

    def open(self, filtering: bool = False, value: str | None = None) -> None:
        self.filtering = filtering
        self.placeholder = self.FILTER if filtering else self.SEARCH
        self.display = True
        self.value = (value if filtering else self.term) or ""
        self.select_all()  # the last term offered: enter keeps it, a word typed takes its place
        self.focus_now()

    def close(self) -> bool:
        """Hide the box; False when it was not open."""
        if not self.display:
            return False
        self.display = False
        return True

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.display = False
        if self.filtering:
            self.post_message(self.FilterChanged(event.value.strip() or None))
            return
        self.term = event.value.strip() or None
        self.post_message(self.TermChanged(self.term))

    def next(self, view: LogView) -> None:
        """The next match of the term after the current one (or the top of the view)."""
        if self.term:
            start = (view.current + 1) if view.current is not None else view.scroll_offset.y
            self.find(view, self.term, start, False)

    def previous(self, view: LogView) -> None:
        if self.term:
            start = (view.current - 1) if view.current is not None else view.scroll_offset.y
            if start >= 0:
                self.find(view, self.term, start, True)

    @work(thread=True, exclusive=True, group="find", exit_on_error=False)
    def find(self, view: LogView, term: str, start: int, backwards: bool,
             announce: bool = True, fallback_end: bool = False) -> None:
        """Go to the first line with `term` from `start`; `announce`: say when there is none (and wrap
        around); `fallback_end`: follow the end of the log instead."""
        needle = term.encode("utf-8")
        worker = get_current_worker()
        deadline = time.monotonic() + self.INDEXING_WAIT
        # a big log's front is counted just after its end shows, a view catches up after its log started
        # over: the search waits for them rather than say "not found" of a line not indexed yet
        while view.source.indexing and not worker.is_cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
        if worker.is_cancelled:
            return
        found = view.source.find(needle, max(0, start), backwards)
        if found is None and announce and start > 0:  # wrap around, as a pager does
            found = view.source.find(needle, max(0, view.source.count - 1) if backwards else 0, backwards)
        self.app.call_from_thread(self._found, view, term, found, announce, fallback_end)

    def _found(self, view: LogView, term: str, found: int | None, announce: bool, fallback_end: bool) -> None:
        if found is not None:
            view.refresh_source()
            view.goto(found)
        elif fallback_end:
            view.action_follow()
        elif announce:
            self.notify(f"{term!r} not found", severity="warning")
        self.post_message(self.Done())
