"""The `tuitrain` command line a screen copies for the user: it runs as is from the app's working folder."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Sequence


def tuitrain_command(verb: str, profile: Path, runs_root: Path, cwd: Path, overrides: Sequence[str] = (),
                     extra: Sequence[str] = ()) -> str:
    """`tuitrain VERB PROFILE [--runs-dir DIR] [--set k=v …] [EXTRA…]`: the profile relative to `cwd` where it
    lies under it, --runs-dir only when the runs root is not `cwd/runs` (the CLI's default)."""
    path = Path(profile).resolve()
    here = Path(cwd).resolve()
    shown = os.path.relpath(path, here) if path.is_relative_to(here) else str(path)
    args = ["tuitrain", verb, shown]
    if Path(runs_root).resolve() != (here / "runs").resolve():
        args += ["--runs-dir", str(runs_root)]
    for change in overrides:
        args += ["--set", change]
    return shlex.join([*args, *extra])
