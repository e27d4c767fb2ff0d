"""A run on this machine: planned against its hardware, started under a detached supervisor (or queued for one)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuitrain.backends.base import Check, Pause, Preview, Say, Settled, Started
from tuitrain.hardware import Hardware
from tuitrain.launch.plan import queued_plan
from tuitrain.profile import Problem, Profile, Settings, load_profile
from tuitrain.rundir.kind import RunKind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.runs.catalog import RUNS_ROOT_FIX
from tuitrain.runs.start.from_profile import local_plan, local_settings, run_cwd
from tuitrain.runs.start.new_run import (
    Lineage,
    new_run_dir,
    output_dir_refusal,
    resolve_output_dir,
    runs_root_refusal,
    start_run,
)

if TYPE_CHECKING:
    from tuitrain.runs.queue.entries import QueueRequest  # psutil: loaded by a queued start only
    from tuitrain.runs.view.stacks import RankStacks


def queued_gpus(settings: Settings, hardware: Hardware, accelerator: str) -> tuple[int, ...]:
    """The physical GPUs (NVML indices) a run planned on `accelerator` takes: the ones its queue entry claims
    (none yet for `gpus = N`)."""
    from tuitrain.hardware.mapping import map_devices

    chosen = settings["hardware"]
    gpus = chosen["gpus"]
    if accelerator != "cuda" or isinstance(gpus, int):
        return ()  # `gpus = N`: any N, chosen by the queue at the start (runs.queue.rule)
    mapping = map_devices(hardware.gpus, gpus, chosen["device_order"])
    return tuple(dict.fromkeys(a.physical for a in mapping.assignments if a.physical is not None))


OUTPUT_DIR_FIX = "set run.output_dir to a folder this machine can write (e.g. --set run.output_dir=outputs/NAME)"


class Supervised:
    """What the backends of runs kept by a supervisor started from here share (this machine's, or the machines a
    profile lists): the profile as written, a stop through the run's control files (the home supervisor relays it),
    no scheduler (runs.liveness says whether the run lives)."""

    def load(self, path: Path, overrides: Sequence[str] = ()) -> Profile:
        return load_profile(path, overrides)

    def settle(self, runs: Sequence[tuple[RunPaths, RunRecord]]) -> list[Settled]:
        return [(record, None) for _, record in runs]

    def job_words(self, record: RunRecord) -> str | None:
        return None

    def stop(self, paths: RunPaths, now: bool, say: Say, pause: Pause | None = None,
             timeout: float | None = None) -> str:
        from tuitrain.rundir.record import read_record
        from tuitrain.rundir.run import Fields
        from tuitrain.runs.control import request  # psutil: not for `plan`

        if Fields(read_record(paths)).status == "queued":
            request(paths, "stop")  # its waiting supervisor takes any stop as leaving the queue
            return f"run {paths.id} was queued: it leaves the queue (cancelled; it never started)"
        if not now:
            request(paths, "stop")
            return f"asked run {paths.id} to save a checkpoint and stop at the next step end"
        if request(paths, "terminate") == "ended":
            return f"run {paths.id} had lost its supervisor; its processes are ended and it is recorded as killed"
        return f"ending every process of run {paths.id} now (killed if still there after a few seconds)"


class LocalBackend(Supervised):
    kind: RunKind = "local"

    def __init__(self, hardware: Hardware | None = None) -> None:
        self.hardware = hardware  # None: detected when first needed

    def plan(self, profile: Profile, runs_root: Path, cwd: Path | None = None) -> Preview:
        new_run = RunPaths(new_run_dir(runs_root))
        settings, notes, hardware = local_settings(profile, self.hardware)
        plan = local_plan(settings, new_run.root, str(profile.path or "profile"), hardware, notes)
        output_dir = None if settings["script"] else resolve_output_dir(settings, new_run, cwd or Path.cwd())
        problems = list(plan.problems)
        root_refusal = runs_root_refusal(runs_root)
        if root_refusal:  # said for the runs root, not again for the output folder it would hold
            problems.append(Problem(str(profile.path or "profile"), "", root_refusal, RUNS_ROOT_FIX))
        under_root = output_dir is not None and output_dir.is_relative_to(runs_root)
        refusal = (output_dir_refusal(output_dir) if output_dir is not None and not (root_refusal and under_root)
                   else None)
        if refusal:
            problems.append(Problem(str(profile.path or "profile"), "run.output_dir", refusal, OUTPUT_DIR_FIX))
        return Preview(kind=self.kind,
                       summary=f"{plan.accelerator} · {plan.num_processes} process(es) · {plan.num_machines} machine(s)",
                       commands=[plan.command_line()], notes=list(plan.notes), problems=problems, plan=plan)

    def check(self, profile: Profile, runs_root: Path, timeout: float, say: Say) -> Check:
        return Check()  # this machine's checks are the plan's (hardware.preflight)

    def start(self, profile: Profile, runs_root: Path, cwd: Path | None = None, *, lineage: Lineage | None = None,
              queue: QueueRequest | None = None) -> Started:
        """Planned against this machine (a resume's plan tells a script its checkpoint; the engine reads run.json),
        then started; with `queue`, created queued, its GPUs claimed by `queued_gpus` (tuitrain.runs.queue.rule)."""
        settings, notes, hardware = local_settings(profile, self.hardware)
        plan = local_plan(settings, new_run_dir(runs_root), str(profile.path), hardware, notes,
                          resume_from=lineage.checkpoint if lineage is not None else None)
        if queue is not None:
            queue = dataclasses.replace(queue, gpus_for=lambda accelerator: queued_gpus(settings, hardware, accelerator))
            plan = queued_plan(plan)
        paths = start_run(profile, settings, plan, runs_root, lineage=lineage, cwd=run_cwd(settings, cwd), queue=queue)
        if queue is not None:
            return Started(paths, f"queued run {paths.id}: it starts by itself when its GPUs are free; its monitor "
                                  "says what it waits for", queued=True)
        return Started(paths)

    def world(self, profile: Profile) -> tuple[int, int]:
        dist = local_settings(profile, self.hardware)[0]["distributed"]
        return dist["num_processes"] * dist["num_machines"], dist["num_machines"]

    def machines(self, record: RunRecord) -> list[MachineEntry]:
        return []

    def take_stacks(self, paths: RunPaths, record: RunRecord) -> tuple[dict[int, RankStacks], list[str]]:
        from tuitrain.runs.view.stacks import take_stacks

        return take_stacks(paths, record), []
