"""What a profile's checks say, for `tuitrain validate [--offline]`, `tuitrain doctor` and the app's check screen:
the same lines, in the same order, with the same verdict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

DOCTOR_SECONDS = 20.0  # what each machine may take to answer the doctor (`doctor --timeout`, a launch's own check)


@dataclass(frozen=True)
class Said:
    """A check's problems and notes (`lines`, stderr on the command line), then its verdict in one line."""

    lines: tuple[str, ...]
    verdict: str
    ok: bool


def validation(path: Path, sets: Sequence[str], runs_root: Path, offline: bool, hardware: Any = None) -> Said:
    """Every problem `run` would refuse for: the profile's own (the schema, the keys between them, its files),
    then, unless `offline`, the plan's against this machine, which `run` makes the same way (its backend's plan:
    the GPUs, the output folder, the machines)."""
    from tuitrain.backends.choose import for_profile
    from tuitrain.profile import ProfileError, load_profile
    from tuitrain.profile.load import plan_problems

    try:
        profile = load_profile(path, sets)
    except ProfileError as exc:
        errors = sum(1 for p in exc.problems if p.severity == "error")
        return Said(tuple(str(p) for p in exc.problems), f"{errors} error(s)", ok=False)
    if offline:
        return Said(tuple(str(note) for note in profile.notes),
                    f"{profile.path}: ok (the profile alone: not checked against this machine)", ok=True)
    preview = for_profile(profile.data, hardware=hardware).plan(profile, runs_root)
    lines = tuple(str(p) for p in plan_problems(profile, preview.problems, sets))
    if preview.errors:
        return Said(lines, f"{len(preview.errors)} error(s) on this machine (`--offline` checks the profile alone)",
                    ok=False)
    return Said(lines, f"{profile.path}: ok", ok=True)


def no_machines_to_check(profile_path: Path | str | None) -> str:
    """Why the doctor checks nothing of a profile that lists no machines."""
    return (f"{profile_path}: no [[distributed.machines]] to check; the doctor checks the machines of a "
            "multi-machine profile (this machine's checks run with `tuitrain plan`)")


def doctor_summary(machines: int, seconds: float, failed: int) -> str:
    """The doctor's last line: how many machines, how long, and what failed."""
    summary = "all checks passed" if not failed else f"{failed} check(s) failed"
    return f"{machines} machine(s) checked in {seconds:.1f} s: {summary}"


def doctor(path: Path, sets: Sequence[str], runs_root: Path, ssh_config: str | None = None,
           timeout: float = DOCTOR_SECONDS) -> Said:
    """`tuitrain doctor` of a multi-machine profile: each check's line (every machine reached over ssh, in
    parallel), the plan's errors, and the summary; a profile that lists no machines is said so."""
    from tuitrain.backends.choose import for_profile
    from tuitrain.backends.machines import doctor_report
    from tuitrain.profile import load_profile

    profile = load_profile(path, sets)
    if for_profile(profile.data).kind != "machines":
        return Said((), no_machines_to_check(profile.path), ok=False)
    report, plan = doctor_report(profile, runs_root, ssh_config, timeout)
    failed = sum(1 for c in report.checks if c.ok is False)
    return Said((*report.lines(), *(str(p) for p in plan.errors)),
                doctor_summary(len(plan.machines), report.seconds, failed), ok=report.ok and not plan.errors)
