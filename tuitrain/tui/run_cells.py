"""The cells of Home's runs table, made from data (no Textual): a run's line, another box's, or a box's own line;
each line's short forms (what gives way first, run_columns.GIVE_WAY), and its cells as a layout shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.text import Text

from tuitrain.humanize import duration, number
from tuitrain.rundir.run import seconds_run
from tuitrain.tui.format import short_metric, status_text, step_text
from tuitrain.tui.run_columns import Layout
from tuitrain.tui.run_table import Entry, checkpoint_step, cut_label

if TYPE_CHECKING:
    from tuitrain.runs.view.live import RunRow


@dataclass(frozen=True)
class RunCells:
    """What Home's lines are drawn from at one moment."""

    now: float
    labels: Mapping[str, str]  # run id → its RUN label (run_table.run_labels)
    marked: Sequence[str] = ()  # run ids marked (space): what s, x, R and C act on
    saved: Mapping[str, str] = field(default_factory=dict)  # run id → its newest checkpoint still news
    hosts: bool = False  # workstations in the settings: a HOST column

    def shown(self, entry: Entry, columns: Sequence[str], layout: Layout) -> dict[str, object]:
        """The line's cells as the table's layout shows them: short forms where they give way, RUN cut to its
        width (run_columns)."""
        full, short = self.full(entry), self.short(entry)
        cells = {k: short[k] if k in layout.short and k in short else full[k] for k in columns}
        width = dict(zip(columns, layout.widths, strict=True)).get("RUN")
        if width is not None and entry.row is not None:
            cells["RUN"] = self.run_text(entry.row, entry.host is None, width, entry.branch)
        return cells

    def full(self, entry: Entry) -> dict[str, object]:
        row = entry.row
        if row is None:  # a workstation asked, or one that cannot be watched: what went wrong (in full below)
            status = Text("unreachable", style="bold red") if entry.note else Text("connecting…", style="dim")
            cause = entry.note.split(" — ")[0]
            cells: dict[str, object] = {"RUN": Text(cause, no_wrap=True, overflow="ellipsis", end=""),
                                        "STATUS": status, "STEP": "", "LOSS": "", "BEST": "", "TIME": ""}
        else:
            cells = self._run_cells(row, local=entry.host is None, branch=entry.branch)
        if self.hosts:
            from tuitrain.remote.workstations import LOCAL

            cells["HOST"] = Text(entry.host or LOCAL, style="" if entry.host else "dim", no_wrap=True,
                                 overflow="ellipsis", end="")
        return cells

    @staticmethod
    def short(entry: Entry) -> dict[str, object]:
        """The short forms of the cells that give way first: the step without its bar, the best value without its
        metric's name (the same in every row of a profile)."""
        row = entry.row
        if row is None:
            return {}
        return {"STEP": f"{row.step}/{row.max_steps or '?'}", "BEST": number(row.best) if row.best is not None else "-"}

    def run_text(self, row: RunRow, local: bool, width: int | None = None, branch: str = "") -> Text:
        """The RUN cell: the run's label (a mark first when marked; its place in its sweep's group, run_table.branches,
        before the label), cut in its middle to `width`."""
        marked = local and row.id in self.marked
        mark = "✓ " if marked else ""
        tree = f"{branch} " if branch else ""
        label = self.labels.get(row.id, row.id)
        if width is not None:
            label = cut_label(label, width - len(mark) - len(tree))
        text = Text(mark, style="bold", no_wrap=True, overflow="ellipsis", end="")
        text.append(tree, style="dim")
        text.append(label, style="bold" if marked else "")
        return text

    def _run_cells(self, row: RunRow, local: bool, branch: str = "") -> dict[str, object]:
        ran = seconds_run(row.started, row.ended, row.status, self.now)
        best = f"{short_metric(row.best_metric)} {number(row.best)}" if row.best is not None else "-"
        status = status_text(row.status)
        if row.status == "failed" and row.failed_rank is not None:
            status.append(f" r{row.failed_rank}", style="red")
        if row.job:  # a Slurm run: its job's state beside tuitrain's own
            status.append(f" · {row.job}", style="dim" if row.final else "")
        if row.queue is not None:  # its place among this machine's waiting runs
            status.append(f" {row.queue.position}/{row.queue.length}")
        if row.attempt:  # a restarted run: which attempt of how many (the line under the table says why)
            status.append(f" · {row.attempt}", style="yellow" if not row.final else "")
        if local and row.id in self.saved and not row.final:  # a live run's checkpoint written lately (NEWS_SECONDS)
            status.append(f" · ckpt {checkpoint_step(self.saved[row.id])}", style="bold green")
        return {
            "RUN": self.run_text(row, local, branch=branch),
            "STATUS": status,
            "STEP": step_text(row.step, row.max_steps, 5),
            "LOSS": number(row.loss),
            "BEST": Text(best, no_wrap=True, overflow="ellipsis", end=""),
            "TIME": duration(ran) if ran is not None else "-",
        }
