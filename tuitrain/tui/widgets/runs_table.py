"""Home's runs table widget."""

from __future__ import annotations

from textual.message import Message

from tuitrain.tui.widgets.plain_table import PlainTable


class RunsTable(PlainTable):
    """The runs table: Enter on it with no rows says why there are none (a DataTable would keep still)."""

    class Empty(Message):
        """Enter on the table while it has no rows."""

    def action_select_cursor(self) -> None:
        if self.row_count == 0:
            self.post_message(self.Empty())
            return
        super().action_select_cursor()
