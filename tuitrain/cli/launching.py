"""run, resume, plan, validate: from a profile to a started run (or to what would run)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Mapping, Sequence

from tuitrain.backends import for_profile
from tuitrain.cli.errors import CliError
from tuitrain.cli.output import print_json
from tuitrain.launch import LaunchPlan
from tuitrain.launch.machines import MachinesPlan
from tuitrain.profile import Profile, load_profile, resolve_profile_path
from tuitrain.profile.load import plan_problems
from tuitrain.profile.training_args import report_reading_to
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.catalog import find_run
from tuitrain.yaml_text import dump as dump_yaml


def say_when_reading_training_args() -> None:
    """The first check after installing transformers reads its TrainingArguments (seconds): say so on stderr."""
    report_reading_to(lambda line: print(f"tuitrain: {line}", file=sys.stderr, flush=True))


def _print_notes(profile: Profile) -> None:
    for note in profile.notes:
        print(note, file=sys.stderr)


def _load(ref: str, overrides: list[str], notes: bool = True) -> Profile:
    say_when_reading_training_args()
    profile = load_profile(resolve_profile_path(ref), overrides)
    if notes:
        _print_notes(profile)
    return profile


def _ssh_config(args: argparse.Namespace) -> str | None:
    from pathlib import Path

    return str(Path(args.ssh_config).expanduser().resolve()) if getattr(args, "ssh_config", None) else None


def cmd_run(args: argparse.Namespace) -> int:
    from tuitrain.backends.start import CheckFailed, Choices, start_profile
    from tuitrain.runs.queue.options import options_refusal, queue_options, queue_request

    if getattr(args, "host", None):  # a profile of this machine, started on a workstation of the settings
        from tuitrain.cli.workstations import cmd_run_there

        return cmd_run_there(args)
    options = queue_options(args)
    refusal = options_refusal(options)
    if refusal:
        raise CliError(refusal)
    queue = queue_request(args.runs_root, options)
    if options.sweep:
        from tuitrain.cli.sweeping import cmd_sweep

        return cmd_sweep(args)
    profile = _load(args.profile, args.set, notes=False)
    choices = Choices(queue=queue, doctor=not args.no_doctor, ssh_config=_ssh_config(args))
    try:
        started = start_profile(profile, args.runs_root, choices, overrides=args.set,
                                say=lambda line: print(f"tuitrain: {line}", file=sys.stderr),
                                warn=lambda problem: print(problem, file=sys.stderr))
    except CheckFailed as exc:
        for line in exc.checks:
            print(line, file=sys.stderr)
        raise CliError(f"{exc} (fix them, or pass --no-doctor to start anyway)") from None
    paths = started.paths
    if started.queued:  # its id printed; its supervisor starts it
        print(paths.id)
        print(f"queued run {paths.id}; `tuitrain queue` shows what it waits for, `tuitrain cancel {paths.id}` drops it",
              file=sys.stderr)
        return 0
    if args.detach:
        print(paths.id)
        return 0
    if getattr(args, "app", False) and sys.stdin.isatty() and sys.stdout.isatty():
        from tuitrain.tui.app import run_app

        run_app(runs_root=args.runs_root, open_run=paths.root)
        return _after_the_app(paths)
    from tuitrain.cli.follow import (
        follow_run,  # psutil and the run summary: only when following
    )

    return follow_run(paths)


def _after_the_app(paths: RunPaths) -> int:
    """The run's last word once the app is quit: how it ended, with the exit code `run` without --app gives, as
    `logs -f` says it (`cli.follow.report_end`); or that it goes on."""
    from tuitrain.cli.follow import report_end
    from tuitrain.rundir.record import FINAL_STATUSES
    from tuitrain.runs.catalog import load_record
    from tuitrain.runs.liveness import effective_status

    record = load_record(paths)
    status = effective_status(record)
    if status not in FINAL_STATUSES:
        print(f"run {paths.id} goes on; `tuitrain status {paths.id}` or `tuitrain` shows it", file=sys.stderr)
        return 0
    return report_end(paths, {**record, "status": status}, sys.stdout, sys.stderr)


def cmd_resume(args: argparse.Namespace) -> int:
    from tuitrain.backends.start import resume_run

    parent = find_run(args.runs_root, args.run)
    say_when_reading_training_args()
    resumed = resume_run(parent, args.runs_root, args.checkpoint, args.set, ssh_config=_ssh_config(args))
    _print_notes(resumed.profile)
    print(resumed.note, file=sys.stderr)
    if args.detach or resumed.job_id is not None:  # a submitted job is followed with `tuitrain logs`/`status`
        print(resumed.paths.id)
        return 0
    from tuitrain.cli.follow import (
        follow_run,  # psutil and the run summary: only when following
    )

    return follow_run(resumed.paths)


def _print_parts(env: Mapping[str, str], config: Mapping[str, Any], notes: Sequence[object], head: str) -> None:
    """A plan's environment, accelerate config and notes, each under a heading that starts with `head` ("\n" for
    this machine's plan, an indent for one machine of several); their lines two spaces further in."""
    inner = head.lstrip("\n") + "  "
    print(f"{head}environment:")
    for key, value in sorted(env.items()):
        print(f"{inner}{key}={value}")
    print(f"{head}accelerate config (accelerate.yaml):")
    print(inner + dump_yaml(dict(config)).rstrip().replace("\n", "\n" + inner))
    if notes:
        print(f"{head}notes:")
        for note in notes:
            print(f"{inner}{note}")


def _print_machines_plan(plan: MachinesPlan) -> None:
    port = plan.main_process_port if plan.main_process_port is not None else "(no main_process_port)"
    where = f"   main: {plan.main_process_ip}:{port}" if plan.main_process_ip else ""
    print(f"machines: {plan.num_machines}   processes: {plan.num_processes} in all{where}")
    for machine in plan.machines:
        print(f"\nmachine {machine.machine_rank}: {machine.host}   accelerator: {machine.accelerator}   "
              f"processes: {machine.num_processes}")
        print(f"  folder: {machine.workdir}")
        print(f"  python: {machine.python}")
        print("  command:\n    " + machine.command_line())
        _print_parts(machine.env, machine.accelerate_config, machine.notes, head="  ")
    if plan.notes:
        print("\nnotes:")
        for note in plan.notes:
            print(f"  {note}")


def _print_launch_plan(plan: LaunchPlan) -> None:
    print(f"accelerator: {plan.accelerator}   processes: {plan.num_processes}   machines: {plan.num_machines}")
    print("\ncommand:\n  " + plan.command_line())
    _print_parts(plan.env, plan.accelerate_config, plan.notes, head="\n")


def cmd_plan(args: argparse.Namespace) -> int:
    profile = _load(args.profile, args.set, notes=False)
    preview = for_profile(profile.data).plan(profile, args.runs_root)
    plan = preview.plan
    assert plan is not None  # a Slurm job's plan is `submit --dry-run`'s
    if args.json:
        print_json(plan.to_dict())
    else:
        print(f"profile: {profile.path}")
        if isinstance(plan, MachinesPlan):
            _print_machines_plan(plan)
        else:
            _print_launch_plan(plan)
    for problem in plan_problems(profile, preview.problems, args.set):
        print(problem, file=sys.stderr)
    return 1 if preview.errors else 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Every problem `run` would refuse for (backends.checks.validation: the app's check screen says the same)."""
    from tuitrain.backends.checks import validation

    say_when_reading_training_args()
    said = validation(resolve_profile_path(args.profile), args.set, args.runs_root, args.offline)
    for line in said.lines:
        print(line, file=sys.stderr)
    print(said.verdict, file=sys.stdout if said.ok else sys.stderr)
    return 0 if said.ok else 1


def cmd_doctor(args: argparse.Namespace) -> int:
    from tuitrain.backends.checks import doctor_summary, no_machines_to_check
    from tuitrain.backends.machines import doctor_report
    from tuitrain.launch.machines import has_machines

    profile = _load(args.profile, args.set)
    if not has_machines(profile.data):
        raise CliError(no_machines_to_check(profile.path))
    report, plan = doctor_report(profile, args.runs_root, _ssh_config(args), args.timeout)
    failed = [c for c in report.checks if c.ok is False]
    if args.json:
        print_json({"ok": report.ok, "seconds": round(report.seconds, 3), "checks": [c.to_dict() for c in report.checks]})
    else:
        for line in report.lines():
            print(line)
        print(f"\n{doctor_summary(len(plan.machines), report.seconds, len(failed))}")
    for problem in plan.errors:
        print(problem, file=sys.stderr)
    return 0 if report.ok and not plan.errors else 1
