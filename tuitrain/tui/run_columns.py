"""Home's runs table laid out without Textual: which columns at which width, its title, what an empty table says."""

from __future__ import annotations

from rich.text import Text

from tuitrain.tui.run_table import RunOrder, describe

WIDE_COLUMNS = ("RUN", "STATUS", "STEP", "LOSS", "BEST", "STARTED", "TIME")
NARROW_COLUMNS = ("RUN", "STATUS", "STEP", "LOSS", "BEST", "TIME")


SHRINKABLE = (("RUN", 12), ("BEST", 10))  # the columns that give way, first to last, and how far


def cell_len(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


def column_widths(columns: tuple[str, ...], cells: list[dict[str, object]], room: int) -> tuple[int | None, ...]:
    """Widths that fit the table's `room`: every column as wide as its widest cell (None: left to
    the table) unless they do not all fit; then RUN, then BEST, are cut (with an ellipsis), so STATUS
    and TIME always show whole."""
    natural = {c: max([len(c), *(cell_len(cell[c]) for cell in cells)]) for c in columns}
    # a cell is padded by one on each side; the last one's right padding may fall off the edge
    over = sum(w + 2 for w in natural.values()) - 1 - room
    fixed: dict[str, int | None] = dict.fromkeys(columns)
    for name, least in SHRINKABLE:
        if over > 0 and name in natural:
            cut = min(over, max(0, natural[name] - least))
            if cut:
                fixed[name] = natural[name] - cut
                over -= cut
    return tuple(fixed[c] for c in columns)


def runs_title(count: int | None, order: RunOrder | None = None, shown: int | None = None, news: str = "") -> str:
    """The runs pane's title; `count` None while the runs root is not read yet (no "none yet" flash);
    with a filter, how many of them it shows, the sort when it is not the default, and the checkpoints
    written lately (`news`: '3 checkpoints of 2 runs')."""
    if count is None:
        return "Runs — reading…"
    if not count:
        return "Runs — none yet: highlight a profile and press r"
    order = order or RunOrder()
    counted = f"{shown} of {count}" if order.filter.strip() and shown is not None else str(count)
    return f"Runs ({counted}){describe(order)}" + (f" · new: {news}" if news else "")


def empty_runs_hint(count: int, order: RunOrder) -> str:
    """What Enter on an empty runs table says: how runs come, or that the filter hides them."""
    if count and order.filter.strip():
        return f"no run matches /{order.filter.strip()} (of {count}): escape clears the filter"
    return "no runs yet: highlight a profile and press r to start one"
