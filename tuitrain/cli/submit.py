"""submit: a profile as a Slurm batch job (the run directory is the same contract as a local run's)."""

from __future__ import annotations

import argparse
import sys

from tuitrain.slurm.options import add_job_options, job_options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    add_job_options(p)
    p.add_argument("--python", default=None, help="the Python of tuitrain's environment on the nodes (default: this one)")
    p.add_argument("--dry-run", action="store_true", help="print the sbatch script; submit nothing")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a profile key for this job (repeatable)")


def cmd_submit(args: argparse.Namespace) -> int:
    from tuitrain.backends import for_profile
    from tuitrain.cli.launching import say_when_reading_training_args
    from tuitrain.profile import resolve_profile_path

    backend = for_profile(None, slurm=job_options(args), python=args.python)
    say_when_reading_training_args()
    profile = backend.load(resolve_profile_path(args.profile), args.set)
    for note in profile.notes:
        print(note, file=sys.stderr)
    if args.dry_run:
        sys.stdout.write(backend.plan(profile, args.runs_root).command)
        return 0
    started = backend.start(profile, args.runs_root)
    print(f"run {started.paths.id} submitted as Slurm job {started.job_id}; `tuitrain status {started.paths.id}` "
          "shows it", file=sys.stderr)
    print(started.paths.id)
    return 0
