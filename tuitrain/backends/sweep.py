"""A sweep: one queued run per combination of the values of `--sweep KEY=V1,V2 [--sweep KEY2=…]`, each
named for what differs, at most `--max-parallel` N of them running at once (Slurm's `--array …%N`, gflow's arrays),
each with its own curves and checkpoints; queued whole or not at all. The one set of rules for `tuitrain run
--sweep` and the app's launch dialog."""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from tuitrain.runs.queue.options import QueueOptions, QueueOptionsError, queue_request

if TYPE_CHECKING:
    from tuitrain.rundir.layout import RunPaths

SWEEP_FORM = "write --sweep section.key=V1,V2,… (e.g. --sweep training.learning_rate=1e-5,3e-5)"
MAX_SWEEP_RUNS = 256  # more in one sweep is a mistake more often than a plan: split it
AT_ONCE_WITHOUT_LIMIT = 8  # a larger sweep names --max-parallel: on the CPU, every run of it would start at once


class SweepError(QueueOptionsError):
    """A sweep that is not queued, in one line that says the fix."""


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its `--set` overrides and the words that name it (`learning_rate=3e-05`)."""

    sets: tuple[str, ...]
    label: str


def sweep_points(specs: Sequence[str]) -> list[SweepPoint]:
    """Every combination of the values of `specs` (`section.key=V1,V2`), in the order written; SweepError for a
    spec without `=`, a key without a section, a key swept twice, or fewer than two values in all."""
    axes: list[tuple[str, list[str]]] = []
    for spec in specs:
        key, sep, values_text = spec.partition("=")
        key = key.strip()
        values = [v.strip() for v in values_text.split(",")]
        if not sep or "." not in key or not all(key.split(".")):
            raise SweepError(f"--sweep {spec!r}: needs section.key=values; {SWEEP_FORM}")
        if not all(values):
            raise SweepError(f"--sweep {spec!r}: an empty value; {SWEEP_FORM}")
        if any(key == seen for seen, _ in axes):
            raise SweepError(f"--sweep {key}: given twice; list all its values in one --sweep")
        axes.append((key, list(dict.fromkeys(values))))
    points = [SweepPoint(tuple(f"{key}={value}" for (key, _), value in zip(axes, combo, strict=True)),
                         " ".join(f"{key.rsplit('.', 1)[-1]}={value}" for (key, _), value in zip(axes, combo, strict=True)))
              for combo in itertools.product(*(values for _, values in axes))]
    if len(points) < 2:
        raise SweepError(f"--sweep gives {len(points)} run; a sweep needs two values or more ({SWEEP_FORM}), "
                         "or use --set for one")
    if len(points) > MAX_SWEEP_RUNS:
        raise SweepError(f"--sweep gives {len(points)} runs, more than {MAX_SWEEP_RUNS} in one sweep; split it into "
                         "several sweeps (or fewer values)")
    return points


def swept_keys(points: Sequence[SweepPoint]) -> list[str]:
    """The keys a sweep sets, sorted."""
    return sorted({s.split("=", 1)[0] for s in points[0].sets})


def sweep_refusal(points: Sequence[SweepPoint], sets: Sequence[str], max_parallel: int | None) -> str | None:
    """Why a sweep of these runs is not queued: a key both swept and --set, or a large sweep with no --max-parallel
    (every run whose GPUs are free starts at once: on the CPU, all of them, each using every core)."""
    both = sorted(set(swept_keys(points)) & {s.split("=", 1)[0].strip() for s in sets})
    if both:
        return f"--sweep {both[0]} and --set {both[0]}=…: both set {both[0]}; give its values in --sweep only"
    if max_parallel is None and len(points) > AT_ONCE_WITHOUT_LIMIT:
        return (f"--sweep gives {len(points)} runs and, without --max-parallel, every one whose GPUs are free starts "
                f"at once (on the CPU: all {len(points)}, each using every core); add --max-parallel N "
                f"(e.g. --max-parallel 1 on the CPU, or the number of GPUs)")
    return None


def checked_points(options: QueueOptions, sets: Sequence[str]) -> list[SweepPoint]:
    """The runs of the options' sweep, or SweepError saying why it is not queued (checked before any file is read)."""
    points = sweep_points(options.sweep)
    refusal = sweep_refusal(points, sets, options.max_parallel)
    if refusal:
        raise SweepError(refusal)
    return points


def sweep_summary(points: Sequence[SweepPoint], max_parallel: int | None) -> str:
    """What a sweep queues, in one line: `3 runs over training.learning_rate (…), at most 1 at once`."""
    labels = [p.label for p in points]
    shown = ", ".join(labels) if len(labels) <= 3 else f"{labels[0]}, …, {labels[-1]}"
    limit = f", at most {max_parallel} at once" if max_parallel else ""
    return f"{len(points)} runs of a sweep over {', '.join(swept_keys(points))} ({shown}){limit}"


def sweep_name(profile_name: str, when: float) -> str:
    """A sweep's id: when it was queued and what it sweeps (`20261126-0805-demo`), as run ids read."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(when)) + "-" + "-".join(profile_name.split())


def throttle(index: int, max_parallel: int | None) -> int | None:
    """The sweep run the `index`-th waits for, so that at most `max_parallel` run at once (None: no wait)."""
    if max_parallel is None or index < max_parallel:
        return None
    return index - max_parallel


def queue_sweep(path: Path, sets: Sequence[str], options: QueueOptions, runs_root: Path,
                cwd: Path | None = None, say: Callable[[str], None] = lambda line: None) -> list[RunPaths]:
    """Every run of the sweep loaded and checked first (a refused value queues nothing), then queued held, each
    after the runs of --after/--after-ok (and the run `max_parallel` places before it), and let go once the last is
    in the queue. Cut short (an error, Ctrl-C), the runs queued so far leave the queue, never started (said)."""
    from tuitrain.backends.start import Choices, start_profile
    from tuitrain.profile import load_profile
    from tuitrain.runs.queue.entries import QueueRequest

    points = checked_points(options, sets)
    base = load_profile(path, sets)
    swept = swept_keys(points)
    run_table = base.data.get("run")
    if isinstance(run_table, dict) and run_table.get("output_dir") and "run.output_dir" not in swept:
        raise SweepError(f"{path}: run.output_dir = {run_table['output_dir']!r}: every run of a sweep needs its own "
                         "output folder; remove run.output_dir (each run writes under its run directory) or sweep it")
    profiles = [load_profile(path, [*sets, *point.sets, f"run.name={base.name} {point.label}"]) for point in points]
    request = queue_request(runs_root, options) or QueueRequest()
    sweep_id = sweep_name(base.name, time.time())
    queued: list[RunPaths] = []
    try:  # queued whole or not at all: each run is held until the last is queued
        for index, (profile, point) in enumerate(zip(profiles, points, strict=True)):
            waits = throttle(index, options.max_parallel)
            after = (*request.after, queued[waits]) if waits is not None else request.after
            sweep = {"id": sweep_id, "index": index + 1, "of": len(points), "label": point.label}
            queue = dataclasses.replace(request, after=after, sweep=sweep, hold=True)
            queued.append(start_profile(profile, runs_root, Choices(queue=queue), cwd=cwd).paths)
    except BaseException:
        let_go(queued, drop=True)
        if queued:
            say(f"the sweep was cut short: the {len(queued)} run(s) it had queued leave the queue (cancelled, never "
                "started)")
        raise
    let_go(queued, drop=False)
    return queued


def let_go(held: Sequence[RunPaths], drop: bool) -> None:
    """Release the held runs of a sweep (all queued), or have each leave the queue (the sweep was cut short)."""
    from tuitrain.rundir.layout import CONTROL_DROP_SWEEP, CONTROL_HOLD

    for paths in held:
        if drop:
            paths.control_request(CONTROL_DROP_SWEEP).touch()
        paths.control_request(CONTROL_HOLD).unlink(missing_ok=True)
