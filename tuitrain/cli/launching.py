"""run, resume, plan, validate: from a profile to a started run (or to what would run)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tuitrain.cli.errors import CliError
from tuitrain.cli.output import print_json
from tuitrain.launch import LaunchPlan
from tuitrain.profile import Profile, ProfileError, load_profile, resolve_profile_path
from tuitrain.profile.training_args import report_reading_to
from tuitrain.runs.catalog import find_run
from tuitrain.runs.relaunch import ResumeError, launch, plan_profile, resume
from tuitrain.yaml_text import dump as dump_yaml


def say_when_reading_training_args() -> None:
    """The first check after installing transformers reads its TrainingArguments (seconds): say so on stderr."""
    report_reading_to(lambda line: print(f"tuitrain: {line}", file=sys.stderr, flush=True))


def _print_notes(profile: Profile) -> None:
    for note in profile.notes:
        print(note, file=sys.stderr)


def _load(ref: str, overrides: list[str]) -> Profile:
    say_when_reading_training_args()
    profile = load_profile(resolve_profile_path(ref), overrides)
    _print_notes(profile)
    return profile


def _ssh_config(args: argparse.Namespace) -> str | None:
    from pathlib import Path

    return str(Path(args.ssh_config).expanduser().resolve()) if getattr(args, "ssh_config", None) else None


def _check_machines(profile: Profile, args: argparse.Namespace) -> None:
    """A multi-machine profile is checked by the doctor before anything starts (unless --no-doctor)."""
    from tuitrain.launch.machines import has_machines

    if not has_machines(profile.data) or args.no_doctor:
        return
    print("tuitrain: checking the machines first (`tuitrain doctor`; --no-doctor skips this)", file=sys.stderr)
    report, plan = _doctor_report(profile, args, timeout=20.0)
    failed = [check for check in report.checks if check.ok is False]
    if failed or plan.errors:
        for line in report.lines():
            print(line, file=sys.stderr)
        for problem in plan.errors:
            print(problem, file=sys.stderr)
        raise CliError(f"{profile.path}: {len(failed) + len(plan.errors)} machine check(s) failed; nothing was "
                       "started (fix them, or pass --no-doctor to start anyway)")


def cmd_run(args: argparse.Namespace) -> int:
    profile = _load(args.profile, args.set)
    _check_machines(profile, args)
    paths = launch(profile, args.runs_root, ssh_config=_ssh_config(args))
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
    parent = find_run(args.runs_root, args.run)
    if _submitted(parent):
        from tuitrain.cli.submit import resume_slurm

        return resume_slurm(args, parent)
    say_when_reading_training_args()
    try:
        paths, checkpoint, profile = resume(parent, args.runs_root, args.checkpoint, args.set,
                                            ssh_config=_ssh_config(args))
    except ResumeError as exc:
        raise CliError(str(exc)) from None
    _print_notes(profile)
    print(f"resuming {parent.id} from {checkpoint.path.name} (step {checkpoint.step}) as run {paths.id}", file=sys.stderr)
    if args.detach:
        print(paths.id)
        return 0
    from tuitrain.cli.follow import (
        follow_run,  # psutil and the run summary: only when following
    )

    return follow_run(paths)


def _submitted(paths: Any) -> bool:
    """A run submitted to Slurm (`tuitrain submit`): resumed by submitting again."""
    from tuitrain.runs.catalog import load_record

    return bool(load_record(paths).get("slurm"))


def _print_machines_plan(profile: Profile, args: argparse.Namespace) -> int:
    from tuitrain.launch.machines import plan_machines
    from tuitrain.profile import profile_with_defaults

    processes_set = "num_processes" in (profile.data.get("distributed") or {})
    plan = plan_machines(profile_with_defaults(profile), args.runs_root / "<new-run>", str(profile.path),
                         processes_set=processes_set)
    if args.json:
        print_json(plan.to_dict())
    else:
        print(f"profile: {profile.path}")
        where = f"   main: {plan.main_process_ip}:{plan.main_process_port}" if plan.main_process_ip else ""
        print(f"machines: {plan.num_machines}   processes: {plan.num_processes} in all{where}")
        for machine in plan.machines:
            print(f"\nmachine {machine.machine_rank}: {machine.host}   accelerator: {machine.accelerator}   "
                  f"processes: {machine.num_processes}")
            print(f"  folder: {machine.workdir}")
            print(f"  python: {machine.python}")
            print("  command:\n    " + machine.command_line())
            print("  environment:")
            for key, value in sorted(machine.env.items()):
                print(f"    {key}={value}")
            print("  accelerate config (accelerate.yaml):")
            print("    " + dump_yaml(machine.accelerate_config).rstrip().replace("\n", "\n    "))
            if machine.notes:
                print("  notes:")
                for note in machine.notes:
                    print(f"    {note}")
        if plan.notes:
            print("\nnotes:")
            for note in plan.notes:
                print(f"  {note}")
    for problem in plan.problems:
        print(problem, file=sys.stderr)
    return 1 if plan.errors else 0


def cmd_plan(args: argparse.Namespace) -> int:
    profile = _load(args.profile, args.set)
    from tuitrain.launch.machines import has_machines

    if has_machines(profile.data):
        return _print_machines_plan(profile, args)
    plan: LaunchPlan = plan_profile(profile, args.runs_root / "<new-run>")
    if args.json:
        print_json(plan.to_dict())
    else:
        print(f"profile: {profile.path}")
        print(f"accelerator: {plan.accelerator}   processes: {plan.num_processes}   machines: {plan.num_machines}")
        print("\ncommand:\n  " + plan.command_line())
        print("\nenvironment:")
        for key, value in sorted(plan.env.items()):
            print(f"  {key}={value}")
        print("\naccelerate config (accelerate.yaml):")
        print("  " + dump_yaml(plan.accelerate_config).rstrip().replace("\n", "\n  "))
        if plan.notes:
            print("\nnotes:")
            for note in plan.notes:
                print(f"  {note}")
        for problem in plan.problems:
            print(problem, file=sys.stderr)
    return 1 if plan.errors else 0


def cmd_validate(args: argparse.Namespace) -> int:
    say_when_reading_training_args()
    try:
        profile = load_profile(resolve_profile_path(args.profile), args.set)
    except ProfileError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        errors = sum(1 for p in exc.problems if p.severity == "error")
        print(f"{errors} error(s)", file=sys.stderr)
        return 1
    _print_notes(profile)
    print(f"{profile.path}: ok")
    return 0


def _profile_paths(profile: Profile) -> list[tuple[str, str]]:
    """The profile's local paths a rank opens, as (key, absolute path): data files, a local model or tokenizer
    folder, a DeepSpeed JSON. A Hub id (no such path here, not written as a path) is not one."""
    from pathlib import Path

    base = Path(profile.path).expanduser().resolve().parent if profile.path else Path.cwd()
    data = profile.data
    out: list[tuple[str, str]] = []

    def add(key: str, raw: object, hub_like: bool = False) -> None:
        if not isinstance(raw, str) or not raw:
            return
        path = Path(raw).expanduser()
        looks_local = raw.startswith(("/", "./", "../", "~")) or (base / path).exists()
        if hub_like and not looks_local:
            return  # a Hub id such as "bert-base-uncased"
        out.append((key, str(path if path.is_absolute() else (base / path).resolve())))

    for leaf in ("train_file", "validation_file"):
        add(f"data.{leaf}", (data.get("data") or {}).get(leaf))
    for leaf in ("name_or_path", "tokenizer"):
        add(f"model.{leaf}", (data.get("model") or {}).get(leaf), hub_like=True)
    dist = data.get("distributed") or {}
    if dist.get("strategy") == "deepspeed":
        add("distributed.deepspeed.config_file", (dist.get("deepspeed") or {}).get("config_file"))
    return out


def _machine_gpus(machine: Any) -> tuple[int, ...] | None:
    """The NVML indices a machine's plan uses: () for every GPU it has, None when it runs no CUDA ranks."""
    if machine.accelerator != "cuda":
        return None
    listed = machine.env.get("CUDA_VISIBLE_DEVICES", "")
    return tuple(int(g) for g in listed.split(",") if g.strip().isdigit())


def _doctor_report(profile: Profile, args: argparse.Namespace, timeout: float) -> tuple[Any, Any]:
    """(the doctor's report, the machines plan) of a multi-machine profile."""
    from tuitrain.launch.machines import plan_machines
    from tuitrain.profile import profile_with_defaults
    from tuitrain.remote.doctor import MachineSpec, doctor
    from tuitrain.remote.ssh import SshOptions

    plan = plan_machines(profile_with_defaults(profile), args.runs_root / "<new-run>", str(profile.path))
    paths = tuple(_profile_paths(profile))
    specs = [MachineSpec(host=m.host, rank=m.machine_rank, python=m.python, workdir=m.workdir,
                         interface=m.network_interface, paths=paths,
                         address=plan.main_process_ip if m.machine_rank == 0 else None,
                         port=plan.main_process_port if m.machine_rank == 0 else None,
                         gpus=_machine_gpus(m))
               for m in plan.machines]
    # connecting gets part of each machine's time, so an unreachable machine reads as such, not as a timeout
    options = SshOptions(config=_ssh_config(args), connect_timeout=max(1, min(10, int(timeout * 0.6))))
    return doctor(specs, options, timeout=timeout), plan


def cmd_doctor(args: argparse.Namespace) -> int:
    from tuitrain.launch.machines import has_machines

    profile = _load(args.profile, args.set)
    if not has_machines(profile.data):
        raise CliError(f"{profile.path}: no [[distributed.machines]] to check; the doctor checks the machines of a "
                       "multi-machine profile (this machine's checks run with `tuitrain plan`)")
    report, plan = _doctor_report(profile, args, args.timeout)
    failed = [c for c in report.checks if c.ok is False]
    if args.json:
        print_json({"ok": report.ok, "seconds": round(report.seconds, 3), "checks": [c.to_dict() for c in report.checks]})
    else:
        for line in report.lines():
            print(line)
        summary = "all checks passed" if report.ok else f"{len(failed)} check(s) failed"
        print(f"\n{len(plan.machines)} machine(s) checked in {report.seconds:.1f} s: {summary}")
    for problem in plan.errors:
        print(problem, file=sys.stderr)
    return 0 if report.ok and not plan.errors else 1
