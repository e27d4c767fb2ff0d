"""A run submitted to Slurm as a batch job: nothing stays running here; the job's agents start it on the nodes
Slurm gives it, in the same run directory (on the cluster's shared filesystem). Loaded only when used."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuitrain.backends.base import CANNOT_QUEUE, Check, Pause, Preview, Say, Settled, Started
from tuitrain.profile import Profile
from tuitrain.rundir.kind import RunKind, supervised_elsewhere
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.rundir.run import Run
from tuitrain.runs.start.new_run import Lineage, StartError
from tuitrain.slurm import state
from tuitrain.slurm.script import JobOptions
from tuitrain.slurm.submit import dry_run_script, job_notes, job_settings, load_job_profile, parent_options, submit

if TYPE_CHECKING:
    from tuitrain.runs.queue.entries import QueueRequest
    from tuitrain.runs.view.stacks import RankStacks


class SlurmBackend:
    kind: RunKind = "slurm"

    def __init__(self, options: JobOptions | None = None, python: str | None = None,
                 parent: RunRecord | None = None) -> None:
        self._options = options
        self.python = python  # tuitrain's Python on the nodes (default: this one)
        self.parent = parent  # the record of a run it carries: a resume of it is submitted with its options

    @property
    def options(self) -> JobOptions:
        if self._options is None:
            self._options = parent_options(self.parent) if self.parent is not None else JobOptions()
        return self._options

    def load(self, path: Path, overrides: Sequence[str] = ()) -> Profile:
        """The profile as the job runs it: main_process_ip is the job's first node; notes about what the job's
        agents set themselves are left out."""
        profile = load_job_profile(path, overrides)
        return dataclasses.replace(profile, notes=[n for n in profile.notes if str(n) in job_notes(profile)])

    def plan(self, profile: Profile, runs_root: Path, cwd: Path | None = None) -> Preview:
        _settings, resources = job_settings(profile)
        script = dry_run_script(profile, runs_root, self.options, python=self.python)
        return Preview(kind=self.kind,
                       summary=f"Slurm job · {resources.nodes} node(s) × {resources.processes_per_node} process(es)",
                       commands=[script], notes=job_notes(profile), problems=[])

    def check(self, profile: Profile, runs_root: Path, timeout: float, say: Say) -> Check:
        return Check()  # the nodes are Slurm's to give; each agent plans and checks its own

    def start(self, profile: Profile, runs_root: Path, cwd: Path | None = None, *, lineage: Lineage | None = None,
              queue: QueueRequest | None = None) -> Started:
        if queue is not None:
            raise StartError(f"{profile.path}: {CANNOT_QUEUE}")
        done = submit(profile, runs_root, self.options, python=self.python, cwd=cwd, lineage=lineage)
        return Started(done.paths, f"submitted run {done.paths.id} as Slurm job {done.job_id}", done.job_id)

    def world(self, profile: Profile) -> tuple[int, int]:
        resources = job_settings(profile)[1]
        return resources.total_processes, resources.nodes

    def stop(self, paths: RunPaths, now: bool, say: Say, pause: Pause | None = None,
             timeout: float | None = None) -> str:
        """The graceful stop (or `now`), then scancel if the job does not end (tuitrain.slurm.control.stop_job)."""
        from tuitrain.slurm.control import stop_job  # psutil: only when stopping

        record = stop_job(paths, now, timeout, say) if pause is None else stop_job(paths, now, timeout, say, pause=pause)
        run = Run(paths, record)
        if not run.final:
            return f"run {paths.id} {run.status}: the stop request stays"  # the caller gave up the wait
        error, status = run.error or "", run.status
        return f"run {run.name} " + (error if error.startswith(status) else f"{status}: {error}" if error else status)

    def settle(self, runs: Sequence[tuple[RunPaths, RunRecord]]) -> list[Settled]:
        """Every job that needs it asked at once (squeue, at most one sacct: tuitrain.slurm.state.query)."""
        jobs = state.query(record for _, record in runs)
        out: list[Settled] = []
        for paths, record in runs:
            job = jobs.get(state.job_id(record) or "")
            settled = state.settle(paths, record, job)
            out.append((settled, state.label(settled, job)))
        return out

    def job_words(self, record: RunRecord) -> str | None:
        return f"Slurm job {state.job_id(record)}"

    def machines(self, record: RunRecord) -> list[MachineEntry]:
        return []

    def take_stacks(self, paths: RunPaths, record: RunRecord) -> tuple[dict[int, RankStacks], list[str]]:
        """Each node's supervisor takes its own ranks' (they share the run directory); a job on one node whose
        supervisor runs here, this machine's."""
        from tuitrain.runs.view.stacks import nodes_stacks, take_stacks

        nodes = paths.nodes()
        if supervised_elsewhere(record) or len(nodes) > 1:
            return nodes_stacks(paths, nodes)
        return take_stacks(paths, record), []
