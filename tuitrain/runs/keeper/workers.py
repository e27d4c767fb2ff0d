"""The seam between a run's keeper (tuitrain.runs.keeper.supervisor.Supervisor: the record, control requests, signals,
the hang watch, the end and its outcome) and the processes it keeps: its workers.

Two kinds exist: this machine's ranks under one `accelerate launch` (tuitrain.runs.keeper.local_launch.LocalLaunch: a
local run, a node agent's machine, a Slurm node) and the node agents of a run on several machines, one ssh link
each (tuitrain.runs.keeper.machine_links.MachineLinks). After torch.distributed.elastic's split of its agent from the
process context it runs. A new kind of workers implements `Workers` and is chosen in tuitrain.runs.keeper.supervise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Unpack

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.ranks import RankRecord
from tuitrain.rundir.record import RunRecord, Status
from tuitrain.rundir.run import Run

Outcome = tuple[Status, int | None, str | None]  # (status, failed rank, one-line cause) of a run that ended


@dataclass
class Settled:
    """What the workers left once they ended: the record's exit codes, and for a local launch its ranks' records
    and torch's word on which failed (tuitrain.rundir.exits.root_cause), which the outcome reads."""

    exit_codes: dict[str, Any]
    records: dict[int, RankRecord] = field(default_factory=dict)
    cause: Any = None


class Keeper(Protocol):
    """What workers may read of, and ask of, the keeper that owns them."""

    paths: RunPaths
    record: RunRecord
    terminating: bool
    stop_requested: bool
    poll_seconds: float
    END_WITH_RANKS: bool

    @property
    def machine_rank(self) -> int: ...

    @property
    def run(self) -> Run: ...

    def update(self, **fields: Unpack[RunRecord]) -> None: ...

    def mark_ending(self) -> None: ...

    def adopt_output_dir(self, records: Mapping[int, RankRecord]) -> None: ...

    def hang_stacks(self, stalled: str) -> str: ...


class Workers(Protocol):
    """The processes of one run as its keeper sees them. The keeper's watch loop asks, in this order: `poll`,
    (its control requests and hang watch), `step`, `wait`; at the end `settle`, the outcome, `after_end`."""

    STOP_SAID: str  # what the keeper logs when a stop is requested
    KILLED_SAID: str  # the error of a run ended by `tuitrain stop --now`
    HANG_SAID: str  # what the keeper logs when it first sees a hang: str.format with `said` and `on_hang`
    SAMPLED_HERE: bool  # whether this machine's GPUs and ranks are sampled here (and its manifest written)
    ACTS_ON_HANG: bool  # whether the keeper itself acts on `[run] on_hang` (else the workers' machines do)

    def start(self) -> None:
        """Start them and record their processes (raises OSError when they cannot start)."""

    @property
    def tearing_down(self) -> bool:
        """Whether they are being ended after a failure (control requests and the hang watch rest then)."""

    def poll(self, woke: bool) -> None:
        """One look at them; `woke`: an exit was seen since the last look."""

    def relay_control(self) -> None:
        """Pass the run's control requests on where the ranks cannot read the run directory themselves."""

    def terminate(self, why: str) -> None:
        """End every process of the run now (`tuitrain stop --now`, a hang's kill)."""

    def rank_pids(self) -> dict[int, int]:
        """rank → pid of this machine's ranks (empty where none run here)."""

    def rank_states(self) -> dict[int, str] | None:
        """Each rank's process state, for the hang judgement (None: runs.view.hang reads them itself)."""

    def hang_begins(self, limit: float | None) -> None:
        """A new hang was seen, with its step's limit."""

    def hang_cause(self, stalled: str) -> str | None:
        """The hang in one line with its stacks' digest; None while the stacks are still on their way."""

    def step(self) -> int | None:
        """After each look: tear down what failed; the launcher's exit code once they have all ended, else None."""

    def wait(self) -> bool:
        """Until something happens or the poll period passes; whether an exit woke it."""

    def abort(self) -> None:
        """End them now: the keeper itself is failing."""

    def settle(self, code: int) -> Settled:
        """After `step` returned `code`: end what is left and collect their exit codes."""

    def outcome(self, code: int, records: dict[int, RankRecord], cause: Any) -> Outcome:
        """The outcome, once the keeper's own (a hang it ended, `stop --now`) did not decide it."""

    def said_end(self, status: str, code: int, error: str | None) -> str:
        """The log line of the recorded end."""

    def after_end(self, exit_codes: dict[str, Any]) -> None:
        """What waits until the end is recorded (a launcher's own teardown, a machine's last words)."""
