"""The editor's GPU picker for [hardware] gpus: a checklist of this machine's GPUs in NVML order
(as nvidia-smi numbers them), each ticked one labelled with the cuda:N it becomes, keys to move the
highlighted ticked GPU earlier or later in that order, and the physical → cuda:N mapping underneath.
A ticked GPU's box holds a ✓ and an unticked one's is empty, so the two read apart without colour.
The order lives in the profile: the screen keeps it (EditorModel.tick_gpus / move_gpu) and tells
the picker what to show (`show`); the picker only reports ticks (SelectionList.SelectedChanged) and
moves (GpuList.Move)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.strip import Strip
from textual.widgets import SelectionList, Static

from tuitrain.hardware.devices import GpuInfo
from tuitrain.hardware.preflight import busy_reasons
from tuitrain.tui.plain import plain
from tuitrain.tui.widgets.words import Words

TICKED, UNTICKED = "✓", " "  # inside a GPU's box: Textual draws an X in both, told apart by colour only

HOW = ("gpus: tick them in the order they become cuda:0, cuda:1, … (none ticked = all visible); "
       "shift+up / shift+down move the highlighted GPU earlier / later")


def cuda_labels(ticked: Sequence[int | None]) -> dict[int, str]:
    """'→ cuda:N' for each ticked physical GPU (its place in the list)."""
    return {physical: f"→ cuda:{n}" for n, physical in enumerate(ticked) if physical is not None}


def busy_note(gpu: GpuInfo) -> str:
    """'  ⚠ taken: 95% busy' beside a ticked GPU that the launch's preflight warns about (one rule,
    hardware.gpu_choice.busy_reasons: a process computing on it, near-full of memory, or busy); '' when it has room."""
    if gpu.lost:  # it stopped answering: the launch's preflight refuses it
        return "  ⚠ lost: stopped answering (NVML), untick it"
    reasons = busy_reasons(gpu)
    return f"  ⚠ taken: {', '.join(reasons)}" if reasons else ""


class GpuList(SelectionList[int]):
    BINDINGS = [
        Binding("shift+up", "move(-1)", "GPU earlier", tooltip="Move the highlighted GPU earlier in cuda:N order"),
        Binding("shift+down", "move(1)", "GPU later", tooltip="Move the highlighted GPU later in cuda:N order"),
    ]

    class Move(Message):
        """Move the ticked GPU `physical` (its NVML index) by `delta` places in cuda:N order."""

        def __init__(self, physical: int, delta: int) -> None:
            super().__init__()
            self.physical = physical
            self.delta = delta

    def action_move(self, delta: int) -> None:
        if self.highlighted is not None:
            self.post_message(self.Move(self.get_option_at_index(self.highlighted).value, delta))

    def render_line(self, y: int) -> Strip:
        """Textual's line with its box's X made ✓ (ticked) or blank (not ticked)."""
        line = super().render_line(y)
        segments = list(line)
        index = self.scroll_offset.y + y  # as SelectionList finds the option of a line (one line each)
        if len(segments) < 3 or segments[1].text != "X" or not 0 <= index < self.option_count:
            return line
        inner = TICKED if self.get_option_at_index(index).value in self.selected else UNTICKED
        segments[1] = Segment(inner, segments[1].style, segments[1].control)
        return Strip(segments, line.cell_length)


class GpuPicker(Vertical):
    DEFAULT_CSS = """
    GpuPicker { height: auto; }
    GpuPicker #gpu-mapping { color: $text-muted; height: auto; padding-left: 2; }
    """

    def __init__(self, items: list[tuple[str, int, bool]], mapping: Sequence[str]) -> None:
        """`items`: (prompt, NVML index, ticked) per GPU in NVML order; `mapping`: the mapping's lines."""
        super().__init__(classes="gpu-box")
        self.items = items
        self.mapping = list(mapping)

    def compose(self) -> ComposeResult:
        yield Words(HOW, id="gpu-how")  # wrapped whole (a Label kept one line, cut at the edge)
        yield GpuList(*((plain(prompt), gpu, ticked) for prompt, gpu, ticked in self.items), id="gpu-list")
        yield Words(self._mapping_text(), id="gpu-mapping")

    def _mapping_text(self) -> str:
        return "\n".join(self.mapping)

    def show(self, prompts: Sequence[str], mapping: Sequence[Any]) -> None:
        """New prompts (one per GPU, NVML order) and mapping lines."""
        self.mapping = [str(line) for line in mapping]
        for gpu_list in self.query("#gpu-list").results(GpuList):
            for position, prompt in enumerate(prompts[:gpu_list.option_count]):
                gpu_list.replace_option_prompt_at_index(position, plain(prompt))
        for text in self.query("#gpu-mapping").results(Static):
            text.update(self._mapping_text())
