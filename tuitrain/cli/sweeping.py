"""`tuitrain run PROFILE --sweep KEY=V1,V2 [--sweep KEY2=…] [--max-parallel N]` (issue 22): one queued run per
combination of the values, each named for what differs, at most N of them running at once (Slurm's `--array
…%N`, gflow's arrays), each with its own curves and checkpoints. Argument adders at import; the work lazily."""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence

from tuitrain.cli.errors import CliError

SWEEP_FORM = "write --sweep section.key=V1,V2,… (e.g. --sweep training.learning_rate=1e-5,3e-5)"
MAX_SWEEP_RUNS = 256  # more in one sweep is a mistake more often than a plan: split it
AT_ONCE_WITHOUT_LIMIT = 8  # a larger sweep names --max-parallel: on the CPU, every run of it would start at once


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,…",
                   help="queue one run per value (several --sweep: every combination), each named for its values")
    p.add_argument("--max-parallel", type=int, default=None, metavar="N",
                   help="with --sweep: at most N of its runs at once (each waits for the run N places before it)")


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its `--set` overrides and the words that name it (`learning_rate=3e-05`)."""

    sets: tuple[str, ...]
    label: str


def sweep_points(specs: Sequence[str]) -> list[SweepPoint]:
    """Every combination of the values of `specs` (`section.key=V1,V2`), in the order written; CliError for a
    spec without `=`, a key without a section, a key swept twice, or fewer than two values in all."""
    axes: list[tuple[str, list[str]]] = []
    for spec in specs:
        key, sep, values_text = spec.partition("=")
        key = key.strip()
        values = [v.strip() for v in values_text.split(",")]
        if not sep or "." not in key or not all(key.split(".")):
            raise CliError(f"--sweep {spec!r}: needs section.key=values; {SWEEP_FORM}")
        if not all(values):
            raise CliError(f"--sweep {spec!r}: an empty value; {SWEEP_FORM}")
        if any(key == seen for seen, _ in axes):
            raise CliError(f"--sweep {key}: given twice; list all its values in one --sweep")
        axes.append((key, list(dict.fromkeys(values))))
    points = [SweepPoint(tuple(f"{key}={value}" for (key, _), value in zip(axes, combo, strict=True)),
                         " ".join(f"{key.rsplit('.', 1)[-1]}={value}" for (key, _), value in zip(axes, combo, strict=True)))
              for combo in itertools.product(*(values for _, values in axes))]
    if len(points) < 2:
        raise CliError(f"--sweep gives {len(points)} run; a sweep needs two values or more ({SWEEP_FORM}), "
                       "or use --set for one")
    if len(points) > MAX_SWEEP_RUNS:
        raise CliError(f"--sweep gives {len(points)} runs, more than {MAX_SWEEP_RUNS} in one sweep; split it into "
                       "several sweeps (or fewer values)")
    return points


def sweep_refusal(points: Sequence[SweepPoint], sets: Sequence[str], max_parallel: int | None) -> str | None:
    """Why a sweep of these runs is not queued: a key both swept and --set, or a large sweep with no --max-parallel
    (every run whose GPUs are free starts at once: on the CPU, all of them, each using every core)."""
    swept = {s.split("=", 1)[0] for s in points[0].sets}
    both = sorted(swept & {s.split("=", 1)[0].strip() for s in sets})
    if both:
        return f"--sweep {both[0]} and --set {both[0]}=…: both set {both[0]}; give its values in --sweep only"
    if max_parallel is None and len(points) > AT_ONCE_WITHOUT_LIMIT:
        return (f"--sweep gives {len(points)} runs and, without --max-parallel, every one whose GPUs are free starts "
                f"at once (on the CPU: all {len(points)}, each using every core); add --max-parallel N "
                f"(e.g. --max-parallel 1 on the CPU, or the number of GPUs)")
    return None


def sweep_name(profile_name: str, when: float) -> str:
    """A sweep's id: when it was queued and what it sweeps (`20261126-0805-demo`), as run ids read."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(when)) + "-" + "-".join(profile_name.split())


def throttle(index: int, max_parallel: int | None) -> int | None:
    """The sweep run the `index`-th waits for, so that at most `max_parallel` run at once (None: no wait)."""
    if max_parallel is None or index < max_parallel:
        return None
    return index - max_parallel


def cmd_sweep(args: argparse.Namespace) -> int:
    """Every run of the sweep is loaded and checked first: a refused value queues nothing."""
    import dataclasses

    from tuitrain.backends.start import Choices, start_profile
    from tuitrain.cli.queueing import queue_request
    from tuitrain.profile import load_profile, resolve_profile_path
    from tuitrain.runs.queue.entries import QueueRequest

    if args.max_parallel is not None and args.max_parallel < 1:
        raise CliError(f"--max-parallel {args.max_parallel}: must be 1 or more (how many runs of the sweep at once)")
    points = sweep_points(args.sweep)
    refusal = sweep_refusal(points, args.set, args.max_parallel)
    if refusal:
        raise CliError(refusal)
    path = resolve_profile_path(args.profile)
    base = load_profile(path, args.set)
    swept = {s.split("=", 1)[0] for s in points[0].sets}
    run_table: Any = base.data.get("run")
    if isinstance(run_table, dict) and run_table.get("output_dir") and "run.output_dir" not in swept:
        raise CliError(f"{path}: run.output_dir = {run_table['output_dir']!r}: every run of a sweep needs its own "
                       "output folder; remove run.output_dir (each run writes under its run directory) or sweep it")
    profiles = [load_profile(path, [*args.set, *point.sets, f"run.name={base.name} {point.label}"])
                for point in points]
    request = queue_request(args) or QueueRequest()
    sweep_id = sweep_name(base.name, time.time())
    started: list[Any] = []
    try:  # queued whole or not at all: each run is held until the last is queued
        for index, (profile, point) in enumerate(zip(profiles, points, strict=True)):
            waits = throttle(index, args.max_parallel)
            after = (*request.after, started[waits]) if waits is not None else request.after
            sweep = {"id": sweep_id, "index": index + 1, "of": len(points), "label": point.label}
            queue = dataclasses.replace(request, after=after, sweep=sweep, hold=True)
            started.append(start_profile(profile, args.runs_root, Choices(queue=queue)).paths)
    except BaseException:
        let_go(started, drop=True)
        raise
    let_go(started, drop=False)
    for paths in started:
        print(paths.id, flush=True)
    limit = f", at most {args.max_parallel} at once" if args.max_parallel else ""
    print(f"queued {len(started)} runs of a sweep over {', '.join(sorted(swept))}{limit}; `tuitrain queue` shows "
          "what each waits for", file=sys.stderr)
    return 0


def let_go(held: Sequence[Any], drop: bool) -> None:
    """Release the held runs of a sweep (all queued), or have each leave the queue (the sweep was cut short)."""
    from tuitrain.rundir.layout import CONTROL_DROP_SWEEP, CONTROL_HOLD

    for paths in held:
        if drop:
            paths.control_request(CONTROL_DROP_SWEEP).touch()
        paths.control_request(CONTROL_HOLD).unlink(missing_ok=True)
    if drop and held:
        print(f"the sweep was cut short: the {len(held)} run(s) it had queued leave the queue (cancelled, never "
              "started)", file=sys.stderr)
