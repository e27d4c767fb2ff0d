"""Starting a run: a fresh run directory, its frozen inputs, and a detached supervisor."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import tomli_w

from tuitrain.atomic import write_text_atomic
from tuitrain.errors import TuitrainError
from tuitrain.launch import LaunchPlan
from tuitrain.launch.machines import MachinesPlan
from tuitrain.profile import Profile, Settings
from tuitrain.profile.folders import unusable_folder
from tuitrain.profile.paths import PATH_KEYS
from tuitrain.rundir.checkpoints import list_checkpoints
from tuitrain.rundir.layout import CONTROL_HOLD, RunPaths
from tuitrain.rundir.record import RunRecordError, new_record, read_record, record_end, reserve_space, write_record
from tuitrain.rundir.run import Fields
from tuitrain.rundir.tail import read_tail
from tuitrain.runs.catalog import RUNS_ROOT_FIX, runs_root_shape
from tuitrain.runs.start.output_claim import claim_output_dir, holder_problem
from tuitrain.yaml_text import dump as dump_yaml

if TYPE_CHECKING:
    from tuitrain.runs.queue.entries import QueueRequest  # psutil: only a queued start loads the queue


class StartError(TuitrainError):
    """Why a run could not be started, in words a user can act on."""


@dataclass(frozen=True)
class Lineage:
    """For a resumed run: the run it continues and the checkpoint it starts from. It writes its
    own checkpoints into its own output folder (the profile's run.output_dir, or its own run
    directory's), and never deletes or rewrites one it did not write."""

    parent: str
    checkpoint: Path


def freeze_paths(data: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """The frozen profile must read the same files from any folder (a resume runs it from the run
    directory): relative local paths become absolute."""
    frozen = copy.deepcopy(data)
    for keys, rule in PATH_KEYS:  # the profile's path keys (profile.paths: the editor's Save As reads them too)
        table: Any = frozen  # a nested table, or None once a key is missing
        for key in keys[:-1]:
            table = table.get(key) if isinstance(table, dict) else None
        value = table.get(keys[-1]) if isinstance(table, dict) else None
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            candidate = base_dir / Path(value).expanduser()
            if rule == "always" or candidate.exists():
                table[keys[-1]] = str(candidate.resolve())
    script = frozen.get("script")
    if isinstance(script, dict) and "workdir" not in script:
        script["workdir"] = str(base_dir.resolve())  # a script runs in its profile's folder, not the frozen copy's
    return frozen


def _slug(name: str) -> str:
    """A folder-safe form of a run name that keeps letters of any script."""
    return re.sub(r"[^\w.-]+", "-", name).strip("-")[:40] or "run"


def runs_root_refusal(root: Path) -> str | None:
    """Why no run can be made under `root` (a file or under one, as every reader says: `catalog.runs_root_shape`;
    a folder we cannot write; one that cannot be made), without making anything: what a plan says before the
    start, in the start's words (the fix: `catalog.RUNS_ROOT_FIX`)."""
    shape = runs_root_shape(root)
    if shape:
        return shape
    if root.is_dir():
        return None if os.access(root, os.W_OK) else f"the runs root {root} is not writable"
    why = unusable_folder(root)
    return f"cannot create the runs root {root}: {why}" if why else None


def make_run_dir(root: Path, name: str) -> RunPaths:
    """A new, unique run directory (mkdir is atomic: two runs never share one)."""
    shape = runs_root_shape(root)
    if shape:
        raise StartError(f"{shape}; {RUNS_ROOT_FIX}")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StartError(f"cannot create the runs root {root}: {exc.strerror}; {RUNS_ROOT_FIX}") from exc
    refusal = runs_root_refusal(root)
    if refusal:
        raise StartError(f"{refusal}; {RUNS_ROOT_FIX}")
    stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(name)}"
    for n in range(1, 1000):
        candidate = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise StartError(f"cannot create a run directory in {root}: {exc.strerror}") from exc
        return RunPaths(candidate)
    raise StartError(f"too many runs named {stem} in {root}")


def resolve_output_dir(settings: Settings, paths: RunPaths, cwd: Path) -> Path:
    configured = settings["run"]["output_dir"]
    if not configured:
        return paths.default_output_dir
    out = Path(configured).expanduser()
    return out if out.is_absolute() else (cwd / out)


def output_dir_refusal(output_dir: Path, lineage: Lineage | None = None) -> str | None:
    """Why a run cannot write into `output_dir`, as its start refuses it and its plan says it first: a folder that
    cannot be made or written here, or checkpoints it would overwrite. (A live run holding the folder is checked
    as the run starts: `holder_problem`.)"""
    return unusable_folder(output_dir) or overwrite_refusal(output_dir, lineage)


def overwrite_refusal(output_dir: Path, lineage: Lineage | None) -> str | None:
    """A new run never writes over checkpoints it did not make; a resume never writes over
    checkpoints past the one it continues from."""
    existing = [c for c in list_checkpoints(output_dir)]
    if lineage is None and existing:
        return (
            f"{output_dir} already holds {existing[-1].path.name} (and {len(existing) - 1} more); a new run would "
            "overwrite them. Resume that run (`tuitrain resume RUN`), or set another run.output_dir "
            "(e.g. --set run.output_dir=outputs/new)"
        )
    if lineage is not None:
        start = int(lineage.checkpoint.name.rsplit("-", 1)[-1]) if lineage.checkpoint.name.startswith("checkpoint-") else -1
        later = [c for c in existing if c.complete and c.step > start]
        if later:
            return (
                f"{output_dir} already holds {later[-1].path.name}, written after {lineage.checkpoint.name}; resuming "
                "there would overwrite it. Resume from the latest checkpoint, or pass "
                "--set run.output_dir=DIR to continue into a new folder"
            )
    return None


@dataclass(frozen=True)
class RunFiles:
    """What a backend adds to a new run directory: the profile as its ranks read it, its own files (by name in the
    run directory: accelerate.yaml, slurm.sbatch) and the fields its run.json starts with (`new_record` keywords)."""

    frozen: dict[str, Any]
    files: dict[str, str]
    fields: dict[str, Any]


def prepare_run(
    profile: Profile,
    settings: Settings,
    runs_root: Path,
    make_files: Callable[[RunPaths, dict[str, Any]], RunFiles],
    lineage: Lineage | None = None,
    cwd: Path | None = None,
) -> RunPaths:
    """Every backend's first steps, in one order: a fresh run directory; its output folder checked (no live run
    holds it, no checkpoints a new run would overwrite); the backend's files, made against the new directory by
    `make_files(paths, frozen)` (`frozen`: the profile with its local paths made absolute; a StartError there is a
    refusal); the frozen profile, the files and run.json written; space reserved; the output folder claimed. Any
    failure removes the directory again. Starting what runs in it is the backend's."""
    cwd = cwd or Path.cwd()
    paths = make_run_dir(runs_root, profile.name)
    try:
        # a [script]'s output folder is its Trainer's (or what tuitrain.saved names): its ranks record it
        output_dir = None if settings["script"] else resolve_output_dir(settings, paths, cwd)
        if output_dir is not None:
            refusal = holder_problem(output_dir, paths) or output_dir_refusal(output_dir, lineage)
            if refusal:
                raise StartError(refusal)
        base_dir = profile.path.parent if profile.path else cwd
        made = make_files(paths, freeze_paths(profile.data, base_dir))
        paths.logs.mkdir()
        paths.control.mkdir()
        write_text_atomic(paths.profile, tomli_w.dumps(made.frozen))
        for name, text in made.files.items():
            write_text_atomic(paths.root / name, text)
        record = new_record(
            paths.id,
            profile.name,
            **made.fields,
            output_dir=str(output_dir) if output_dir is not None else None,
            profile_path=str(profile.path) if profile.path else None,
            cwd=str(cwd),
            parent=lineage.parent if lineage else None,
            resume_from=str(lineage.checkpoint) if lineage else None,
            max_steps=settings["training"].get("max_steps"),
        )
        write_record(paths, record)
        reserve_space(paths)
        taken = claim_output_dir(output_dir, paths) if output_dir is not None else None
        if taken:
            raise StartError(taken)
    except BaseException:
        discard(paths)
        raise
    return paths


NEW_RUN = "<new-run>"  # the run directory's name in a plan made before the directory exists


def new_run_dir(runs_root: Path) -> Path:
    """The run directory a plan names before it exists: `<new-run>` under the runs root. `prepare_run` makes the
    real one, and `plan_files` puts its name in the plan's place (`fill_run_dir`)."""
    return runs_root / NEW_RUN


def fill_run_dir(value: Any, paths: RunPaths) -> Any:
    """`value` (text, or lists and mappings of it: a plan's record fields, its accelerate config) with the
    placeholder's name made the run directory's own: `runs/<new-run>/accelerate.yaml` becomes
    `runs/<id>/accelerate.yaml`, a machine's `.tuitrain/runs/<new-run>/machine-1` its `.tuitrain/runs/<id>/machine-1`."""
    if isinstance(value, str):
        return value.replace(NEW_RUN, paths.id)
    if isinstance(value, (list, tuple)):
        return type(value)(fill_run_dir(item, paths) for item in value)
    if isinstance(value, dict):
        return {key: fill_run_dir(item, paths) for key, item in value.items()}
    return value


def plan_files(plan: LaunchPlan | MachinesPlan) -> Callable[[RunPaths, dict[str, Any]], RunFiles]:
    """`make_files` for a run this machine starts, from a plan made against `new_run_dir(runs_root)` before the
    run directory existed: its errors refuse the start; its accelerate config and record fields, with the new
    directory in the placeholder's place."""

    def make(paths: RunPaths, frozen: dict[str, Any]) -> RunFiles:
        if plan.errors:
            raise StartError("\n".join(str(p) for p in plan.errors))
        config = dump_yaml(fill_run_dir(plan.accelerate_config, paths))
        return RunFiles(frozen=frozen, files={paths.accelerate_config.name: config},
                        fields=fill_run_dir(plan.record_fields(), paths))

    return make


def queued_files(make: Callable[[RunPaths, dict[str, Any]], RunFiles], queue: QueueRequest
                 ) -> Callable[[RunPaths, dict[str, Any]], RunFiles]:
    """`make_files` for a queued run: the record starts `queued`, with what it waits for (`queue`)."""

    from tuitrain.runs.queue.entries import queue_fields

    def make_queued(paths: RunPaths, frozen: dict[str, Any]) -> RunFiles:
        made = make(paths, frozen)
        gpus = queue.gpus_for(str(made.fields.get("accelerator"))) if queue.gpus_for else ()
        queued = queue_fields(queue.folder, gpus, queue.dependencies(), queue.sweep)
        record = {**made.fields, "status": "queued", **queued}
        return RunFiles(frozen=made.frozen, files=made.files, fields=record)

    return make_queued


def join_queue(paths: RunPaths, queue: QueueRequest) -> None:
    """The new run's entry at the end of this machine's queue (the run directory is removed if it cannot be)."""
    from tuitrain.hardware.host import current_user
    from tuitrain.runs.queue.entries import enqueue

    fields = Fields(read_record(paths)).queue
    if queue.hold:
        paths.control.mkdir(exist_ok=True)
        paths.control_request(CONTROL_HOLD).touch()
    try:
        enqueue(queue.folder, paths, tuple(fields["gpus"]), queue.dependencies(), current_user())
    except OSError as exc:
        discard(paths)
        raise StartError(f"cannot write to the queue folder {queue.folder}: {exc.strerror or exc}; set "
                         "TUITRAIN_QUEUE_DIR to a folder every user of this machine can write") from exc


def start_run(
    profile: Profile,
    settings: Settings,
    plan: LaunchPlan | MachinesPlan,
    runs_root: Path,
    lineage: Lineage | None = None,
    cwd: Path | None = None,
    queue: QueueRequest | None = None,
    workers: str = "ranks",
) -> RunPaths:
    """A run started from this machine (locally, or on the machines it lists): `prepare_run` with the plan's
    files, then its supervisor, detached. `settings` is the profile with defaults; `plan` is a value made before
    the run directory exists, against `new_run_dir(runs_root)` (`plan_files` fills the new directory in). Returns
    once the supervisor is started; the run goes on without us. With `queue`, the run is created `queued` and its
    supervisor waits for its turn (tuitrain.runs.queue.wait). `workers`: what the supervisor keeps, as the backend names
    them (tuitrain.runs.keeper.supervise.WORKERS)."""
    make = plan_files(plan)
    if queue is not None:
        from tuitrain.runs.queue.rule import dependency_refusal

        refusal = dependency_refusal(queue.dependencies())
        if refusal:
            raise StartError(refusal)
        make = queued_files(make, queue)
    paths = prepare_run(profile, settings, runs_root, make, lineage=lineage, cwd=cwd)
    if queue is not None:
        join_queue(paths, queue)
    supervisor = spawn_supervisor(paths, workers)
    wait_for_supervisor(paths, supervisor)
    reap_when_done(supervisor)
    return paths


def reap_when_done(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the supervisor in a daemon thread: a long-lived starter (the app) must not keep it
    <defunct> once the run ends, and a short-lived one (the CLI) exits without waiting for it."""
    import threading

    threading.Thread(target=proc.wait, name=f"reap supervisor {proc.pid}", daemon=True).start()


SUPERVISOR_START_TIMEOUT = 20.0


def wait_for_supervisor(paths: RunPaths, proc: subprocess.Popen[bytes], timeout: float = SUPERVISOR_START_TIMEOUT) -> None:
    """Return once the supervisor has recorded itself (from then on a viewer can tell whether the
    run lives); a supervisor that exits or hangs first is recorded as failed, with its words."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Fields(read_record(paths)).processes.get("supervisor"):
                return
        except RunRecordError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        why = f"the supervisor did not start within {timeout:.0f} s"
    else:
        why = f"the supervisor exited with code {proc.returncode} as it started"
    tail = [line for line in read_tail(paths.launcher_log, 4096).splitlines() if line.strip()][-1:]
    error = f"{why}{': ' + tail[0] if tail else ''} (see {paths.launcher_log})"
    record_end(paths, status="failed", ended=time.time(), error=error)
    raise StartError(error)


def discard(paths: RunPaths) -> None:
    """Remove a run directory that never started (only files we wrote a moment ago)."""
    import shutil

    shutil.rmtree(paths.root, ignore_errors=True)


def spawn_supervisor(paths: RunPaths, workers: str = "ranks") -> subprocess.Popen[bytes]:
    """The run's supervisor, detached, keeping `workers` (tuitrain.runs.keeper.supervise.WORKERS)."""
    with open(paths.launcher_log, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tuitrain.runs.keeper.supervise", str(paths.root), workers],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a closed terminal or dropped SSH session does not reach the run
            close_fds=True,
        )
    return proc


def sent_profile_text(path: Path, overrides: Sequence[str]) -> str:
    """A profile of this machine as it is sent to another workstation: its --set applied and its relative local
    paths made absolute from its folder here (`freeze_paths`, as a run's frozen profile), as TOML. Checked there,
    not here: its data files need only be there (`run --host`, the launch dialog's Where)."""
    import tomli_w

    from tuitrain.profile.load import parse_toml, read_profile_text
    from tuitrain.profile.overrides import apply_overrides

    data = apply_overrides(parse_toml(read_profile_text(path, str(path)), str(path)), overrides)
    return tomli_w.dumps(freeze_paths(data, path.resolve().parent))
