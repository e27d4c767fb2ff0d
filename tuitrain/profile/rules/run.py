"""[run]: a name that can name folders, an output folder that can hold checkpoints, restarts that can happen."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..folders import unusable_folder
from ..problems import Problem
from ..values import toml_literal
from .common import table_of, value_or_default
from .machines import listed_machines


def rules_run(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    name = value_or_default(table_of(data, "run"), "run.name")
    if name is not None and (not name.strip() or name in (".", "..") or any(c in name for c in "/\\\0")):
        out.append(Problem(file, "run.name", f"{toml_literal(name)} cannot name a run (it names folders)",
                           'use letters, digits, "-" and "_", e.g. name = "my-run"'))
    if value_or_default(table_of(data, "run"), "run.queue") and listed_machines(table_of(data, "distributed")):
        out.append(Problem(file, "run.queue", "a run over several machines ([[distributed.machines]]) starts at once: "
                           "a queue waits on one machine", "remove run.queue, or the machines to queue it here"))
    output_dir = value_or_default(table_of(data, "run"), "run.output_dir")
    if output_dir:
        problem = output_dir_problem(file, output_dir)
        if problem is not None:
            out.append(problem)
    return out + restart_problems(file, data)


def restart_problems(file: str, data: Mapping[str, Any]) -> list[Problem]:
    """A hang that is to restart needs restarts; a split batch needs a [training] batch to split (a [script] sets
    its own); the backoff's cap is no shorter than its first wait."""
    run = table_of(data, "run")
    out: list[Problem] = []
    restarts = value_or_default(run, "run.restarts")
    if value_or_default(run, "run.on_hang") == "restart" and not restarts:
        out.append(Problem(file, "run.on_hang", 'on_hang = "restart" starts a hung run again, but run.restarts = 0 '
                           "allows no restart", 'set run.restarts (e.g. restarts = 2), or on_hang = "kill"'))
    if value_or_default(run, "run.on_oom") == "split_batch" and data.get("script"):
        out.append(Problem(file, "run.on_oom", 'on_oom = "split_batch" changes [training]\'s batch, and a [script] '
                           "sets its own", 'remove run.on_oom (the script can lower its own batch when it restarts)'))
    first, longest = value_or_default(run, "run.restart_backoff"), value_or_default(run, "run.restart_backoff_max")
    if "restart_backoff_max" in run and longest < first:
        out.append(Problem(file, "run.restart_backoff_max", f"{longest:g} s is shorter than run.restart_backoff "
                           f"({first:g} s), the first wait", f"set restart_backoff_max = {first:g} or more"))
    return out


def output_dir_problem(file: str, raw: str, cwd: Path | None = None) -> Problem | None:
    """Why run.output_dir cannot hold checkpoints (under a file, read-only, a file itself), or None.
    A relative one starts from the folder `tuitrain run` is started in, as the launch reads it."""
    fix = 'set run.output_dir to a folder you can write, or remove it (the run directory\'s output/)'
    if "\0" in raw:
        return Problem(file, "run.output_dir", "contains a NUL character, which no path can", fix)
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else (cwd or Path.cwd()) / path
    refusal = unusable_folder(path)
    return Problem(file, "run.output_dir", refusal, fix) if refusal else None

