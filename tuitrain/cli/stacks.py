"""`tuitrain stacks RUN` (issue 26): every rank's Python stack, side by side, and a digest of where they wait.
Argument adders only at import (the parser is built on every command); the work is imported lazily."""

from __future__ import annotations

import argparse

from tuitrain.cli.errors import CliError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run")
    p.add_argument("--json", action="store_true")


def cmd_stacks(args: argparse.Namespace) -> int:
    raise CliError("tuitrain stacks: not built yet")
