"""GPUs, machine-wide (as nvitop or htop show them): every GPU with bars of its utilisation and memory (text that reads
without colour), their recent history as sparklines (the app's `gpu_history`), temperature and power; a MIG-enabled
GPU's instances with their memory; and under each GPU its processes with user, command line, GPU memory and the run
and rank that owns it. At 80 columns the command, then the user, then (to a floor) the run and rank give way; the
highlighted row is said whole on the line under the table. The figures are the app's hardware sampler's (a worker;
command lines are read by one of this screen's); this screen only draws them. `o` sorts each GPU's processes, `k`
ends one of the user's own processes (asks; SIGTERM, then SIGKILL after a grace, in a worker); a rank of a tuitrain
run is stopped through its run instead. With workstations in the user's settings, each box's GPUs follow under a
heading of its own, streamed by its tuitrain over Home's one connection to that box (`remote.runs_stream` with its
GPUs; the app keeps them, `host_gpus`), never one of this screen's: read-only, since `k` ends only this machine's
processes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from tuitrain.hardware.devices import GpuInfo, GpuProcess, MigDevice, ProcessOwner
from tuitrain.hardware.host import current_user
from tuitrain.hardware.na import NA, NaType
from tuitrain.hardware.processes import (
    GRACE,
    SORTS,
    GpuProcessRow,
    command_line,
    process_rows,
    refusal,
    short_command,
    sm_share,
    terminate,
    use_notes,
    use_words,
)
from tuitrain.humanize import gib, gpu_memory
from tuitrain.remote.workstations import LOCAL
from tuitrain.rundir.layout import RunPaths
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.gpu_history import Trace
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.run_table import run_labels
from tuitrain.tui.widgets.gpu_panel import spark
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.plain_table import PlainTable
from tuitrain.tui.widgets.text_line import TextLine
from tuitrain.tui.widgets.usage_bar import least_width, usage_bar
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters

    from tuitrain.hardware.sampler import SampledView
    from tuitrain.tui.app_api import TuitrainAppApi

SORT_NAMES = {"memory": "GPU memory", "pid": "pid", "user": "user"}
COLUMNS = ("GPU", "pid", "user", "command", "GPU memory", "run / rank")
# the columns that give way when the table is too narrow, first to last, and how far (with an ellipsis): the pid,
# the memory and (to its floor) the run and rank owning a process always show; the command takes what is left over
SHRINKABLE = (("command", 16), ("user", 4), ("run / rank", 20), ("command", 8))
GPU_ROW_HEIGHT = 2  # a GPU's name, temperature, memory and power; then its utilisation and memory bars, and history
HISTORY_WORDS = len("util  mem ")  # around a GPU's two sparklines
UTIL = "util"  # the utilisation bar's label
VENDOR = "NVIDIA "  # every GPU here is one: its name in the table goes without it (whole on the detail line)


def _cut(text: str, style: str = "") -> Text:
    """A cell that ends in an ellipsis where its column is too narrow."""
    return Text(text, style, no_wrap=True, overflow="ellipsis", end="")


def _lines(first: Text | str, second: Text | str, style: str = "") -> Text:
    """A cell of two lines, each cut with an ellipsis where the column is too narrow."""
    out = Text(style=style, no_wrap=True, overflow="ellipsis", end="")
    out.append(first)
    out.append("\n")
    out.append(second)
    return out


def _power(gpu: GpuInfo) -> str:
    if gpu.power_draw is NA:
        return ""
    limit = f"/{gpu.power_limit:.0f}" if gpu.power_limit is not NA else ""
    return f"{gpu.power_draw:.0f}{limit} W"


def history_cell(trace: Trace | None, width: int) -> str:
    """'util ▁▂▅▇ mem ▃▃▄▄': a GPU's recent utilisation and memory in use as two sparklines filling `width` cells (at
    least 3 each); '' where no history is known yet."""
    if not trace:
        return ""
    cells = max(3, (width - HISTORY_WORDS) // 2)
    return f"{UTIL} {spark(trace.utilization, 1.0, cells)} mem {spark(trace.memory, 1.0, cells)}"


def gpu_cells(gpu: GpuInfo, history: Trace | None = None, widths: Sequence[int] | None = None) -> list[Text]:
    """A GPU's own row, two lines high: its index over its temperature; its name over a bar of its utilisation;
    its memory over a bar of it; its power over its utilisation's and memory's history (`history`). The bars fill
    `widths` (each column's width; None: the least they need, to measure the row by)."""
    def width(column: str) -> int:
        return widths[COLUMNS.index(column)] if widths is not None else 0

    style = "bold red" if gpu.lost else "bold"
    temperature = f"{gpu.temperature}°C" if gpu.temperature is not NA else ""
    name = str(gpu.name).removeprefix(VENDOR) + (" LOST (fell off the bus)" if gpu.lost else "")
    util = gpu.utilization / 100 if gpu.utilization is not NA and not gpu.lost else None
    memory = gpu.memory_fraction if not gpu.lost else None
    util_bar = usage_bar(util, max(width("command"), least_width(UTIL)), UTIL)
    memory_bar = usage_bar(memory, max(width("GPU memory"), least_width()))
    trend = history_cell(history, width("run / rank"))
    return [_lines(Text(f"GPU {gpu.index}", style), temperature), Text(""), Text(""),
            _lines(Text(name, style), util_bar), _lines(gpu_memory(gpu.memory_used, gpu.memory_total, gpu.lost), memory_bar),
            _lines(_power(gpu), Text(trend, "green"))]


def mig_cells(gpu: GpuInfo, mig: MigDevice) -> list[Text]:
    """A MIG instance of a GPU, under it: its profile's name and its memory."""
    return [Text(""), Text(""), Text(""), _cut(f"└ MIG {mig.profile}", "italic"),
            Text(gpu_memory(mig.memory_used, mig.memory_total)), Text("")]


def owner_text(owner: ProcessOwner, label: str) -> str:
    """'rank 0 · 18:30 demo': the rank (or the role, for a launcher) and the run's short label."""
    role = f"rank {owner.rank}" if owner.rank is not None else owner.describe().partition(" of run ")[0]
    return f"{role} · {label}"


def process_cells(row: GpuProcessRow, me: str, command: str = "", label: str = "") -> list[Text]:
    """A process's row: its pid, user, `command` (with its arguments; default what the sampler saw), memory with its
    SM share where the driver gives it (a GPU's detail line says why not), and the run (`label`: its short name,
    default its id) and rank owning it."""
    proc = row.process
    style = "" if proc.user == me else "dim"
    owner = owner_text(proc.owner, label or proc.owner.run_id) if proc.owner is not None else "-"
    memory = gib(proc.used_memory, unit=True) + (f" · SM {sm_share(proc)}" if proc.sm_util is not NA else "")
    return [Text(""), Text(str(proc.pid), style), _cut(str(proc.user), style), _cut(command or str(proc.command), style),
            Text(memory, style), _cut(owner, "cyan" if proc.owner is not None else style)]


def _cell_width(cell: Text) -> int:
    return max(cell_len(line) for line in cell.plain.split("\n"))


def _spread(widths: list[int], spare: int) -> tuple[int, ...]:
    """`spare` cells shared by the command and the memory columns so that the utilisation and memory bars under
    them come out about as long (the command keeps at least its widest cell)."""
    command, memory = COLUMNS.index("command"), COLUMNS.index("GPU memory")
    both = widths[command] + widths[memory] + spare
    label = least_width(UTIL) - least_width()  # what the utilisation bar's label takes
    widths[command] = max(widths[command], (both + label) // 2)
    widths[memory] = both - widths[command]
    return tuple(widths)


def column_widths(rows: list[list[Text]], room: int) -> tuple[int, ...]:
    """Widths that fit the table's `room`: every column as wide as its widest cell (or its name) unless they do not
    all fit; then the command, then the user, then the run and rank, are cut (with an ellipsis) down to their
    floors. Room left over goes to the command and the memory (their bars grow with them). Set, not left to the table, which
    measures a cell of two lines by another rule."""
    widths = [max([len(name), *(_cell_width(row[i]) for row in rows)]) for i, name in enumerate(COLUMNS)]
    over = sum(w + 2 for w in widths) - room  # a cell is padded by one on each side
    if over < 0:
        return _spread(widths, -over)
    for name, least in SHRINKABLE:
        i = COLUMNS.index(name)
        cut = min(over, max(0, widths[i] - least)) if over > 0 else 0
        widths[i] -= cut
        over -= cut
    return tuple(widths)


def gpu_detail(gpu: GpuInfo) -> str:
    """What the line under the table says of a highlighted GPU; and, where its processes' SM share or peak memory
    reads N/A, why (`hardware.processes.use_notes`)."""
    parts = [f"GPU {gpu.index}: {gpu.name}", f"{gpu.uuid}", f"bus {gpu.pci_bus_id}",
             f"compute capability {gpu.compute_capability_text}"]
    if gpu.mig_enabled:
        parts.append(f"MIG on, {len(gpu.mig_devices)} instance(s)")
    return "\n".join([" · ".join(parts), *(note.replace(f" on GPU {gpu.index} ", " ") for note in use_notes((gpu,)))])


def mig_detail(gpu: GpuInfo, mig: MigDevice) -> str:
    return (f"GPU {gpu.index}, MIG instance {mig.index}: {mig.name} · {mig.uuid} · "
            f"{gpu_memory(mig.memory_used, mig.memory_total)}")


def process_detail(row: GpuProcessRow, command: str, gpu: GpuInfo | None = None) -> str:
    """A highlighted process, whole: who runs it where, its SM share and peak memory where the driver gives either
    (`gpu`: the GPU it is on; the GPU's own detail says why not), the run and rank owning it, and its full command."""
    proc = row.process
    owner = proc.owner.describe() if proc.owner is not None else "not a tuitrain run"
    said = f"$ {command}" if command != str(NA) else "its command cannot be seen from here (another container, or gone)"
    use = f" · {use_words(gpu, proc)}" if gpu is not None and (proc.sm_util is not NA or proc.peak_memory is not NA) else ""
    return f"pid {proc.pid} ({proc.user}) on GPU {row.gpu}, {gib(proc.used_memory, unit=True)}{use} · {owner}\n{said}"


def box_heading(host: str, gpus: tuple[GpuInfo, ...] | None, problem: str | None) -> list[Text]:
    """The row over a machine's GPUs: its name, and how many GPUs and processes it has, or why it cannot be seen."""
    if problem is not None:
        said, style = "unreachable: " + problem.removeprefix(f"{host}: "), "red"
    elif gpus is None:
        said, style = "waiting for its first sample…", "dim"
    else:
        said, style = f"{len(gpus)} GPU(s), {sum(len(g.processes) for g in gpus)} process(es)", "dim"
    return [Text(host, "bold reverse"), Text(""), Text(""), _cut(said, style), Text(""), Text("")]


class BoxesListed(Message):
    """The workstations of the settings, in their order (from the worker that read them)."""

    def __init__(self, hosts: list[str]) -> None:
        super().__init__()
        self.hosts = hosts


Line = tuple[str, list[Text], "GpuProcessRow | GpuInfo | None", "Trace | None"]  # key, cells, what, history


class GpusScreen(PassesFailedWorkUp, QuitSafe, Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

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
        self.details: dict[str, str] = {}  # row key → what the line under the table says of it
        self.commands: dict[tuple[int, str], str | NaType] = {}  # (pid, name) → its command line, NA: unreadable
        self._asked: set[tuple[int, str]] = set()  # command lines being read
        self._widths: tuple[int, ...] | None = None  # the columns' widths as last set
        self.boxes: dict[str, tuple[tuple[GpuInfo, ...] | None, str | None]] = {}  # host → (its GPUs, why not seen)
        self.remote_rows: dict[str, tuple[str, GpuProcessRow]] = {}  # row key → another box's process, and its host
        self.hosts: list[str] = []  # the workstations of the settings, in their order

    def compose(self) -> ComposeResult:
        yield TextLine("GPUs on this machine: every process", classes="title-bar", id="gpus-title")
        yield PlainTable(id="gpu-table", cursor_type="row", zebra_stripes=False)
        yield Words("", id="gpus-detail")
        yield TextLine("", id="gpus-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self._ensure_columns(tuple(len(name) for name in COLUMNS))
        self.show(self.app.hardware_view)
        self.query_one(DataTable).focus()
        self.list_boxes()

    # ------------------------------------------------------------------------------ other workstations
    @work(thread=True, exclusive=True, group="gpu-boxes", exit_on_error=False)
    def list_boxes(self) -> None:
        """The workstations of the settings, in their order (a file read: in a worker). Their GPUs are those Home's
        one stream of each box carries (`app.host_gpus`): this screen opens no connection of its own."""
        from tuitrain.remote.workstations import configured

        stations, problem = configured()
        if problem is not None:
            self.notify(problem, title="Workstations", severity="error", timeout=15)
        if stations:
            self.post_message(BoxesListed([station.host for station in stations]))

    @on(BoxesListed)
    def _boxes_listed(self, message: BoxesListed) -> None:
        self.hosts = message.hosts
        self.read_boxes()

    def box_gpus_heard(self, host: str) -> None:
        """The app heard a workstation's GPUs, or why its stream failed (Home's stream of that box): draw them."""
        if host in self.hosts:
            self.read_boxes()

    def read_boxes(self) -> None:
        """Each listed box's GPUs and problem as the app last heard them (waiting: neither yet), then drawn."""
        boxes: dict[str, tuple[tuple[GpuInfo, ...] | None, str | None]] = {}
        for host in self.hosts:
            news = self.app.host_gpus.get(host)
            gpus = news.gpus.gpus if news is not None and news.gpus is not None else None
            boxes[host] = (gpus, news.problem if news is not None else None)
        self.boxes = boxes
        self.show(self.app.hardware_view)

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

    def command_of(self, row: GpuProcessRow) -> str:
        """A process's command with its arguments, once a worker has read it; until then (or where it cannot be
        read) the name the sampler saw."""
        proc = row.process
        full = self.commands.get((proc.pid, str(proc.command)), NA)
        return str(proc.command) if full is NA else str(full)

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
        self._read_commands([row.process for rows in by_gpu.values() for row in rows])
        labels = run_labels({row.process.owner.run_id for rows in by_gpu.values() for row in rows
                             if row.process.owner is not None}, self.app.clock())
        rows: list[Line] = []
        details: dict[str, str] = {}
        remote_rows: dict[str, tuple[str, GpuProcessRow]] = {}
        kept = self.app.gpu_history
        if self.boxes:
            rows.append(("host:local", box_heading(LOCAL, gpus, None), None, None))
        for gpu in sorted(gpus, key=lambda g: g.index):
            trace = kept.trace(LOCAL, gpu.index)
            rows.append((f"gpu:{gpu.index}", gpu_cells(gpu, trace), gpu, trace))
            details[f"gpu:{gpu.index}"] = gpu_detail(gpu)
            for mig in gpu.mig_devices:
                rows.append((f"mig:{gpu.index}:{mig.index}", mig_cells(gpu, mig), None, None))
                details[f"mig:{gpu.index}:{mig.index}"] = mig_detail(gpu, mig)
            for row in by_gpu.get(gpu.index, []):
                command = self.command_of(row)
                label = labels.get(row.process.owner.run_id, "") if row.process.owner is not None else ""
                rows.append((row.key, process_cells(row, self.me, short_command(command), label), row, None))
                details[row.key] = process_detail(row, command, gpu)
        for host, (box, problem) in self.boxes.items():
            rows.append((f"host:{host}", box_heading(host, box, problem), None, None))
            details[f"host:{host}"] = problem or f"{host}: its GPUs, sampled there by its tuitrain; read-only here"
            for key, cells, shown, detail in self._box_lines(host, box or ()):
                rows.append((key, cells, shown, kept.trace(host, shown.index) if isinstance(shown, GpuInfo) else None))
                details[key] = detail
                if isinstance(shown, GpuProcessRow):
                    remote_rows[key] = (host, shown)
        widths = column_widths([cells for _, cells, _, _ in rows], self._room())
        self._ensure_columns(widths)
        table.clear()
        self.rows = {}
        self.remote_rows = remote_rows
        self.details = details
        for key, cells, shown, history in rows:
            if isinstance(shown, GpuProcessRow) and key not in remote_rows:
                self.rows[key] = shown
            elif isinstance(shown, GpuInfo):  # its bars drawn to the columns' widths
                cells = gpu_cells(shown, history, widths)
            table.add_row(*cells, key=key, height=GPU_ROW_HEIGHT if isinstance(shown, GpuInfo) else 1)
        if selected is not None and selected in table.rows:
            table.move_cursor(row=table.get_row_index(selected), animate=False)
        self._show_detail()
        count = sum(len(g.processes) for g in gpus)
        if not gpus:
            status.set(view.snapshot.discovery.status_line)
        else:
            status.set(f"{len(gpus)} GPU(s), {count} process(es) · sorted by {SORT_NAMES[self.sort]} (o) · "
                       "k kills one of your own · a run's rank: enter opens its run, s there stops it")

    def _box_lines(self, host: str, gpus: tuple[GpuInfo, ...]
                   ) -> list[tuple[str, list[Text], GpuProcessRow | GpuInfo | None, str]]:
        """Another box's GPUs, MIG instances and processes as rows (keys under `host/`), each with its detail."""
        by_gpu: dict[int, list[GpuProcessRow]] = {}
        for row in process_rows(gpus, self.sort):
            by_gpu.setdefault(row.gpu, []).append(row)
        labels = run_labels({p.owner.run_id for g in gpus for p in g.processes if p.owner is not None}, self.app.clock())
        lines: list[tuple[str, list[Text], GpuProcessRow | GpuInfo | None, str]] = []
        for gpu in sorted(gpus, key=lambda g: g.index):
            lines.append((f"{host}/gpu:{gpu.index}", gpu_cells(gpu, self.app.gpu_history.trace(host, gpu.index)), gpu,
                          f"{host}: {gpu_detail(gpu)}"))
            for mig in gpu.mig_devices:
                lines.append((f"{host}/mig:{gpu.index}:{mig.index}", mig_cells(gpu, mig), None,
                              f"{host}: {mig_detail(gpu, mig)}"))
            for row in by_gpu.get(gpu.index, []):
                owner = row.process.owner
                label = labels.get(owner.run_id, "") if owner is not None else ""
                command = str(row.process.command)
                lines.append((f"{host}/{row.key}", process_cells(row, self.me, short_command(command), label), row,
                              f"{host}: {process_detail(row, command, gpu)}"))
        return lines

    def _show_detail(self) -> None:
        key = self._selected_key()
        self.query_one("#gpus-detail", Static).update(self.details.get(key, "") if key is not None else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def _read_commands(self, processes: Sequence[GpuProcess]) -> None:
        """Ask a worker for the command lines not read yet; forget those of processes gone."""
        shown = {(p.pid, str(p.command)) for p in processes}
        self.commands = {key: value for key, value in self.commands.items() if key in shown}
        wanted = [key for key in shown if key not in self.commands and key not in self._asked]
        if wanted:
            self._asked.update(wanted)
            self.read_commands(wanted)

    @work(thread=True, group="gpu-commands", exit_on_error=False)
    def read_commands(self, keys: list[tuple[int, str]]) -> None:
        found = {key: command_line(key[0]) for key in keys}
        self.app.call_from_thread(self._commands_read, found)

    def _commands_read(self, found: dict[tuple[int, str], str | NaType]) -> None:
        self._asked.difference_update(found)
        self.commands.update(found)
        self.show(self.app.hardware_view)

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

        if self._elsewhere("k ends only this machine's processes"):
            return
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
            f"Kill pid {proc.pid} ({self.command_of(row)}, {proc.user}) on GPU {row.gpu}, using "
            f"{gib(proc.used_memory, unit=True)}?\nSIGTERM now, SIGKILL after {GRACE:g} s if it is still there.",
            yes="Kill"), answered)

    @work(thread=True, group="gpu-kill", exit_on_error=False)
    def end_process(self, pid: int, user: str) -> None:
        said = terminate(pid, GRACE, user=user)
        self.notify(said, title="Kill")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """enter on a row (the table takes the key first)."""
        event.stop()
        self.action_open_run()

    def _elsewhere(self, what: str) -> bool:
        """Whether the highlighted row is another workstation's process: then say so, and how to reach it there."""
        key = self._selected_key()
        if key is None or key not in self.remote_rows:
            return False
        host, row = self.remote_rows[key]
        owner = row.process.owner
        there = (f"enter on {host}:{owner.run_id} in Home opens its monitor, where s stops it" if owner is not None
                 else f"`ssh {host} kill {row.process.pid}`")
        self.notify(f"pid {row.process.pid} runs on {host}: {what}; there, {there}", title=host, severity="warning",
                    timeout=8)
        return True

    def action_open_run(self) -> None:
        if self._elsewhere("this screen opens only this machine's runs"):
            return
        row = self.selected()
        owner = row.process.owner if row is not None else None
        if owner is None:
            self.notify("not a process of a tuitrain run", severity="warning", timeout=4)
            return
        run_dir = self.app.runs_root / owner.run_id
        if not RunPaths(run_dir).record.is_file():
            self.notify(f"run {owner.run_id} is not under {self.app.show_path(self.app.runs_root)}",
                        severity="warning", timeout=6)
            return
        self.app.open_run(run_dir)
