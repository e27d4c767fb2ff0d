"""run, resume, plan, validate: from a profile to a started run (or to what would run)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Mapping, Sequence

from tuitrain.backends import Backend, for_profile, for_run
from tuitrain.backends.queueing import profile_queues
from tuitrain.cli.errors import CliError
from tuitrain.cli.output import print_json
from tuitrain.launch import LaunchPlan
from tuitrain.launch.machines import MachinesPlan
from tuitrain.profile import Profile, load_profile, resolve_profile_path
from tuitrain.profile.load import notes_not_said_again, plan_problems
from tuitrain.profile.training_args import report_reading_to
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


def _check_machines(backend: Backend, profile: Profile, args: argparse.Namespace) -> None:
    """The backend's checks of the machines before anything starts (the doctor's, for several machines), unless
    --no-doctor."""
    if args.no_doctor:
        return
    check = backend.check(profile, args.runs_root, 20.0, lambda line: print(f"tuitrain: {line}", file=sys.stderr))
    if check.failed:
        for line in check.lines:
            print(line, file=sys.stderr)
        raise CliError(f"{profile.path}: {len(check.failed)} machine check(s) failed; nothing was "
                       "started (fix them, or pass --no-doctor to start anyway)")


def _refuse_what_validate_refuses(backend: Backend, profile: Profile, args: argparse.Namespace) -> None:
    """The profile's notes the plan does not say again, then the plan's errors in validate's lines (the same plan,
    marked the same way), before anything starts; the start plans again and still refuses what changed in between
    (a plan takes milliseconds). A run that starts says the plan's warnings, one line each (a GPU another process
    computes on: the run starts beside it, as `python train.py` would; `--queue` waits for it)."""
    preview = backend.plan(profile, args.runs_root)
    notes = notes_not_said_again(profile, preview.problems)
    for note in notes:
        print(note, file=sys.stderr)
    said = plan_problems(profile, preview.problems, args.set)[len(notes):]
    if preview.errors:
        raise CliError("\n".join(str(p) for p in said if p.is_error))
    for problem in said:
        if problem.severity == "warning":
            print(problem, file=sys.stderr)


def _queued_start(backend: Backend, profile: Profile, args: argparse.Namespace, queue: Any) -> int:
    """`run --queue/--after/--after-ok`: the run is created `queued` and its id printed; its supervisor starts it."""
    from tuitrain.backends.queueing import queueing_backend

    paths = queueing_backend(backend, profile.path).queue(profile, args.runs_root, queue)
    print(paths.id)
    print(f"queued run {paths.id}; `tuitrain queue` shows what it waits for, `tuitrain cancel {paths.id}` drops it",
          file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from tuitrain.notify import read_notify_config
    from tuitrain.runs.queue.options import options_refusal, queue_options, queue_request

    if getattr(args, "host", None):  # a profile of this machine, started on a workstation of the settings
        from tuitrain.cli.workstations import cmd_run_there

        return cmd_run_there(args)
    options = queue_options(args)
    refusal = options_refusal(options)
    if refusal:
        raise CliError(refusal)
    queue = queue_request(args.runs_root, options)
    read_notify_config()  # a bad [notify] is refused before anything starts (ProfileError: file, key, fix)
    if options.sweep:
        from tuitrain.cli.sweeping import cmd_sweep

        return cmd_sweep(args)
    profile = _load(args.profile, args.set, notes=False)
    backend = for_profile(profile.data, ssh_config=_ssh_config(args))
    if queue is None and profile_queues(profile.data):  # [run] queue = true: as --queue
        from tuitrain.runs.queue.entries import QueueRequest

        queue = QueueRequest()
    if queue is not None:
        _print_notes(profile)
        return _queued_start(backend, profile, args, queue)
    _refuse_what_validate_refuses(backend, profile, args)
    _check_machines(backend, profile, args)
    paths = backend.start(profile, args.runs_root).paths
    if args.detach:
        print(paths.id)
        return 0
    if getattr(args, "app", False) and sys.stdin.isatty() and sys.stdout.isatty():
        from tuitrain.tui.app import run_app

        run_app(runs_root=args.runs_root, open_run=paths.root)
        print(f"run {paths.id} goes on; `tuitrain status {paths.id}` or `tuitrain` shows it", file=sys.stderr)
        return 0
    from tuitrain.cli.follow import (
        follow_run,  # psutil and the run summary: only when following
    )

    return follow_run(paths)


def cmd_resume(args: argparse.Namespace) -> int:
    from tuitrain.runs.catalog import load_record

    parent = find_run(args.runs_root, args.run)
    backend = for_run(load_record(parent), ssh_config=_ssh_config(args))
    say_when_reading_training_args()
    resumed = backend.resume(parent, args.runs_root, args.checkpoint, args.set)
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
    if args.json:
        print_json(preview.plan.to_dict())
    else:
        print(f"profile: {profile.path}")
        if isinstance(preview.plan, MachinesPlan):
            _print_machines_plan(preview.plan)
        else:
            _print_launch_plan(preview.plan)
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

    profile = _load(args.profile, args.set)
    if for_profile(profile.data).kind != "machines":
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
