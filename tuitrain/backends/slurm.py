"""A run submitted to Slurm as a batch job: nothing stays running here; the job's agents start it on the nodes
Slurm gives it, in the same run directory (on the cluster's shared filesystem). Loaded only when used."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from tuitrain.backends.base import Check, Pause, Preview, Resumed, Say, Started, resume_note
from tuitrain.profile import Profile
from tuitrain.rundir.kind import RunKind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES
from tuitrain.slurm.script import JobOptions
from tuitrain.slurm.submit import dry_run_script, job_notes, job_settings, load_job_profile, resume_job, submit


class SlurmBackend:
    kind: RunKind = "slurm"

    def __init__(self, options: JobOptions | None = None, python: str | None = None) -> None:
        self.options = options or JobOptions()  # a resume takes its parent's instead
        self.python = python  # tuitrain's Python on the nodes (default: this one)

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

    def start(self, profile: Profile, runs_root: Path, cwd: Path | None = None) -> Started:
        done = submit(profile, runs_root, self.options, python=self.python, cwd=cwd)
        return Started(done.paths, f"submitted run {done.paths.id} as Slurm job {done.job_id}", done.job_id)

    def resume(self, parent: RunPaths, runs_root: Path, checkpoint: str | Path = "latest",
               overrides: Sequence[str] = (), cwd: Path | None = None) -> Resumed:
        done, chosen, profile = resume_job(parent, runs_root, str(checkpoint), overrides, python=self.python, cwd=cwd)
        return Resumed(done.paths, chosen, profile, resume_note(parent, chosen, done.paths, profile, done.job_id),
                       done.job_id)

    def stop(self, paths: RunPaths, now: bool, say: Say, pause: Pause | None = None,
             timeout: float | None = None) -> str:
        """The graceful stop (or `now`), then scancel if the job does not end (tuitrain.slurm.control.stop_job)."""
        from tuitrain.slurm.control import stop_job  # psutil: only when stopping

        record = stop_job(paths, now, timeout, say) if pause is None else stop_job(paths, now, timeout, say, pause=pause)
        if record.get("status") not in FINAL_STATUSES:
            return f"run {paths.id} {record.get('status')}: the stop request stays"  # the caller gave up the wait
        error, status = str(record.get("error") or ""), str(record.get("status"))
        return f"run {record['id']} " + (error if error.startswith(status) else f"{status}: {error}" if error else status)


