"""Slurm's own commands (sbatch, squeue, sacct, scancel, scontrol), each with a timeout; a failure is one line."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from tuitrain.errors import TuitrainError
from tuitrain.rundir.record import JOB_ID_PATTERN

TIMEOUT = 30.0  # sbatch and scancel may wait on a busy controller
QUERY_TIMEOUT = 5.0  # squeue and sacct, read by viewers

# Slurm's job states that will not change again
FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY",
                          "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"})


class SlurmError(TuitrainError):
    """A Slurm command that is missing, refused, failed or timed out: one line saying which and why."""


def _run(argv: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    tool = argv[0]
    if shutil.which(tool) is None:
        raise SlurmError(f"`{tool}` is not on PATH: run tuitrain where the Slurm client commands are (a login node "
                         "of the cluster), or add their folder to PATH")
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              cwd=cwd, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{tool}` did not answer within {timeout:.0f} s (is slurmctld reachable? "
                         "`scontrol ping` says)") from None
    except OSError as exc:
        raise SlurmError(f"`{tool}` could not be run: {exc.strerror or exc}") from None


def said(result: subprocess.CompletedProcess[str]) -> str:
    """The last thing a Slurm command printed on stderr (or stdout), without its `sbatch: error: ` prefix."""
    lines = [line.strip() for line in (result.stderr or result.stdout or "").splitlines() if line.strip()]
    if not lines:
        return f"exit code {result.returncode}"
    last = lines[-1]
    for prefix in ("sbatch: error: ", "squeue: error: ", "sacct: error: ", "scancel: error: ", "scontrol: error: ",
                   "error: "):
        if last.startswith(prefix):
            return last[len(prefix):]
    return last


def sbatch(script: Path, cwd: Path) -> str:
    """Submit a batch script; its job id."""
    result = _run(["sbatch", "--parsable", str(script)], TIMEOUT, cwd=cwd)
    if result.returncode != 0:
        raise SlurmError(f"sbatch refused the job: {said(result)}")
    job_id = result.stdout.strip().splitlines()[-1].split(";")[0].strip() if result.stdout.strip() else ""
    if not re.fullmatch(JOB_ID_PATTERN, job_id):
        raise SlurmError(f"sbatch answered {result.stdout.strip()!r}, not a job id")
    return job_id


def scancel(job_id: str, signal: str | None = None) -> None:
    """Cancel a job, or (`signal`) send that signal to its steps (the tuitrain agents), not its batch shell."""
    argv = ["scancel", *([f"--signal={signal}"] if signal else []), job_id]
    result = _run(argv, TIMEOUT)
    if result.returncode != 0:
        raise SlurmError(f"scancel {job_id} failed: {said(result)}")


def hostnames(nodelist: str) -> list[str]:
    """`scontrol show hostnames`: a nodelist (node[1-3],gpu7) as host names, in order."""
    result = _run(["scontrol", "show", "hostnames", nodelist], TIMEOUT)
    if result.returncode != 0:
        raise SlurmError(f"scontrol show hostnames {nodelist} failed: {said(result)}")
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def node_address(node: str) -> str:
    """How Slurm reaches a node (its NodeAddr: an address, or a name that resolves), as the job's other nodes will."""
    result = _run(["scontrol", "--oneliner", "show", "node", node], TIMEOUT)
    if result.returncode != 0:
        raise SlurmError(f"scontrol show node {node} failed: {said(result)}")
    for field in result.stdout.split():
        if field.startswith("NodeAddr="):
            return field.split("=", 1)[1] or node
    return node


@dataclass(frozen=True)
class JobState:
    """A job as Slurm knows it: state (PENDING, RUNNING, COMPLETED...) and reason; or why it could not be read."""

    job_id: str
    state: str | None = None
    reason: str | None = None
    problem: str | None = None

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def label(self) -> str:
        if self.state is None:
            return "?"
        if self.state == "PENDING" and self.reason and self.reason != "None":
            return f"PENDING ({self.reason})"
        return self.state

    def to_dict(self) -> dict[str, str | None]:
        return {"job_id": self.job_id, "state": self.state, "reason": self.reason, "label": self.label(),
                "problem": self.problem}


def _squeue(ids: list[str]) -> dict[str, JobState]:
    result = _run(["squeue", "--noheader", "--states=all", f"--jobs={','.join(ids)}", "--format=%i|%T|%r"],
                  QUERY_TIMEOUT)
    if result.returncode != 0:
        if "Invalid job id" in (result.stderr + result.stdout):
            return {}  # none of them is known to the controller any more
        raise SlurmError(f"squeue failed: {said(result)}")
    found: dict[str, JobState] = {}
    for line in result.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0] in ids:
            found[parts[0]] = JobState(parts[0], parts[1], parts[2])
    return found


def _sacct(ids: list[str]) -> dict[str, JobState]:
    result = _run(["sacct", "--noheader", "--parsable2", "--allocations", f"--jobs={','.join(ids)}",
                   "--format=JobIDRaw,State"], QUERY_TIMEOUT)
    if result.returncode != 0:
        raise SlurmError(f"sacct: {said(result)}")
    found: dict[str, JobState] = {}
    for line in result.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0] in ids:
            found[parts[0]] = JobState(parts[0], parts[1].split()[0] if parts[1] else None)  # "CANCELLED by 0"
    return found


def job_states(job_ids: Iterable[str]) -> dict[str, JobState]:
    """Every job's state: squeue for what the controller still holds, sacct for the rest. A job neither knows, or
    a command that fails, gets a JobState with no state and the one-line `problem`."""
    ids = sorted({str(i) for i in job_ids if i})
    if not ids:
        return {}
    try:
        found = _squeue(ids)
    except SlurmError as exc:
        return {i: JobState(i, problem=str(exc)) for i in ids}
    missing = [i for i in ids if i not in found]
    if missing:
        try:
            found.update(_sacct(missing))
        except SlurmError as exc:
            found.update({i: JobState(i, problem=f"job {i} is no longer in squeue, and {exc}") for i in missing})
    for i in ids:
        found.setdefault(i, JobState(i, problem=f"job {i} is known neither to squeue nor to sacct"))
    return found
