"""run.json: the record of one run. Written atomically; its status only moves forward."""

from __future__ import annotations

import errno
import time
from typing import Annotated, Any, Literal, Mapping, TypedDict, Unpack, get_args

from tuitrain.atomic import write_json_atomic
from tuitrain.errors import TuitrainError
from tuitrain.rundir.disk_space import disk_full, names_full_disk
from tuitrain.rundir.json_shape import Matching, Within, decoded, problem
from tuitrain.rundir.layout import RunPaths

Status = Literal["planned", "queued", "starting", "running", "stopping", "finished", "stopped", "killed", "failed", "lost",
                 "cancelled"]
STATUS_ORDER: tuple[Status, ...] = get_args(Status)
# queued: its supervisor waits for its turn (tuitrain.runs.queue.wait); cancelled: dropped while queued, it never
# started; stopped: ended by a stop that saved a checkpoint; killed: ended by `stop --now` (nothing saved);
# lost: its supervisor died without recording an end (found by a viewer once no process is left).
FINAL_STATUSES = frozenset({"finished", "stopped", "killed", "failed", "lost", "cancelled"})


def has_ended(record: RunRecord) -> bool:
    """Its status is one of the ends: the one test of whether a run has ended."""
    return record["status"] in FINAL_STATUSES


# The ranges a reader relies on: a pid is never -1 (os.kill(-1) signals every process) nor past the kernel's limit,
# a time is one that local time can show, a count of ranks or machines one that a loop over it ends.
Pid = Annotated[int, Within(1, 2**22, "a process id")]
Time = Annotated[float, Within(0, 2**33, "a time in seconds since 1970")]
Count = Annotated[int, Within(0, 2**20, "a count")]
Rank = Annotated[int, Within(0, 2**20, "a rank")]
RankKey = Annotated[str, Matching("[0-9]{1,7}", "a rank")]  # a rank as a key of a JSON object
JOB_ID_PATTERN = "[0-9]{1,18}"  # what sbatch --parsable answers (slurm.commands.sbatch holds it to this too)
JobId = Annotated[str, Matching(JOB_ID_PATTERN, "a Slurm job id")]  # handed to squeue and scancel as an argument


class RunPids(TypedDict, total=False):
    supervisor: Pid
    launcher: Pid
    ranks: dict[RankKey, Pid]  # global rank -> pid


class ProcessIdentity(TypedDict):
    """A process as run.json names it (`process_tree.identity`): its pid and start time, so a reused pid is told apart."""

    pid: Pid
    started: Time | None


class QueueDependency(TypedDict):
    """A run a queued run waits for (`runs.queue.entries.Dependency`): any end, or only `finished` (`ok`)."""

    run: str
    run_dir: str
    ok: bool


class QueueChoice(TypedDict):
    """The GPUs the queue chose for `gpus = N`, and why."""

    gpus: list[int]
    why: str
    at: Time


class QueueSweep(TypedDict):
    """The sweep a queued run belongs to (`run --sweep`): its id, this run's place in it, what it sets."""

    id: str
    index: int  # of `of`, from 1
    of: int
    label: str


class QueueRecord(TypedDict, total=False):
    """What a queued run's record keeps of its queueing (`runs.queue.entries.queue_fields`)."""

    dir: str
    gpus: list[int]  # the NVML indices it claims
    after: list[QueueDependency]
    chosen: QueueChoice
    sweep: QueueSweep


class SlurmRequeue(TypedDict):
    """One earlier attempt of a requeued Slurm job (`slurm.agent.restart_fields`)."""

    restart: int
    time: Time
    previous: str | None
    error: str | None
    resume_from: str | None


class SlurmRecord(TypedDict, total=False):
    """A Slurm run's job: what it was submitted with (`slurm.submit`), where node 0 runs, the job's final state."""

    job_id: JobId | None
    script: str
    partition: str | None
    time: str | None
    account: str | None
    warning_seconds: int
    requeue: bool
    nodes: int
    gpus_per_node: int
    host: str
    state: str | None
    requeued: list[SlurmRequeue]


class HangRecord(TypedDict):
    """A hang the supervisor found: since when, its stalled ranks, what it said of them."""

    since: Time | None
    ranks: list[Rank]
    cause: str | None


class BatchSplit(TypedDict):
    """`[run] on_oom = "split_batch"`: the batch a restart split, each key's (before, after)."""

    per_device_train_batch_size: tuple[Count, Count]
    gradient_accumulation_steps: tuple[Count, Count]


class RestartRecord(TypedDict, total=False):
    """One restart of a run in its own directory (`runs.keeper.restarts`): how the attempt before it ended, and where
    the attempt it began starts from. Written when the keeper decides; `at` is when that attempt starts (in the
    future while the keeper waits)."""

    attempt: Count  # the attempt it begins: 2, 3, ...
    at: Time
    ended: Time  # when the attempt before it ended
    status: str  # how that attempt ended
    error: str | None  # why, in one line
    failed_rank: Rank | None
    exit_codes: dict[str, int | str | None] | None
    began_from: str | None  # the checkpoint the attempt before began from
    resume_from: str | None  # the checkpoint this attempt begins from (None: the beginning)
    skipped: list[str]  # newer checkpoints passed over as damaged, each with why
    batch: BatchSplit  # on_oom = "split_batch": the batch it split
    counted: bool  # whether it took one of run.restarts (a split batch does not: its floor bounds it)


class _MachineNeeded(TypedDict):
    host: str
    machine_rank: Rank
    python: str
    workdir: str
    node_dir: str
    argv: list[str]
    env: dict[str, str]
    num_processes: Count
    accelerator: str


class MachineEntry(_MachineNeeded, total=False):
    """One machine of a run over SSH, as its plan was made at home (`launch.machines.MachinePlan.to_dict`): the keys
    a reader needs, and those only shown or kept."""

    command: str
    accelerate_config: dict[str, Any]
    network_interface: str | None
    notes: list[str]


class RunRecord(TypedDict, total=False):
    """run.json: every key it may hold (docs/architecture.md 3.3); tests/test_run_record_keys.py keeps it whole."""

    id: str
    profile: str
    status: Status  # required: a record without one is damaged (`_parsed`)
    created: Time
    started: Time | None
    ended: Time | None
    argv: list[str]  # the launcher's command line
    env: dict[str, str]  # added to the launcher's environment
    num_processes: Count  # in all
    num_machines: Count
    pids: RunPids
    processes: dict[str, ProcessIdentity | None]  # role (supervisor, launcher, `rank K`, `ssh HOST`) -> process
    exit_codes: dict[str, int | str | None] | None  # "launcher" or a rank -> its code, or "killed"
    failed_rank: Rank | None
    error: str | None  # why the run ended, in one line, when it did not finish
    parent: str | None  # the run this one resumes
    resume_from: str | None  # the checkpoint it resumes from
    output_dir: str | None
    output_removed: Time  # when the supervisor found the output folder removed under the run (and made it again)
    main_process_port: int | None
    accelerator: str
    accelerator_why: str  # how `auto` chose it ("accelerator auto → cuda: 1 NVIDIA GPU(s) found"); absent where asked
    profile_path: str | None  # the profile file it was started from
    cwd: str
    max_steps: int | None
    machines: list[MachineEntry]  # several machines over SSH
    ssh_config: str | None
    queue: QueueRecord
    slurm: SlurmRecord
    hang: HangRecord | None  # None again once a restart began a new attempt
    attempt: Count  # which attempt of the run this is (absent: the first); each restarts the whole run
    restarts_allowed: Count  # `[run] restarts` as the run started
    restarts: list[RestartRecord]  # every restart so far, oldest first
    not_restarted: str | None  # why a run that ended badly was not started again, in one line
    machine_rank: Rank  # a machine's own record (an SSH machine's, a Slurm node's)
    home: str | None  # a machine's own record: home's run directory (Slurm) or host (SSH)


class RunRecordError(TuitrainError):
    """A run.json that cannot be read or a status change that would move backwards."""


class RecordDamaged(RunRecordError):
    """A run.json that is there but cannot be used: `reason` says why in a few words ("empty file",
    "started: '1795…' is not a time (seconds since 1970)"), the message in one line with the fix."""

    def __init__(self, paths: RunPaths, reason: str) -> None:
        super().__init__(f"{paths.record} is damaged ({reason}): tuitrain cannot tell this run's state; its other files "
                         f"are untouched in {paths.root} (restore run.json, or remove the folder)")
        self.reason = reason


def _parsed(data: bytes) -> tuple[Any, str | None]:
    value, reason = decoded(data)
    if reason is not None:
        return None, reason
    if not isinstance(value, dict):
        return None, "not a JSON object"
    if "status" not in value:
        return value, "no status"
    return value, problem(value, RunRecord)


def parse_record(paths: RunPaths, data: bytes) -> RunRecord:
    """run.json's bytes as a checked record; RecordDamaged when they are not one."""
    value, reason = _parsed(data)
    if reason is not None:
        raise RecordDamaged(paths, reason)
    record: RunRecord = value
    return record


def now() -> float:
    return time.time()


# What the record of one machine's part of a run (an SSH machine's, a Slurm node's) takes from the run's own.
INHERITED_KEYS = ("num_processes", "num_machines", "main_process_port", "output_dir", "parent", "resume_from", "max_steps",
                  "accelerator", "attempt")


def inherited(record: Mapping[str, Any], *more: str) -> dict[str, Any]:
    """What a machine's own record takes from the run's (INHERITED_KEYS and `more`): only the keys it has. A key the
    run's record lacks (one recorded before the key was, or a run never restarted) stays absent, not null, which the
    checked record refuses for a count."""
    return {key: value for key, value in record.items() if key in INHERITED_KEYS or key in more}


def new_record(run_id: str, profile_name: str, **fields: Unpack[RunRecord]) -> RunRecord:
    record: RunRecord = {
        "id": run_id,
        "profile": profile_name,
        "status": "starting",
        "created": now(),
        "started": None,
        "ended": None,
        "argv": [],
        "env": {},
        "num_processes": 1,
        "num_machines": 1,
        "pids": {},
        "exit_codes": {},
        "failed_rank": None,
        "error": None,  # why the run ended, in one line, when it did not finish
        "parent": None,
        "resume_from": None,
        "output_dir": None,
        "main_process_port": None,
    }
    record.update(fields)
    return record


def read_record(paths: RunPaths) -> RunRecord:
    """run.json, checked (`parse_record`): RunRecordError when it is missing or damaged; OSError when it cannot be
    read (a permission, a disk)."""
    try:
        data = paths.record.read_bytes()
    except FileNotFoundError as exc:
        raise RunRecordError(f"{paths.root}: not a run directory (no run.json)") from exc
    return parse_record(paths, data)


def _read_to_merge(paths: RunPaths) -> dict[str, Any]:
    """run.json as a writer merges into it: any JSON object, checked or not (a writer replaces what it writes; a reader
    names what it finds damaged)."""
    try:
        data = paths.record.read_bytes()
    except FileNotFoundError as exc:
        raise RunRecordError(f"{paths.root}: not a run directory (no run.json)") from exc
    value, reason = _parsed(data)
    if not isinstance(value, dict):
        raise RecordDamaged(paths, reason or "not a JSON object")
    return value


def can_move(current: object, new: str) -> bool:
    """Whether a record at status `current` may be moved to `new` (a status not of STATUS_ORDER, a damaged record's,
    may be written over)."""
    if current == new:
        return True
    if current in FINAL_STATUSES:
        return False
    if current not in STATUS_ORDER or new not in STATUS_ORDER:
        return True
    return STATUS_ORDER.index(new) > STATUS_ORDER.index(current)


def update_record(paths: RunPaths, **fields: Unpack[RunRecord]) -> RunRecord:
    """Merge fields into run.json; a status that would move backwards is ignored, not written."""
    record: RunRecord = _read_to_merge(paths)  # type: ignore[assignment]
    status = fields.get("status")
    if status is not None and not can_move(record.get("status"), status):
        del fields["status"]
    record.update(fields)
    write_json_atomic(paths.record, record)
    return record


def record_end(paths: RunPaths, **fields: Unpack[RunRecord]) -> RunRecord:
    """`update_record` for the run's last words: on a full disk it gives up the space reserve
    (made at the run's start) so that how the run ended is still written, and an error then says the disk is full."""
    try:
        record = update_record(paths, **fields)
    except OSError as exc:
        if exc.errno != errno.ENOSPC or not paths.space_reserve.exists():
            raise
        paths.space_reserve.unlink()
        error = fields.get("error")
        if error and not names_full_disk(error):  # the run's cause may not have met the full disk: its record did
            fields["error"] = f"{error} — {disk_full([paths.root]) or f'the disk holding {paths.root} is full'}"
        return update_record(paths, **fields)
    if record.get("status") in FINAL_STATUSES:
        try:
            paths.space_reserve.unlink()
        except OSError:
            pass
    return record


SPACE_RESERVE_BYTES = 256 * 1024


def reserve_space(paths: RunPaths) -> None:
    """Set aside a little disk for the run's last words (see `record_end`)."""
    try:
        with open(paths.space_reserve, "wb") as handle:
            handle.write(b"\0" * SPACE_RESERVE_BYTES)
    except OSError:
        pass  # no room even for this: the record is written as usual, or fails loudly



def write_record(paths: RunPaths, record: RunRecord) -> None:
    write_json_atomic(paths.record, record)
