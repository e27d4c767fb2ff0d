"""The sbatch script of a run: pure, from the job's options and resources to text.

Every value that comes from a profile or the command line is checked against what Slurm accepts (one line naming
the option and the fix when it is not) and quoted where it lands: `shlex.quote` in the shell body, and sbatch's own
quoting in `#SBATCH` lines (sbatch reads those itself: double quotes, backslash escapes, and `#` starts a comment).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Mapping

from tuitrain.errors import TuitrainError
from tuitrain.profile.processes import processes_per_machine
from tuitrain.profile.settings import Settings
from tuitrain.rundir.layout import CONTROL_STOP

AGENT_MODULE = "tuitrain.slurm.agent"
FIRST_NODE = "slurm-first-node"  # main_process_ip in a submitted profile: the agents put the job's first host there
WARNED_FILE = "slurm-warned"  # made by the batch script when Slurm's time-limit warning arrives
DEFAULT_WARNING_SECONDS = 300  # the time-limit warning: a checkpoint is saved this long before the end
WARNING_SIGNAL = "USR1"

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_PARTITIONS = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")
# Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, and the words for no limit
_TIME = re.compile(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
                   r"|UNLIMITED|INFINITE|unlimited|infinite)$")


class ScriptError(TuitrainError):
    """An option or profile value the job cannot be written with, in one line naming it and the fix."""


@dataclass(frozen=True)
class JobOptions:
    """What `tuitrain submit` was asked for beside the profile."""

    partition: str | None = None
    time: str | None = None
    account: str | None = None
    warning_seconds: int = DEFAULT_WARNING_SECONDS
    requeue: bool = False  # Slurm may requeue the job (preemption, `scontrol requeue`): it resumes from its checkpoint

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "time": self.time, "account": self.account,
                "warning_seconds": self.warning_seconds, "requeue": self.requeue}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobOptions:
        return cls(partition=data.get("partition"), time=data.get("time"), account=data.get("account"),
                   warning_seconds=int(data.get("warning_seconds") or DEFAULT_WARNING_SECONDS),
                   requeue=bool(data.get("requeue")))


@dataclass(frozen=True)
class Resources:
    """What each node of the job needs: the profile's [distributed] and [hardware] in Slurm's terms."""

    nodes: int
    processes_per_node: int
    gpus_per_node: int  # 0: CPU ranks
    cpus_per_task: int | None  # CPU ranks: one CPU each (None: the site's default)

    @property
    def total_processes(self) -> int:
        return self.nodes * self.processes_per_node


def check_options(options: JobOptions) -> None:
    """Raise ScriptError for an option Slurm would not take, or that could break out of its line."""
    if options.partition is not None and not _PARTITIONS.match(options.partition):
        raise ScriptError(f"--partition {options.partition!r}: not a Slurm partition name (letters, digits, _ . -; "
                          "several separated by commas); `sinfo -s` lists the partitions")
    if options.time is not None and not _TIME.match(options.time):
        raise ScriptError(f"--time {options.time!r}: not a Slurm time limit; use minutes (90), H:M:S (1:30:00) or "
                          "D-H:M:S (2-00:00:00)")
    if options.account is not None and not _NAME.match(options.account):
        raise ScriptError(f"--account {options.account!r}: not a Slurm account name (letters, digits, _ . -); "
                          "`sacctmgr show assoc user=$USER` lists yours")
    if not 0 < options.warning_seconds <= 65535:
        raise ScriptError(f"--warning {options.warning_seconds}: give the seconds before the time limit at which the "
                          "job saves a checkpoint (1 to 65535)")


def job_resources(settings: Settings, file: str, processes_set: bool = True) -> Resources:
    """Nodes, processes and GPUs per node from a profile with defaults; ScriptError for what Slurm cannot place.
    `processes_set`: whether the profile itself sets distributed.num_processes (else each node runs one process per
    listed GPU, profile.processes.processes_per_machine: the job asks for one GPU per process)."""
    dist, hardware = settings["distributed"], settings["hardware"]
    if dist["machines"]:
        raise ScriptError(f"{file}: distributed.machines: Slurm chooses the machines of a job; remove the "
                          "[[distributed.machines]] tables and set distributed.num_machines to the number of nodes")
    nodes = int(dist["num_machines"] or 1)
    gpus = hardware["gpus"]
    # under Slurm only how many GPUs counts (the job gets that many per node): a list's length, or gpus = N itself
    counted = isinstance(gpus, int) and not isinstance(gpus, bool)
    count = len(gpus) if isinstance(gpus, list) else gpus if counted else None
    accelerator = hardware["accelerator"]
    processes = processes_per_machine(dist["num_processes"] if processes_set else None, dist["strategy"],
                                      accelerator, count) or 1
    if accelerator == "mps":
        raise ScriptError(f"{file}: hardware.accelerator = 'mps': Slurm nodes run CUDA or CPU ranks; set "
                          "hardware.accelerator to 'cuda' or 'cpu'")
    if accelerator == "cpu" or count == 0:
        return Resources(nodes, processes, 0, processes)
    if count and count < processes:
        says = f"= {count} asks for" if counted else f"lists {count}"
        raise ScriptError(f"{file}: hardware.gpus {says} GPU(s) for {processes} process(es) per node; list "
                          "one per process (under Slurm only their number counts: the job gets that many per node)")
    if accelerator == "auto" and not count:
        raise ScriptError(f"{file}: hardware.accelerator = 'auto' with no hardware.gpus: on a cluster say what each "
                          "node runs, hardware.accelerator = 'cpu', or 'cuda' with gpus = [0, 1, ...] (one per "
                          "process)")
    return Resources(nodes, processes, count or processes, None)


def directive_quote(value: str) -> str:
    """A value as sbatch reads it back from an `#SBATCH` line (its parser knows double quotes and backslash, and
    takes an unescaped `#` for a comment)."""
    if "\n" in value or "\r" in value:
        raise ScriptError(f"{value!r}: a line break cannot go into an #SBATCH line")
    escaped = re.sub(r'([\\"#])', r"\\\1", value)
    return f'"{escaped}"' if re.search(r"\s", value) or not value else escaped


def job_name(profile_name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", profile_name).strip("-")[:40] or "run"
    return f"tuitrain-{slug}"


def batch_script(*, run_dir: str, run_id: str, profile_name: str, python: str, workdir: str,
                 resources: Resources, options: JobOptions) -> str:
    """The sbatch script: the job's resources as #SBATCH lines, then one `srun` task per node, each running
    tuitrain's node agent for the run directory (it plans its node with machine_rank = SLURM_NODEID)."""
    check_options(options)
    lines = ["#!/bin/bash",
             f"# tuitrain run {run_id} of profile {profile_name}, written by `tuitrain submit`",
             "# one tuitrain agent per node (srun) plans and supervises that node's `accelerate launch`"]
    directives: list[tuple[str, str | int]] = [
        ("job-name", job_name(profile_name)),
        ("nodes", resources.nodes),
        ("ntasks-per-node", 1),
    ]
    if resources.cpus_per_task:
        directives.append(("cpus-per-task", resources.cpus_per_task))
    if resources.gpus_per_node:
        directives.append(("gpus-per-node", resources.gpus_per_node))
    for name in ("partition", "time", "account"):
        value = getattr(options, name)
        if value is not None:
            directives.append((name, value))
    directives += [
        # the warning goes to this shell only (sent to the job's steps it would reach every rank, and kill them):
        # the trap below turns it into the run's stop request, which the ranks honour by saving a checkpoint
        ("signal", f"B:{WARNING_SIGNAL}@{options.warning_seconds}"),
        ("output", f"{run_dir}/logs/slurm-%j.out"),
        ("open-mode", "append"),
        ("chdir", workdir),
    ]
    lines += [f"#SBATCH --{name}={directive_quote(str(value))}" for name, value in directives]
    # requeued (preemption, `scontrol requeue`), the job's agents resume the run from its latest checkpoint
    lines.append("#SBATCH --requeue" if options.requeue else "#SBATCH --no-requeue")
    srun = ["srun", f"--nodes={resources.nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
            python, "-m", AGENT_MODULE, run_dir]
    lines += [
        "",
        f"run_dir={shlex.quote(run_dir)}",
        "warned() {",
        f'  echo "tuitrain: Slurm\'s time-limit warning (SIG{WARNING_SIGNAL}): the run saves a checkpoint and stops" >&2',
        f'  : > "$run_dir/{WARNED_FILE}"',
        f'  mkdir -p "$run_dir/control" && : > "$run_dir/control/{CONTROL_STOP}"',
        "}",
        f"trap warned {WARNING_SIGNAL}",
        "# Slurm's SIGTERM (preemption, requeue, scancel) reaches every process of the job: the ranks save a checkpoint",
        "# and stop (tuitrain.rundir.preemption); this shell waits for them, as its end would end the job",
        "terminated() {",
        '  echo "tuitrain: SIGTERM from Slurm: the run saves a checkpoint and stops" >&2',
        f'  mkdir -p "$run_dir/control" && : > "$run_dir/control/{CONTROL_STOP}"',
        "}",
        "trap terminated TERM",
        shlex.join(srun) + " &",
        "agents=$!",
        "while true; do  # a trapped signal ends `wait` early: wait again until srun itself ends",
        '  wait "$agents"; code=$?',
        '  kill -0 "$agents" 2>/dev/null || exit "$code"',
        "done",
        "",
    ]
    return "\n".join(lines)
