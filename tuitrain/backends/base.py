"""What every backend does, whatever carries the run: plan, check, start, stop; and what it answers viewers of its
runs: the scheduler's word on them, their machines, their ranks' stacks.

A backend is chosen once (tuitrain.backends.choose) from a profile or a run record; the CLI and the app call it
and never ask which kind of run they hold. Each method's refusals are `TuitrainError`s whatever the backend:
`ProfileError` (the profile), `StartError` (cannot start), `ResumeError` (cannot resume), `ControlError` (cannot
be asked), Slurm's `ScriptError` / `SlurmError`, each with a message a person can act on. (Model: torchx's
scheduler API, one interface over local and Slurm schedulers.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tuitrain.launch import LaunchPlan
from tuitrain.launch.machines import MachinesPlan
from tuitrain.profile import Problem, Profile
from tuitrain.rundir.checkpoints import Checkpoint
from tuitrain.rundir.kind import RunKind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.runs.start.new_run import Lineage

if TYPE_CHECKING:
    from tuitrain.runs.queue.entries import QueueRequest
    from tuitrain.runs.view.stacks import RankStacks

Say = Callable[[str], None]
JobLabel = dict[str, Any]  # what viewers show of a run's job: {"job_id", "state", "reason", "label", "problem"}
Settled = tuple[RunRecord, JobLabel | None]  # a record as its scheduler says it stands, and its job's label
CANNOT_QUEUE = ("a queued run waits on this machine; a profile that lists [[distributed.machines]] starts at once "
                "(drop them to queue it here), and a Slurm job queues in Slurm (tuitrain submit)")
Pause = Callable[[float], bool]  # wait this long; False when the caller is going away (an app closing)


@dataclass(frozen=True)
class Preview:
    """What launching a profile would run, made before any run directory exists (it names `<new-run>`)."""

    kind: RunKind
    summary: str  # one line: accelerator, processes, machines
    commands: list[str]  # the command line; for several machines each one's, under a `# machine M` comment
    notes: list[str]
    problems: list[Problem]
    plan: LaunchPlan | MachinesPlan | None = None  # the planner's own, for --json and the editor (a Slurm job: None,
    # its nodes plan their own parts; `commands` holds its batch script)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def command(self) -> str:
        return "\n".join(self.commands)


@dataclass(frozen=True)
class Started:
    paths: RunPaths
    note: str = ""  # what the app says as it opens the run: a queued run's, a submitted job's (a plain start: none)
    job_id: str | None = None
    queued: bool = False  # created queued: its supervisor starts it when its turn comes


@dataclass(frozen=True)
class Resumed:
    paths: RunPaths
    checkpoint: Checkpoint
    profile: Profile  # the profile it runs: its notes say what was migrated or defaulted
    note: str
    job_id: str | None = None


@dataclass(frozen=True)
class Check:
    """The checks a backend makes of the machines before starting (the doctor's, for several machines)."""

    lines: list[str] = field(default_factory=list)  # what was checked, one line each
    failed: list[str] = field(default_factory=list)  # what failed, one line each (nothing starts while any)


class Backend(Protocol):
    kind: RunKind

    def load(self, path: Path, overrides: Sequence[str] = ()) -> Profile:
        """The profile as this backend runs it, `--set` overrides applied (ProfileError)."""
        ...

    def plan(self, profile: Profile, runs_root: Path, cwd: Path | None = None) -> Preview:
        """What would run, and every refusal its start would make that can be known first (nothing is started;
        this machine's hardware and the output folder are probed). `cwd`: where it would start (default: here)."""
        ...

    def check(self, profile: Profile, runs_root: Path, timeout: float, say: Say) -> Check:
        """The machines' own checks before a start, beyond the plan's (they may take up to `timeout`; what is
        being checked is said to `say` first)."""
        ...

    def start(self, profile: Profile, runs_root: Path, cwd: Path | None = None, *, lineage: Lineage | None = None,
              queue: QueueRequest | None = None) -> Started:
        """Start a run of a loaded profile; returns once it is started (or submitted), detached. `lineage`: the run
        and checkpoint it continues (a resume). `queue`: created queued on this machine, started by its supervisor
        when its turn comes (StartError where the backend cannot queue)."""
        ...

    def world(self, profile: Profile) -> tuple[int, int]:
        """(processes in all, machines) a start of `profile` would run: the world a checkpoint it resumes from must
        have been written by."""
        ...

    def stop(self, paths: RunPaths, now: bool, say: Say, pause: Pause | None = None,
             timeout: float | None = None) -> str:
        """Ask a run to save and stop (`now`: end every process). Progress goes to `say`; returns the last word."""
        ...

    def settle(self, runs: Sequence[tuple[RunPaths, RunRecord]]) -> list[Settled]:
        """Each of its runs as its scheduler says it stands (a job that ended without its run recording an end is
        recorded here, as `runs.liveness.settle_lost` records a run whose supervisor died), with its job's label;
        one query for them all, none for a run no scheduler holds (its record as it is, no label)."""
        ...

    def job_words(self, record: RunRecord) -> str | None:
        """The run's job as a refusal names it ("Slurm job 42"); None for a run no scheduler holds."""
        ...

    def machines(self, record: RunRecord) -> list[MachineEntry]:
        """The machines its run was planned on, as its record lists them (host, machine_rank, num_processes, env,
        accelerator); [] for a run on one machine or a Slurm job (its nodes are Slurm's)."""
        ...

    def take_stacks(self, paths: RunPaths, record: RunRecord) -> tuple[dict[int, RankStacks], list[str]]:
        """Every live rank's stacks, wherever it runs, and a line for each machine or node that did not answer."""
        ...
