"""The shared-workstation queue on the command line (issue 22): `run --queue/--after/--after-ok`, `queue`,
`cancel`. Argument adders only at import (the parser is built on every command); the work is imported lazily."""

from __future__ import annotations

import argparse

from tuitrain.cli.errors import CliError


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The queue's options of `tuitrain run`."""


def add_queue_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")


def add_cancel_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run")


def cmd_queue(args: argparse.Namespace) -> int:
    raise CliError("tuitrain queue: not built yet")


def cmd_cancel(args: argparse.Namespace) -> int:
    raise CliError("tuitrain cancel: not built yet")
