"""submit: a profile as a Slurm batch job (the run directory is the same contract as a local run's)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tuitrain.cli.errors import CliError
from tuitrain.runs.layout import RunPaths
from tuitrain.slurm.options import add_job_options, job_options
from tuitrain.slurm.script import ScriptError

if TYPE_CHECKING:
    from tuitrain.profile import Profile


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    add_job_options(p)
    p.add_argument("--python", default=None, help="the Python of tuitrain's environment on the nodes (default: this one)")
    p.add_argument("--dry-run", action="store_true", help="print the sbatch script; submit nothing")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a profile key for this job (repeatable)")


def _load(ref: str, overrides: list[str]) -> Profile:
    """The profile as the job runs it (tuitrain.slurm.submit.load_job_profile), its notes said."""
    from tuitrain.cli.launching import say_when_reading_training_args
    from tuitrain.profile import resolve_profile_path
    from tuitrain.slurm.submit import job_notes, load_job_profile

    say_when_reading_training_args()
    profile = load_job_profile(resolve_profile_path(ref), overrides)
    for note in job_notes(profile):
        print(note, file=sys.stderr)
    return profile


def cmd_submit(args: argparse.Namespace) -> int:
    from tuitrain.slurm.commands import SlurmError
    from tuitrain.slurm.submit import dry_run_script, submit

    profile = _load(args.profile, args.set)
    try:
        if args.dry_run:
            sys.stdout.write(dry_run_script(profile, args.runs_root, job_options(args), python=args.python))
            return 0
        done = submit(profile, args.runs_root, job_options(args), python=args.python)
    except (ScriptError, SlurmError) as exc:
        raise CliError(str(exc)) from None
    print(f"run {done.paths.id} submitted as Slurm job {done.job_id}; `tuitrain status {done.paths.id}` shows it",
          file=sys.stderr)
    print(done.paths.id)
    return 0


def resume_slurm(args: argparse.Namespace, parent: RunPaths) -> int:
    """`tuitrain resume` of a run that was submitted to Slurm: submitted again, continuing from its checkpoint."""
    from tuitrain.runs.relaunch import ResumeError
    from tuitrain.slurm.commands import SlurmError
    from tuitrain.slurm.submit import resume_job

    try:
        done, checkpoint, _profile = resume_job(parent, args.runs_root, args.checkpoint, args.set)
    except (ResumeError, ScriptError, SlurmError) as exc:
        raise CliError(str(exc)) from None
    print(f"resuming {parent.id} from {checkpoint.path.name} (step {checkpoint.step}) as run "
          f"{done.paths.id}, Slurm job {done.job_id}", file=sys.stderr)
    print(done.paths.id)
    return 0


def stop_slurm(args: argparse.Namespace, paths: RunPaths) -> int:
    """`tuitrain stop` of a Slurm run: the graceful stop (or --now), then scancel if the job does not end."""
    from tuitrain.slurm.control import stop_job

    record = stop_job(paths, args.now, getattr(args, "timeout", None),
                      lambda line: print(line, file=sys.stderr, flush=True))
    why = f": {record['error']}" if record.get("error") else ""
    print(f"run {record['id']} {record['status']}{why}")
    return 0
