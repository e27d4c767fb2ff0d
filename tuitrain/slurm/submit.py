"""`tuitrain submit`: a run directory like any other, an sbatch script in it, and the job id in run.json.

Nothing is started here and nothing stays running: the job's agents (tuitrain.slurm.agent) start the run on the
nodes Slurm gives it, writing into this same run directory (on the cluster's shared filesystem). The run is
`planned` until an agent takes it up.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from tuitrain.profile import Profile, Settings, settings_with_defaults
from tuitrain.profile.processes import processes_set
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord, read_record, update_record
from tuitrain.rundir.run import Fields
from tuitrain.runs.start.new_run import NEW_RUN, Lineage, RunFiles, discard, new_run_dir, prepare_run
from tuitrain.slurm import commands
from tuitrain.slurm.script import FIRST_NODE, JobOptions, Resources, batch_script, job_resources

SCRIPT_NAME = "slurm.sbatch"


@dataclass(frozen=True)
class Submitted:
    paths: RunPaths
    job_id: str
    script: str


def job_settings(profile: Profile) -> tuple[Settings, Resources]:
    """The profile with defaults, and what each node of its job needs (ScriptError when Slurm cannot place it)."""
    settings = settings_with_defaults(profile)
    return settings, job_resources(settings, str(profile.path or "profile"), processes_set(profile.data))


def frozen_data(frozen: dict[str, Any], resources: Resources) -> dict[str, Any]:
    """The profile as the nodes read it (local paths already absolute): the processes per node written out, so
    every node plans the same world, whatever GPUs its machine shows."""
    data = copy.deepcopy(frozen)
    dist = data.setdefault("distributed", {})
    dist["num_processes"] = resources.processes_per_node
    dist["num_machines"] = resources.nodes
    return data


def dry_run_script(profile: Profile, runs_root: Path, options: JobOptions, python: str | None = None,
                   cwd: Path | None = None) -> str:
    """The script `submit` would write, for a run directory not made yet."""
    _settings, resources = job_settings(profile)
    return batch_script(run_dir=str(new_run_dir(runs_root.resolve())), run_id=NEW_RUN, profile_name=profile.name,
                        python=python or sys.executable, workdir=str(cwd or Path.cwd()), resources=resources,
                        options=options)


def submit(profile: Profile, runs_root: Path, options: JobOptions, *, python: str | None = None,
           cwd: Path | None = None, lineage: Lineage | None = None) -> Submitted:
    """The run directory as every backend prepares it (tuitrain.runs.start.new_run.prepare_run) with the batch script in
    it and a `planned` record, then sbatch; the run directory is removed again if sbatch refuses."""
    cwd = cwd or Path.cwd()
    settings, resources = job_settings(profile)
    batch_script(run_dir="/", run_id="-", profile_name=profile.name, python="python", workdir="/",
                 resources=resources, options=options)  # every option checked before anything is made

    def make_files(paths: RunPaths, frozen: dict[str, Any]) -> RunFiles:
        script = batch_script(run_dir=str(paths.root), run_id=paths.id, profile_name=profile.name,
                              python=python or sys.executable, workdir=str(cwd), resources=resources, options=options)
        return RunFiles(frozen=frozen_data(frozen, resources), files={SCRIPT_NAME: script}, fields={
            "status": "planned", "num_processes": resources.total_processes, "num_machines": resources.nodes,
            "accelerator": settings["hardware"]["accelerator"],
            "slurm": {"job_id": None, "script": SCRIPT_NAME, **options.to_dict(), "nodes": resources.nodes,
                      "gpus_per_node": resources.gpus_per_node}})

    paths = prepare_run(profile, settings, runs_root.resolve(), make_files, lineage=lineage, cwd=cwd)
    script_path = paths.root / SCRIPT_NAME
    try:
        job_id = commands.sbatch(script_path, cwd)
    except commands.SlurmError as exc:
        discard(paths)
        raise commands.SlurmError(f"{exc}{refusal_hint(str(exc), options, resources)}") from None
    except BaseException:
        discard(paths)
        raise
    slurm = Fields(read_record(paths)).slurm  # the job may already have started and written to it
    slurm["job_id"] = job_id
    update_record(paths, slurm=slurm)
    return Submitted(paths, job_id, script_path.read_text(encoding="utf-8"))


def refusal_hint(message: str, options: JobOptions, resources: Resources) -> str:
    """What the job asked for that sbatch's refusal is about, so the one line names it."""
    lower = message.lower()
    if "partition" in lower:
        return f" (--partition {options.partition or '(the default)'}; `sinfo -s` lists the partitions)"
    if "account" in lower:
        return f" (--account {options.account}; `sacctmgr show assoc user=$USER` lists yours)"
    if "time limit" in lower:
        return f" (--time {options.time})"
    if "node configuration" in lower or "more processors" in lower or "gres" in lower:
        each = (f"{resources.gpus_per_node} GPU(s)" if resources.gpus_per_node
                else f"{resources.cpus_per_task or 1} CPU(s)")
        return (f" (the job asks {resources.nodes} node(s) for {each} each, from distributed.num_processes = "
                f"{resources.processes_per_node} and distributed.num_machines = {resources.nodes}; `sinfo -N -l` "
                "shows the nodes)")
    return ""


def parent_options(record: RunRecord) -> JobOptions:
    """The options a resumed run is submitted with: its parent's."""
    return JobOptions.from_dict(Fields(record).slurm)


LEFT_TO_THE_JOB = ("distributed.main_process_ip", "distributed.main_process_port")  # the agents set them


def load_job_profile(path: Path, overrides: Sequence[str] = ()) -> Profile:
    """A profile as a job runs it: main_process_ip is left to the job (Slurm picks the nodes; the agents find
    the first one's address, and pick the port when none is set)."""
    from tuitrain.profile import load_profile

    return load_profile(path, [*overrides, f"distributed.main_process_ip={FIRST_NODE}"])


def job_notes(profile: Profile) -> list[str]:
    """The profile's notes, less those about what is left to the job."""
    return [str(note) for note in profile.notes if getattr(note, "key", "") not in LEFT_TO_THE_JOB]
