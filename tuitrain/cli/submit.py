"""submit: a profile as a Slurm batch job (the run directory is the same contract as a local run's)."""

from __future__ import annotations

import argparse
import sys

from tuitrain.cli.errors import CliError
from tuitrain.slurm.script import DEFAULT_WARNING_SECONDS, JobOptions, ScriptError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile")
    p.add_argument("--partition", default=None, help="the Slurm partition (default: the cluster's default)")
    p.add_argument("--time", default=None, help="the job's time limit: minutes, H:M:S or D-H:M:S")
    p.add_argument("--account", default=None, help="the Slurm account to charge")
    p.add_argument("--warning", type=int, default=DEFAULT_WARNING_SECONDS, metavar="SECONDS",
                   help=f"save a checkpoint and stop this long before the time limit (default {DEFAULT_WARNING_SECONDS})")
    p.add_argument("--python", default=None, help="the Python of tuitrain's environment on the nodes (default: this one)")
    p.add_argument("--dry-run", action="store_true", help="print the sbatch script; submit nothing")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a profile key for this job (repeatable)")


def options_of(args: argparse.Namespace) -> JobOptions:
    return JobOptions(partition=args.partition, time=args.time, account=args.account, warning_seconds=args.warning)


def cmd_submit(args: argparse.Namespace) -> int:
    from tuitrain.cli.launching import _load
    from tuitrain.slurm.commands import SlurmError
    from tuitrain.slurm.submit import dry_run_script, submit

    profile = _load(args.profile, args.set)
    try:
        if args.dry_run:
            sys.stdout.write(dry_run_script(profile, args.runs_root, options_of(args), python=args.python))
            return 0
        done = submit(profile, args.runs_root, options_of(args), python=args.python)
    except (ScriptError, SlurmError) as exc:
        raise CliError(str(exc)) from None
    print(f"run {done.paths.id} submitted as Slurm job {done.job_id}; `tuitrain status {done.paths.id}` shows it",
          file=sys.stderr)
    print(done.paths.id)
    return 0
