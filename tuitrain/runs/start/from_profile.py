"""What the backends start from: a profile planned on this machine or on the machines it lists, and the checks every
resume makes (the parent has ended, the checkpoint is complete, the world and the restored settings match).
The one start and the one resume that use them: tuitrain.backends.start. Errors are `ProfileError`, `StartError`
or `ResumeError`, each with a message a person can act on.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence, cast

from tuitrain.errors import TuitrainError
from tuitrain.hardware import Hardware, detect_hardware
from tuitrain.launch import LaunchPlan, plan_launch
from tuitrain.launch.machines import MachinesPlan, plan_machines
from tuitrain.launch.script import resolved_script, script_settings
from tuitrain.profile import Profile, Settings, load_profile, settings_with_defaults
from tuitrain.profile.processes import processes_per_machine, processes_set
from tuitrain.rundir.checkpoints import Checkpoint, inspect_checkpoint, latest_complete, run_checkpoints
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord, has_ended
from tuitrain.rundir.run import Fields
from tuitrain.runs.run_owner import others_run_refusal
from tuitrain.runs.start import resume_rule


class ResumeError(TuitrainError):
    """Why a run cannot be resumed from the checkpoint asked for."""


def local_plan(settings: Settings, run_dir: Path, file: str, hardware: Hardware | None = None,
               notes: Sequence[str] = (), resume_from: Path | None = None) -> LaunchPlan:
    """This machine's plan of `settings` against `run_dir` (for a start: `new_run_dir(runs_root)`, the run
    directory before it exists), with `notes` (what `launch_settings` chose) first among the plan's."""
    hardware = hardware if hardware is not None else detect_hardware()
    if any(g.processes for g in hardware.gpus):  # the preflight names who holds a GPU: a run's rank, or a stranger
        from tuitrain.runs.view.owners import with_owners  # psutil: only where a GPU holds a process

        hardware = dataclasses.replace(hardware, gpus=with_owners(hardware.gpus, [run_dir]))
    planned = plan_launch(settings, hardware, Path(run_dir), file=file, resume_from=resume_from)
    return dataclasses.replace(planned, notes=[*notes, *planned.notes]) if notes else planned


def launch_settings(profile: Profile, hardware: Hardware) -> tuple[Settings, list[str]]:
    """The profile with defaults, and `distributed.num_processes` as this machine runs it
    (profile.processes.processes_per_machine: one per selected GPU when the profile leaves it unset and runs a
    multi-process strategy on NVIDIA GPUs). Returns the settings and a note saying what was chosen."""
    from tuitrain.hardware.mapping import map_devices

    settings = settings_with_defaults(profile)
    dist, chosen = settings["distributed"], settings["hardware"]
    if processes_set(profile.data):
        return settings, []
    selected = len(map_devices(hardware.gpus, chosen["gpus"], chosen["device_order"]).assignments) if hardware.gpus else 0
    count = processes_per_machine(None, dist["strategy"], chosen["accelerator"], selected)
    if count is None or count == dist["num_processes"]:
        return settings, []
    dist["num_processes"] = count
    return settings, [f"distributed.num_processes = {count}: one process per selected GPU (not set in the profile)"]


def local_settings(profile: Profile, hardware: Hardware | None) -> tuple[Settings, list[str], Hardware]:
    """What a run on this machine plans from: `launch_settings` (with the hardware, detected when None) and a
    [script]'s paths from the profile's own folder. Returns the settings, their notes and the hardware."""
    hardware = hardware if hardware is not None else detect_hardware()
    settings, notes = launch_settings(profile, hardware)
    script = script_settings(settings)
    if script is not None and profile.path is not None:
        # the script's paths start from the profile's own folder, also when a resume plans from the frozen copy
        settings["script"] = resolved_script(script, Path(profile.path).expanduser().resolve().parent)
    return settings, notes, hardware


def run_cwd(settings: Settings, cwd: Path | None) -> Path | None:
    """Where the run's processes start: a script's workdir, else the folder tuitrain was started in."""
    script = script_settings(settings)
    workdir = script.get("workdir") if script is not None else None
    return Path(workdir) if workdir else cwd


def plan_profile(profile: Profile, run_dir: Path, hardware: Hardware | None = None) -> LaunchPlan:
    """What launching `profile` would run (nothing is started)."""
    settings, notes, hardware = local_settings(profile, hardware)
    return local_plan(settings, run_dir, str(profile.path or "profile"), hardware, notes)


def machines_plan(profile: Profile, settings: Settings, run_dir: Path, file: str,
                  ssh_config: str | None = None, resume_from: Path | None = None,
                  local_cwd: str | None = None) -> MachinesPlan:
    """The plan of a profile that lists [[distributed.machines]] against `run_dir` (for a start or a preview:
    `new_run_dir(runs_root)`); nothing of this machine's hardware is read."""
    return plan_machines(settings, Path(run_dir), file, processes_set=processes_set(profile.data),
                         ssh_config=ssh_config, resume_from=resume_from, local_cwd=local_cwd)


def resumable_checkpoints(record: RunRecord) -> list[Checkpoint]:
    """What a run can be resumed from: the checkpoints it wrote, and the one it started from (a
    resumed run killed before its first save still continues where its parent stopped)."""
    own = run_checkpoints(record)
    start = Fields(record).resume_from
    if start and Path(start).is_dir() and all(c.path != Path(start) for c in own):
        own = sorted([inspect_checkpoint(Path(start)), *own], key=lambda c: c.step)
    return own


def choose_checkpoint(record: RunRecord, ref: str | Path = "latest") -> Checkpoint:
    """`latest` (the newest complete checkpoint of the run), `checkpoint-N`, or a path; never an
    incomplete or damaged one."""
    output_dir = Path(cast(str, Fields(record).output_dir))  # resume_inputs asks for an output folder first
    candidates = resumable_checkpoints(record)
    if str(ref) == "latest":
        found = latest_complete(candidates)
        if found is None:
            damaged = [f"{c.path.name}: {c.missing[0]}" for c in candidates]
            extra = f" ({'; '.join(damaged)})" if damaged else ""
            raise ResumeError(f"no complete checkpoint in {output_dir}{extra}; nothing to resume from")
        return found
    candidate = Path(ref).expanduser()
    named = [c for c in candidates if c.path.name == str(ref)]
    path = candidate if candidate.is_dir() else named[0].path if named else output_dir / str(ref)
    if not path.is_dir():
        names = ", ".join(c.path.name for c in candidates) or "none"
        raise ResumeError(f"no checkpoint {str(ref)!r} in {output_dir} (there: {names})")
    checkpoint = inspect_checkpoint(path)
    if not checkpoint.complete:
        raise ResumeError(f"{path.name} cannot be resumed from: {'; '.join(checkpoint.missing)}; pick another checkpoint")
    return checkpoint


def _lora_base(data: dict[str, Any]) -> tuple[bool, str | None]:
    lora = (data.get("model") or {}).get("lora")
    return isinstance(lora, dict), (lora or {}).get("quantize") if isinstance(lora, dict) else None


def _base_words(quantize: str | None) -> str:
    return f"an {quantize} base" if quantize else "a full-precision base"


def nothing_left(data: dict[str, Any], checkpoint: Checkpoint) -> str | None:
    """Why a resume from `checkpoint` would train nothing (the Trainer would start and end a run of 0 steps):
    the profile's training.max_steps (overrides applied) is not past the checkpoint's step. A [script] takes its
    steps from its own arguments, which tuitrain does not read."""
    max_steps = (data.get("training") or {}).get("max_steps")
    if data.get("script") or not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps <= 0 \
            or max_steps > checkpoint.step:
        return None
    return (f"{checkpoint.path.name} is at step {checkpoint.step} and training.max_steps is {max_steps}: nothing is "
            f"left to train; resume with more steps, e.g. --set training.max_steps={checkpoint.step * 2}")


def checkpoint_refusal(parent_profile: Path, data: dict[str, Any], checkpoint: Checkpoint) -> str | None:
    """Why a resume with `data` cannot continue `checkpoint` (another base, a restored setting it would not honour:
    `runs.start.resume_rule`, or nothing left to train); None when it can. The CLI, Slurm's resume and the app's dialog all
    ask this."""
    before = _parent_data(parent_profile)
    if before is None:
        return nothing_left(data, checkpoint)
    return (base_mismatch(before, data, checkpoint) or resume_rule.refusal(before, data, checkpoint.path.name)
            or nothing_left(data, checkpoint))


def resume_said(parent_profile: Path, data: dict[str, Any], checkpoint: Checkpoint) -> str | None:
    """The one line a resume says of the restored settings its overrides change (`runs.start.resume_rule.honoured`)."""
    before = _parent_data(parent_profile)
    return resume_rule.honoured(before, data, checkpoint.path.name, checkpoint.step) if before is not None else None


def _parent_data(parent_profile: Path) -> dict[str, Any] | None:
    """The parent's frozen profile as it trained (None when it cannot be read: the load of the new one says why)."""
    try:
        return load_profile(parent_profile).data
    except Exception:  # noqa: BLE001
        return None


def base_mismatch(before: dict[str, Any], data: dict[str, Any], checkpoint: Checkpoint) -> str | None:
    """Why `data` cannot continue `checkpoint`, written under `before` (the parent's frozen profile): an adapter
    checkpoint needs the adapters ([model.lora]) and the very base they were trained on (its
    quantization); None when it can."""
    (had, was), (has, now) = _lora_base(before), _lora_base(data)
    if had != has:
        what = "LoRA adapters" if had else "a whole model"
        fix = "keep [model.lora] as the run had it" if had else "remove [model.lora] (--set model.lora=)"
        return f"{checkpoint.path.name} holds {what}, and this resume would train {'a whole model' if had else 'LoRA adapters'}; {fix}"
    if had and was != now:
        fix = f"--set model.lora.quantize={was}" if was else "--set model.lora.quantize="
        return (f"model.lora.quantize: {checkpoint.path.name}'s adapters were trained on {_base_words(was)}, and this "
                f"resume would load {_base_words(now)}; resume with the same base ({fix})")
    return None


def not_ended_refusal(parent: RunPaths, record: RunRecord, job: str | None = None) -> str | None:
    """Why a run that has not ended cannot be resumed yet (`record` as its backend settled it; `job`: its scheduler's
    job, as its backend names it); None once ended."""
    if has_ended(record):
        return None
    if job is not None:
        return f"run {parent.id} is still {Fields(record).status} ({job}); stop it first (`tuitrain stop {parent.id}`)"
    from tuitrain.runs.liveness import live_processes, supervisor_gone  # psutil: not for `plan`

    if supervisor_gone(record):
        pids = ", ".join(str(p.pid) for p in live_processes(record).values())
        return (f"run {parent.id} lost its supervisor but its processes ({pids}) still run; "
                f"end them first (`tuitrain stop --now {parent.id}`)")
    return f"run {parent.id} is still {Fields(record).status}; stop it first (`tuitrain stop {parent.id}`)"


def into_others_folder_refusal(parent: RunPaths, record: RunRecord, profile: Profile) -> str | None:
    """Why this resume may not write into the parent's output folder: the parent is another user's run (its
    checkpoints are theirs). Continuing from its checkpoint into a folder of one's own is allowed."""
    configured = (profile.data.get("run") or {}).get("output_dir")
    folder = Path(str(configured)).expanduser() if configured else None
    if folder is None or folder.resolve() != Path(str(Fields(record).output_dir)).resolve():
        return None
    refusal = others_run_refusal(parent, "resume")
    return refusal and (f"{refusal} into its folder (its checkpoints are theirs); to continue from its checkpoint, "
                        "resume into a folder of yours (--set run.output_dir=outputs/NAME)")


def resume_inputs(parent: RunPaths, record: RunRecord, checkpoint: str | Path = "latest",
                  overrides: Sequence[str] = (), job: str | None = None) -> tuple[Checkpoint, Profile]:
    """What every backend's resume starts from, checked in one order: the parent has ended, it has an output
    folder, the checkpoint asked for is complete; then the parent's frozen profile with the new overrides (named
    by the parent's own profile path, so notes and the new run's record point at the user's file)."""
    refusal = not_ended_refusal(parent, record, job)
    if refusal:
        raise ResumeError(refusal)
    if not Fields(record).output_dir:
        raise ResumeError(f"run {parent.id} has no output folder; nothing to resume from")
    chosen = choose_checkpoint(record, checkpoint)
    loaded = load_profile(parent.profile, overrides)
    refusal = into_others_folder_refusal(parent, record, loaded)
    if refusal:
        raise ResumeError(refusal)
    return chosen, Profile(path=Path(Fields(record).profile_path or parent.profile), data=loaded.data, notes=loaded.notes)


def world_refusal(checkpoint: Checkpoint, processes: int, machines: int) -> str | None:
    """Why a world of `processes` on `machines` cannot continue `checkpoint`: the Trainer restores per-rank state
    and data order for the world that saved it."""
    if not checkpoint.world_size or checkpoint.world_size == processes:
        return None
    each = max(1, checkpoint.world_size // max(1, machines))
    return (f"{checkpoint.path.name} was written by {checkpoint.world_size} process(es) and this resume would run "
            f"{processes}: the Trainer restores per-rank state and data order for the world that saved it. "
            f"Resume with distributed.num_processes={each} (--set distributed.num_processes={each})")


def check_resume(parent: RunPaths, profile: Profile, checkpoint: Checkpoint, processes: int, machines: int) -> None:
    """The refusals every backend's resume makes once it knows the world it would run (ResumeError)."""
    refusal = world_refusal(checkpoint, processes, machines) or checkpoint_refusal(parent.profile, profile.data, checkpoint)
    if refusal:
        raise ResumeError(refusal)
