"""GPUs, machine-wide (as nvitop or htop show them): every GPU with its utilisation, memory,
temperature and power, and under each its processes with user, command, GPU memory and the run and
rank that owns it. The figures are the app's hardware sampler's (a worker); this screen only draws
them. `o` sorts each GPU's processes, `k` ends one of the user's own processes (asks; SIGTERM, then
SIGKILL after a grace, in a worker); a rank of a tuitrain run is stopped through its run instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable

from tuitrain.hardware.devices import GpuInfo
from tuitrain.hardware.host import current_user
from tuitrain.hardware.na import NA
from tuitrain.hardware.processes import GRACE, SORTS, GpuProcessRow, process_rows, refusal, terminate
from tuitrain.humanize import gib, gpu_memory, percent
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.text_line import TextLine

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.hardware.sampler import SampledView
    from tuitrain.tui.app import TuitrainApp

SORT_NAMES = {"memory": "GPU memory", "pid": "pid", "user": "user"}
COLUMNS = ("GPU", "pid", "user", "command", "GPU memory", "run / rank")
# the columns that give way when the table is too narrow, first to last, and how far: the run and rank owning a
# process, its pid and its memory always show whole
SHRINKABLE = (("command", 12), ("user", 6))
GPU_ROW_HEIGHT = 2  # a GPU's name, then its utilisation, temperature and power


def _cut(text: str, style: str = "") -> Text:
    """A cell that ends in an ellipsis where its column is too narrow."""
    return Text(text, style, no_wrap=True, overflow="ellipsis", end="")


def gpu_cells(gpu: GpuInfo) -> list[Text]:
    """A GPU's own row, two lines high: index; name over utilisation, temperature and power; memory."""
    figures = [f"util {percent(gpu.utilization).strip()}"]
    if gpu.temperature is not NA:
        figures.append(f"{gpu.temperature}°C")
    if gpu.power_draw is not NA:
        limit = f"/{gpu.power_limit:.0f}" if gpu.power_limit is not NA else ""
        figures.append(f"{gpu.power_draw:.0f}{limit} W")
    if gpu.lost:
        figures.append("LOST (fell off the bus)")
    style = "bold red" if gpu.lost else "bold"
    return [Text(f"GPU {gpu.index}", style), Text(""), Text(""), _cut(f"{gpu.name}\n" + " · ".join(figures), style),
            Text(gpu_memory(gpu.memory_used, gpu.memory_total, gpu.lost), style), Text("")]


def process_cells(row: GpuProcessRow, me: str) -> list[Text]:
    proc = row.process
    style = "" if proc.user == me else "dim"
    owner = proc.owner.describe() if proc.owner is not None else "-"
    return [Text(""), Text(str(proc.pid), style), _cut(str(proc.user), style), _cut(str(proc.command), style),
            Text(gib(proc.used_memory, unit=True), style), Text(owner, "cyan" if proc.owner is not None else style)]


def _cell_width(cell: Text) -> int:
    return max(cell_len(line) for line in cell.plain.split("\n"))


def column_widths(rows: list[list[Text]], room: int) -> tuple[int, ...]:
    """Widths that fit the table's `room`: every column as wide as its widest cell (or its name) unless they do not
    all fit; then the command, then the user, are cut (with an ellipsis). Set, not left to the table, which
    measures a cell of two lines by another rule."""
    widths = [max([len(name), *(_cell_width(row[i]) for row in rows)]) for i, name in enumerate(COLUMNS)]
    # a cell is padded by one on each side; the last one's right padding may fall off the edge
    over = sum(w + 2 for w in widths) - 1 - room
    for name, least in SHRINKABLE:
        i = COLUMNS.index(name)
        cut = min(over, max(0, widths[i] - least)) if over > 0 else 0
        widths[i] -= cut
        over -= cut
    return tuple(widths)


class GpusScreen(Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainApp)

    CSS_PATH = "gpus.tcss"
    HELP_TITLE = "GPUs"
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Back to the screen before"),
        Binding("o", "sort", "Sort", tooltip="Sort each GPU's processes by the next key: GPU memory, pid, user"),
        Binding("k", "kill", "Kill", tooltip=f"End the selected process, if it is yours (asks): SIGTERM, then SIGKILL "
                f"after {GRACE:g} s"),
        Binding("enter", "open_run", "Open run", show=False, tooltip="Open the monitor of the run owning the process"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.sort = SORTS[0]
        self.me = current_user()
        self.rows: dict[str, GpuProcessRow] = {}  # row key → the process it shows
        self._widths: tuple[int, ...] | None = None  # the columns' widths as last set

    def compose(self) -> ComposeResult:
        yield TextLine("GPUs on this machine: every process", classes="title-bar", id="gpus-title")
        yield DataTable(id="gpu-table", cursor_type="row", zebra_stripes=False)
        yield TextLine("", id="gpus-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self._ensure_columns(tuple(len(name) for name in COLUMNS))
        self.show(self.app.hardware_view)
        self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        self.show(self.app.hardware_view)  # the columns' widths follow the table's

    def _room(self) -> int:
        """The cells' room in the table (less a scrollbar's); before its first layout, the screen's width."""
        table = self.query_one(DataTable)
        return table.scrollable_content_region.width if table.size.width else self.app.size.width

    def _ensure_columns(self, widths: tuple[int, ...]) -> None:
        if widths == self._widths:
            return
        table = self.query_one(DataTable)
        table.clear(columns=True)
        for name, width in zip(COLUMNS, widths, strict=True):
            table.add_column(name, key=name, width=width)
        self._widths = widths

    # ------------------------------------------------------------------------------ drawing
    def hardware_sampled(self, _line: str) -> None:
        """A new sample from the app's sampler (a worker): draw it."""
        self.show(self.app.hardware_view)

    def show(self, view: "SampledView | None") -> None:
        table = self.query_one(DataTable)
        status = self.query_one("#gpus-status", TextLine)
        if view is None:
            status.set("sampling the machine…")
            return
        gpus = view.snapshot.gpus
        selected = self._selected_key()
        by_gpu: dict[int, list[GpuProcessRow]] = {}
        for row in process_rows(gpus, self.sort):
            by_gpu.setdefault(row.gpu, []).append(row)
        rows: list[tuple[str, list[Text], GpuProcessRow | None]] = []
        for gpu in sorted(gpus, key=lambda g: g.index):
            rows.append((f"gpu:{gpu.index}", gpu_cells(gpu), None))
            rows.extend((row.key, process_cells(row, self.me), row) for row in by_gpu.get(gpu.index, []))
        self._ensure_columns(column_widths([cells for _, cells, _ in rows], self._room()))
        table.clear()
        self.rows = {}
        for key, cells, process in rows:
            if process is not None:
                self.rows[key] = process
            table.add_row(*cells, key=key, height=1 if process is not None else GPU_ROW_HEIGHT)
        if selected is not None and selected in table.rows:
            table.move_cursor(row=table.get_row_index(selected), animate=False)
        count = sum(len(g.processes) for g in gpus)
        if not gpus:
            status.set(view.snapshot.discovery.status_line)
        else:
            status.set(f"{len(gpus)} GPU(s), {count} process(es) · sorted by {SORT_NAMES[self.sort]} (o) · "
                       "k kills one of your own · a run's rank: enter opens its run, s there stops it")

    def _selected_key(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - a cursor past a table being redrawn has no key
            return None
        return key

    def selected(self) -> GpuProcessRow | None:
        key = self._selected_key()
        return self.rows.get(key) if key is not None else None

    # ------------------------------------------------------------------------------ actions
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.show(self.app.hardware_view)

    def action_kill(self) -> None:
        from tuitrain.tui.screens.confirm import ConfirmScreen

        row = self.selected()
        if row is None:
            self.notify("select a process (a row under a GPU) first", severity="warning", timeout=4)
            return
        proc = row.process
        why = refusal(proc, self.me)
        if why is not None:
            self.notify(why, title="Not killed", severity="warning", timeout=8)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.end_process(proc.pid, str(proc.user))

        self.app.push_screen(ConfirmScreen(
            f"Kill pid {proc.pid} ({proc.command}, {proc.user}) on GPU {row.gpu}, using "
            f"{gib(proc.used_memory, unit=True)}?\nSIGTERM now, SIGKILL after {GRACE:g} s if it is still there.",
            yes="Kill"), answered)

    @work(thread=True, group="gpu-kill", exit_on_error=False)
    def end_process(self, pid: int, user: str) -> None:
        said = terminate(pid, GRACE, user=user)
        self.app.call_from_thread(self.notify, said, title="Kill")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter on a row (the table takes the key first)."""
        event.stop()
        self.action_open_run()

    def action_open_run(self) -> None:
        row = self.selected()
        owner = row.process.owner if row is not None else None
        if owner is None:
            self.notify("not a process of a tuitrain run", severity="warning", timeout=4)
            return
        run_dir = self.app.runs_root / owner.run_id
        if not (run_dir / "run.json").is_file():
            self.notify(f"run {owner.run_id} is not under {self.app.show_path(self.app.runs_root)}",
                        severity="warning", timeout=6)
            return
        self.app.open_run(run_dir)
