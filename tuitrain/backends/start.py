"""One start and one resume, whoever asks (`tuitrain run`, `submit`, `resume` and `run --sweep`; the app's launch
and resume dialogs; the editor's Launch): every check in one order (each function's docstring), then the backend's
start."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuitrain.backends.base import Backend, Check, Resumed, Say, Started
from tuitrain.backends.checks import DOCTOR_SECONDS
from tuitrain.backends.choose import for_profile, for_run
from tuitrain.profile import Problem, Profile, ProfileError, load_profile
from tuitrain.profile.load import mark_overrides, notes_not_said_again
from tuitrain.rundir.checkpoints import Checkpoint
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.start.new_run import Lineage, StartError

if TYPE_CHECKING:
    from tuitrain.hardware import Hardware
    from tuitrain.runs.queue.entries import QueueRequest
    from tuitrain.slurm.script import JobOptions

Warn = Callable[[Problem], None]


@dataclass(frozen=True)
class Choices:
    """What the user chose beside the profile, however it was said (the CLI's options, the dialog's buttons)."""

    slurm: JobOptions | None = None  # where: submitted to Slurm with these options (None: here, or its machines)
    queue: QueueRequest | None = None  # queued on this machine (--queue, --after, --after-ok, a sweep, ctrl+o)
    doctor: bool = True  # the machines' own checks first (--no-doctor: False)
    ssh_config: str | None = None  # ssh's config for the machines a profile lists (None: ssh's own)
    python: str | None = None  # tuitrain's Python on a Slurm job's nodes (None: this one)


class CheckFailed(StartError):
    """The machines' own checks found what would fail: nothing was started. `checks`: every check, one line each."""

    def __init__(self, profile: Profile, check: Check) -> None:
        self.checks, self.failed = check.lines, len(check.failed)
        super().__init__(f"{profile.path}: {self.failed} machine check(s) failed; nothing was started")

    def lines(self) -> list[str]:
        return [*self.checks, str(self)]


def profile_queues(data: Mapping[str, Any]) -> bool:
    """Whether a profile asks to be queued whenever it runs on this machine (`[run] queue = true`)."""
    run = data.get("run")
    return isinstance(run, Mapping) and run.get("queue") is True


def chosen(choices: Choices, profile: Profile | None = None, hardware: Hardware | None = None) -> Backend:
    """The backend that runs a profile as the user chose: Slurm when asked (then `profile` may be None), else the
    machines the profile lists, else this machine (tuitrain.backends.choose.for_profile)."""
    return for_profile(profile.data if profile is not None and choices.slurm is None else None, slurm=choices.slurm,
                       ssh_config=choices.ssh_config, hardware=hardware, python=choices.python)


def load_for(path: Path, overrides: Sequence[str], choices: Choices) -> Profile:
    """The profile as the backend the choices pick runs it (a Slurm job's: main_process_ip is its first node)."""
    return chosen(choices).load(path, overrides) if choices.slurm is not None else load_profile(path, overrides)


def _ignore(_: object) -> None:
    return None


def start_profile(profile: Profile, runs_root: Path, choices: Choices = Choices(), *, overrides: Sequence[str] = (),
                  cwd: Path | None = None, hardware: Hardware | None = None, say: Say = _ignore,
                  warn: Warn = _ignore) -> Started:
    """Start a run of a loaded profile as the user chose, checked in this order: word of its end can be sent
    ([notify]); queued (asked, or `[run] queue = true` off Slurm), it is created queued (its start refuses the plan's
    errors); else the plan's errors refuse it, the machines' own checks (the doctor, for several) refuse it, then it
    starts. `overrides`: the --set it was loaded with (a problem one causes names it); `say`: what is being done;
    `warn`: the notes and warnings of what starts, each once. Refusals: ProfileError (the profile or its plan),
    StartError (CheckFailed: the machines' checks), whatever the backend's start raises."""
    from tuitrain.notify import read_notify_config

    read_notify_config()  # a bad [notify] refuses before anything starts (ProfileError: file, key, fix)
    backend = chosen(choices, profile, hardware)
    queue = choices.queue
    if queue is None and choices.slurm is None and profile_queues(profile.data):  # a Slurm job queues in Slurm
        from tuitrain.runs.queue.entries import QueueRequest

        queue = QueueRequest()
    if queue is not None:  # planned as it will wait: its start refuses the plan's errors
        for note in profile.notes:
            warn(note)
        return backend.start(profile, runs_root, cwd, queue=queue)
    preview = backend.plan(profile, runs_root, cwd)
    for note in notes_not_said_again(profile, preview.problems):
        warn(note)
    found = mark_overrides(preview.problems, overrides, profile.path)  # as `validate` says them
    if preview.errors:
        raise ProfileError([p for p in found if p.is_error])
    for problem in found:
        if problem.severity == "warning":
            warn(problem)
    if choices.doctor:
        check = backend.check(profile, runs_root, DOCTOR_SECONDS, say)
        if check.failed:
            raise CheckFailed(profile, check)
    return backend.start(profile, runs_root, cwd)


def resume_run(parent: RunPaths, runs_root: Path, checkpoint: str | Path = "latest", overrides: Sequence[str] = (),
               *, cwd: Path | None = None, ssh_config: str | None = None,
               hardware: Hardware | None = None) -> Resumed:
    """A new run continuing `parent` from one of its checkpoints, by the backend that started it (a Slurm job is
    submitted with its parent's options; machines reached through its parent's ssh_config unless `ssh_config`).
    Checked in this order: [notify]; the parent as its backend settles it has ended; `resume_inputs`; `check_resume`
    against the world the backend would run; then the backend's start with the lineage."""
    from tuitrain.notify import read_notify_config
    from tuitrain.rundir.record import read_record
    from tuitrain.runs.liveness import settle_lost  # psutil: not for `plan`
    from tuitrain.runs.start.from_profile import check_resume, resume_inputs

    read_notify_config()
    record = read_record(parent)
    backend = for_run(record, ssh_config=ssh_config, hardware=hardware)
    record = settle_lost(parent, backend.settle([(parent, record)])[0][0])
    chosen, profile = resume_inputs(parent, record, checkpoint, overrides, job=backend.job_words(record))
    check_resume(parent, profile, chosen, *backend.world(profile))
    started = backend.start(profile, runs_root, cwd, lineage=Lineage(parent=parent.id, checkpoint=chosen.path))
    return Resumed(started.paths, chosen, profile, resume_note(parent, chosen, started.paths, profile, started.job_id),
                   started.job_id)


def resume_note(parent: RunPaths, checkpoint: Checkpoint, paths: RunPaths, profile: Profile,
                job_id: str | None = None) -> str:
    """What a resume says, in one line: its Slurm job, and the restored settings the profile changes
    (`runs.start.resume_rule`: the optimizer's, honoured from the checkpoint's step)."""
    from tuitrain.runs.start.from_profile import resume_said

    job = f", Slurm job {job_id}" if job_id is not None else ""
    said = resume_said(parent.profile, profile.data, checkpoint)
    return (f"resuming {parent.id} from {checkpoint.path.name} (step {checkpoint.step}) as run {paths.id}{job}"
            + (f"; {said}" if said else ""))
