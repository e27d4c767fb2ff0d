"""Home's runs table laid out without Textual: which columns at which width, its title, what an empty table says.

The width goes to what differs between rows (as htop's and k9s's tables give theirs): the RUN column (a run's
time and name, a sweep's values). When the columns do not all fit, what repeats from row to row gives way first:
the STEP bar, then BEST's metric name (the same in every row of a profile), then the host's name, before RUN is
cut (in its middle: its time and the end of its name, where a sweep's values are, stay)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from tuitrain.tui.run_table import RunOrder, describe

COLUMNS = ("RUN", "STATUS", "STEP", "LOSS", "BEST", "TIME")  # when a run started is in its RUN label: no STARTED

# what gives way, first to last: a column's short form (its cells' second form), or a cut down to a floor
GIVE_WAY: tuple[tuple[str, str | int], ...] = (("STEP", "short"), ("BEST", "short"), ("HOST", 6), ("RUN", 16),
                                               ("RUN", 8))


def cell_len(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


@dataclass(frozen=True)
class Layout:
    """The table's columns: each one's width (None: left to the table, every cell whole) and those shown in their
    short form."""

    widths: tuple[int | None, ...]
    short: frozenset[str] = frozenset()


def header(column: str, order: RunOrder) -> str:
    """A column's header: its name, and the sort's arrow on the column the runs are sorted by ('LOSS ↑')."""
    return f"{column} {order.arrow()}" if order.column() == column else column


def fit_columns(columns: tuple[str, ...], cells: list[dict[str, object]], short: list[dict[str, object]],
                room: int, order: RunOrder | None = None) -> Layout:
    """The layout that fits the table's `room`: every column as wide as its widest cell (or its header, with the
    sort's arrow of `order`) unless they do not all fit; then each of GIVE_WAY in turn (`short`: each row's short
    forms, of the columns that have one), so that STATUS and TIME always show whole and RUN keeps what tells runs
    apart."""
    order = order or RunOrder()
    natural = {c: max([len(header(c, order)), *(cell_len(cell[c]) for cell in cells)]) for c in columns}
    # a cell is padded by one on each side; the last one's right padding may fall off the edge
    over = sum(w + 2 for w in natural.values()) - 1 - room
    fixed: dict[str, int | None] = dict.fromkeys(columns)
    shortened: set[str] = set()
    for name, how in GIVE_WAY:
        if over <= 0 or name not in natural:
            continue
        if how == "short":
            narrower = max([len(header(name, order)), *(cell_len(cell[name]) for cell in short if name in cell)])
            if narrower < natural[name]:
                shortened.add(name)
                over -= natural[name] - narrower
                natural[name] = narrower
            continue
        cut = min(over, max(0, natural[name] - int(how)))
        if cut:
            natural[name] -= cut
            fixed[name] = natural[name]
            over -= cut
    return Layout(tuple(fixed[c] for c in columns), frozenset(shortened))


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
