"""A DataTable whose text cells and labels are text (tui.plain): Textual's own reads a `str` cell as markup, and a
path, a process's command line or a run's words may hold `[/…]`. Every table of the app is one."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from tuitrain.tui.plain import visible, visible_text


def as_text(value: Any) -> Any:
    """A `str` cell as Text of its visible words, a Text with its control characters shown; a number as it is."""
    if isinstance(value, str):
        return Text(visible(value), no_wrap=True, end="")
    return visible_text(value) if isinstance(value, Text) else value


class PlainTable(DataTable[Any]):
    def add_column(self, label: Any, *, width: int | None = None, key: str | None = None,
                   default: Any = None) -> ColumnKey:
        return super().add_column(as_text(label), width=width, key=key, default=as_text(default))

    def add_row(self, *cells: Any, height: int | None = 1, key: str | None = None, label: Any = None) -> RowKey:
        return super().add_row(*(as_text(cell) for cell in cells), height=height, key=key, label=as_text(label))

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: Any, *,
                    update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, as_text(value), update_width=update_width)  # update_cell_at too
