"""What a log view shows lines from: a rank's log, the merged or folded ranks, or a view derived from one of
those (warnings folded, a filter). One protocol that the view (widgets.log_view) and the derived sources
(log_filter) both name, so neither imports the other for it."""

from __future__ import annotations

from typing import Protocol


class LineSource(Protocol):
    generation: int  # bumped when the source started over (its indexes mean other lines)

    @property
    def count(self) -> int: ...

    @property
    def indexing(self) -> bool:
        """Whether lines are still being indexed that a search should wait for (a big log's front counted after
        its end, a derived view catching up after its source started over)."""
        ...

    def raw(self, index: int) -> tuple[int | str | None, bytes]: ...

    def cacheable(self, index: int) -> bool: ...

    def find(self, needle: bytes, start: int = 0, backwards: bool = False, ignore_case: bool = True) -> int | None: ...
