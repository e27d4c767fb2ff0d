"""Compare's table of each run's values against its final and best value of the metric (tui.sweep_results): drawn
from the lines it is handed, never read as markup (a value may hold brackets)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tuitrain.tui.plain import visible
from tuitrain.tui.sweep_results import WINNER
from tuitrain.tui.widgets.words import Words


class SweepTable(Words):
    DEFAULT_CSS = """
    SweepTable { height: auto; max-height: 50%; padding: 0 1; border-top: hkey $primary-muted; overflow-y: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heading = ""
        self.header: list[str] = []
        self.rows: list[list[str]] = []  # as shown, the winner first

    def show(self, heading: str, header: list[str], rows: list[list[str]]) -> None:
        """A line that says the order, then the table: the winner's line in bold."""
        if (heading, header, rows) == (self.heading, self.header, self.rows):
            return
        self.heading, self.header, self.rows = heading, header, rows
        grid = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
        for position, name in enumerate(header):
            grid.add_column(Text(visible(name)), justify="right" if position >= len(header) - 2 else "left", no_wrap=True)
        for row in rows:
            grid.add_row(*(Text(visible(cell)) for cell in row), style="bold" if row[0] == WINNER else "")
        self.update(Group(Text(visible(heading), style="dim"), grid))
