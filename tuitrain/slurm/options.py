"""The Slurm options of a job, as `tuitrain submit` takes them and as the app's launch dialog takes them typed:
one set of flags for both."""

from __future__ import annotations

import argparse
import shlex
from typing import NoReturn

from tuitrain.slurm.script import DEFAULT_WARNING_SECONDS, JobOptions, ScriptError


def add_job_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--partition", default=None, help="the Slurm partition (default: the cluster's default)")
    p.add_argument("--time", default=None, help="the job's time limit: minutes, H:M:S or D-H:M:S")
    p.add_argument("--account", default=None, help="the Slurm account to charge")
    p.add_argument("--warning", type=int, default=DEFAULT_WARNING_SECONDS, metavar="SECONDS",
                   help=f"save a checkpoint and stop this long before the time limit (default {DEFAULT_WARNING_SECONDS})")
    p.add_argument("--requeue", action="store_true",
                   help="let Slurm requeue the job (preemption, scontrol requeue): it saves a checkpoint at Slurm's "
                        "SIGTERM and resumes from it when it runs again")


def job_options(args: argparse.Namespace) -> JobOptions:
    return JobOptions(partition=args.partition, time=args.time, account=args.account, warning_seconds=args.warning,
                      requeue=args.requeue)


class _Refusing(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ScriptError(f"Slurm options: {message}")


def options_from_text(text: str) -> JobOptions:
    """`--partition P --time T --account A --warning S --requeue` as typed; a mistake is one line (ScriptError)."""
    parser = _Refusing(prog="submit", add_help=False)
    add_job_options(parser)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ScriptError(f"Slurm options: {exc}") from None
    return job_options(parser.parse_args(words))
