"""What a screen may ask of the app, typed once: the app's state (runs root, working folder, the latest runs and
hardware sample) and its navigation (open a run, Compare, the editor). Screens type `self.app` by this class, so
none of them imports the app module, which imports them (no import circle)."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textual.app import App

if TYPE_CHECKING:
    from tuitrain.hardware.sampler import SampledView
    from tuitrain.runs.view.live import RunRow
    from tuitrain.tui.gpu_history import GpuHistory
    from tuitrain.tui.run_table import CheckpointNews
    from tuitrain.tui.workstation_streams import BoxGpus


class TuitrainAppApi(App[int]):
    runs_root: Path
    cwd: Path
    launch_overrides: list[str]
    clock: Callable[[], float]
    monitor_interval: float
    hardware: Any  # the last detect_hardware(), or None before the first sample
    hardware_view: SampledView | None
    hardware_line: str
    # each workstation's latest GPUs (`gpus`) and why its stream failed (`problem`), as Home's one stream of that box
    # told them (through its hardware strip): the GPUs screen and a remote run's monitor read them here, and a screen
    # with a `box_gpus_heard(host)` method is told of each change
    host_gpus: dict[str, BoxGpus]
    gpu_history: GpuHistory  # each GPU's recent utilisation and memory, this machine's (`LOCAL`) and each box's
    rows: list[RunRow]
    polls: int
    checkpoint_news: CheckpointNews

    @abstractmethod
    def show_path(self, path: Path | str | None) -> str:
        """A path as the user thinks of it: relative to the working folder when inside it."""

    @abstractmethod
    def poke(self) -> None:
        """Poll the runs root now (after starting or stopping a run)."""

    @abstractmethod
    def open_run(self, run_dir: Path, replace: bool = False, tab: str | None = None) -> None:
        """The run's monitor (in place of the current monitor when `replace`; on the pane `tab`, `tab-rank-3`)."""

    @abstractmethod
    def open_compare(self, runs: list[tuple[Path, str]]) -> None:
        """Compare on (run directory, profile) pairs."""

    @abstractmethod
    def open_editor(self, path: Path | None, accelerate_config: Path | None = None) -> None:
        """The profile editor on a file (None: a new profile)."""
