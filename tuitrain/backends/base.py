"""What every backend does, whatever carries the run: plan, check, start, resume, stop.

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
from typing import Any, Protocol

from tuitrain.profile import Problem, Profile
from tuitrain.rundir.checkpoints import Checkpoint
from tuitrain.rundir.kind import RunKind
from tuitrain.rundir.layout import RunPaths

Say = Callable[[str], None]
Pause = Callable[[float], bool]  # wait this long; False when the caller is going away (an app closing)


@dataclass(frozen=True)
class Preview:
    """What launching a profile would run, made before any run directory exists (it names `<new-run>`)."""

    kind: RunKind
    summary: str  # one line: accelerator, processes, machines
    commands: list[str]  # the command line; for several machines each one's, under a `# machine M` comment
    notes: list[str]
    problems: list[Problem]
    plan: Any = None  # the planner's own value (LaunchPlan, MachinesPlan) for --json and the editor

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def command(self) -> str:
        return "\n".join(self.commands)


@dataclass(frozen=True)
class Started:
    paths: RunPaths
    note: str  # one line for the user: what was started, and how
    job_id: str | None = None


@dataclass(frozen=True)
class Resumed:
    paths: RunPaths
    checkpoint: Checkpoint
    profile: Profile  # the profile it runs: its notes say what was migrated or defaulted
    note: str
    job_id: str | None = None


def resume_note(parent: RunPaths, checkpoint: Checkpoint, paths: RunPaths, profile: Profile,
                job_id: str | None = None) -> str:
    """What every backend says of a resume it started, in one line: its Slurm job, and the restored settings the
    profile changes (`runs.start.resume_rule`: the optimizer's, honoured from the checkpoint's step)."""
    from tuitrain.runs.start.from_profile import resume_said

    job = f", Slurm job {job_id}" if job_id is not None else ""
    said = resume_said(parent.profile, profile.data, checkpoint)
    return (f"resuming {parent.id} from {checkpoint.path.name} (step {checkpoint.step}) as run {paths.id}{job}"
            + (f"; {said}" if said else ""))


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

    def start(self, profile: Profile, runs_root: Path, cwd: Path | None = None) -> Started:
        """Start a run of a loaded profile; returns once it is started (or submitted), detached."""
        ...

    def resume(self, parent: RunPaths, runs_root: Path, checkpoint: str | Path = "latest",
               overrides: Sequence[str] = (), cwd: Path | None = None) -> Resumed:
        """A new run continuing `parent` from one of its checkpoints."""
        ...

    def stop(self, paths: RunPaths, now: bool, say: Say, pause: Pause | None = None,
             timeout: float | None = None) -> str:
        """Ask a run to save and stop (`now`: end every process). Progress goes to `say`; returns the last word."""
        ...
