"""run, resume, plan, validate: from a profile to a started run (or to what would run)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from tuitrain.cli.errors import CliError
from tuitrain.cli.follow import follow_run
from tuitrain.cli.output import print_json
from tuitrain.hardware import detect_hardware
from tuitrain.launch import LaunchPlan, plan_launch
from tuitrain.profile import Profile, ProfileError, load_profile, profile_with_defaults, resolve_profile_path
from tuitrain.runs.catalog import find_run
from tuitrain.runs.checkpoints import Checkpoint, inspect_checkpoint, latest_complete, list_checkpoints
from tuitrain.runs.record import FINAL_STATUSES, read_record
from tuitrain.runs.start import Lineage, start_run


def _print_notes(profile: Profile) -> None:
    for note in profile.notes:
        print(note, file=sys.stderr)


def _load(ref: str, overrides: list[str]) -> Profile:
    profile = load_profile(resolve_profile_path(ref), overrides)
    _print_notes(profile)
    return profile


def _planner(settings: dict[str, Any], file: str):
    hardware = detect_hardware()
    return lambda run_dir: plan_launch(settings, hardware, Path(run_dir), file=file)


def cmd_run(args: argparse.Namespace) -> int:
    profile = _load(args.profile, args.set)
    settings = profile_with_defaults(profile)
    paths = start_run(profile, settings, _planner(settings, str(profile.path)), args.runs_root)
    if args.detach:
        print(paths.id)
        return 0
    return follow_run(paths)


def choose_checkpoint(output_dir: Path, ref: str) -> Checkpoint:
    if ref == "latest":
        found = latest_complete(output_dir)
        if found is None:
            incomplete = [c.path.name for c in list_checkpoints(output_dir)]
            extra = f" ({', '.join(incomplete)} incomplete)" if incomplete else ""
            raise CliError(f"no complete checkpoint in {output_dir}{extra}; nothing to resume from")
        return found
    candidate = Path(ref).expanduser()
    path = candidate if candidate.is_dir() else output_dir / ref
    if not path.is_dir():
        names = ", ".join(c.path.name for c in list_checkpoints(output_dir)) or "none"
        raise CliError(f"no checkpoint {ref!r} in {output_dir} (there: {names})")
    checkpoint = inspect_checkpoint(path)
    if not checkpoint.complete:
        raise CliError(f"{path} is incomplete (missing {', '.join(checkpoint.missing)}); pick another with --checkpoint")
    return checkpoint


def cmd_resume(args: argparse.Namespace) -> int:
    parent = find_run(args.runs_root, args.run)
    record = read_record(parent)
    if record["status"] not in FINAL_STATUSES:
        raise CliError(f"run {parent.id} is still {record['status']}; stop it first (`tuitrain stop {parent.id}`)")
    checkpoint = choose_checkpoint(Path(record["output_dir"]), args.checkpoint)
    profile = load_profile(parent.profile, args.set)
    _print_notes(profile)
    profile = Profile(path=Path(record.get("profile_path") or parent.profile), data=profile.data, notes=profile.notes)
    settings = profile_with_defaults(profile)
    planned = settings["distributed"]["num_processes"] * settings["distributed"]["num_machines"]
    if checkpoint.world_size and checkpoint.world_size != planned:
        raise CliError(
            f"{checkpoint.path.name} was written by {checkpoint.world_size} process(es) and this resume would run {planned}: "
            "the Trainer restores per-rank state and data order for the world that saved it. "
            f"Resume with --set distributed.num_processes={checkpoint.world_size}"
        )
    lineage = Lineage(parent=parent.id, checkpoint=checkpoint.path, output_dir=Path(record["output_dir"]))
    paths = start_run(profile, settings, _planner(settings, str(parent.profile)), args.runs_root, lineage=lineage)
    print(f"resuming {parent.id} from {checkpoint.path.name} (step {checkpoint.step}) as run {paths.id}", file=sys.stderr)
    if args.detach:
        print(paths.id)
        return 0
    return follow_run(paths)


def cmd_plan(args: argparse.Namespace) -> int:
    profile = _load(args.profile, args.set)
    settings = profile_with_defaults(profile)
    plan: LaunchPlan = _planner(settings, str(profile.path))(args.runs_root / "<new-run>")
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
        print("  " + yaml.safe_dump(plan.accelerate_config, sort_keys=True).rstrip().replace("\n", "\n  "))
        if plan.notes:
            print("\nnotes:")
            for note in plan.notes:
                print(f"  {note}")
        for problem in plan.problems:
            print(problem, file=sys.stderr)
    return 1 if plan.errors else 0


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        profile = load_profile(resolve_profile_path(args.profile))
    except ProfileError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        errors = sum(1 for p in exc.problems if p.severity == "error")
        print(f"{errors} error(s)", file=sys.stderr)
        return 1
    _print_notes(profile)
    print(f"{profile.path}: ok")
    return 0
