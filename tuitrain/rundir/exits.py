"""How a process of a run ended, in words: exit codes with signal names, and the rank that torch's
elastic agent saw fail first."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Mapping

from tuitrain.rundir.layout import KILL_REQUEST, RunPaths
from tuitrain.rundir.process_tree import signal_name
from tuitrain.rundir.ranks import RankRecord
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.tail import read_tail

EXIT_USER_ERROR = 3  # a rank that explained its failure in one line (an `error` event)
EXIT_SUPERVISOR_GONE = 75  # a rank that ended itself because the run's supervisor died


def describe_exit(code: Any) -> str:
    """-9 → "killed by SIGKILL — out of memory? (see `dmesg`)"; 1 → "exited with code 1"."""
    if code is None or code == "killed":
        return "ended without recording an exit code"
    if not isinstance(code, int):
        return f"ended ({code})"
    if code == EXIT_SUPERVISOR_GONE:
        return "ended itself: the run's supervisor was gone"
    name = signal_name(code) if code < 0 else None
    if name == "SIGKILL":
        return "killed by SIGKILL — out of memory? (see `dmesg`)"
    if name:
        return f"killed by {name}"
    return f"exited with code {code}"


def exit_name(code: Any) -> str:
    """-9 → "SIGKILL", 0 → "0": an exit code as `status` shows it."""
    name = signal_name(code) if isinstance(code, int) and code < 0 else None
    return name or str(code)


_WHEN_UNSAID: Final[dict[str, str]] = {  # the cause of an end whose record says none
    "lost": "its supervisor is gone without recording an end (killed, or the machine restarted)",
    "killed": f"ended by {KILL_REQUEST}",
    "cancelled": "dropped while queued; it never started",
}


def end_cause(record: RunRecord, shown: str | None = None) -> str:
    """Why the run ended as `shown` (default: its record's status) says, in words: its recorded error, else what the
    status itself tells ("rank 1 failed", "the launcher failed", the supervisor gone); "" for a run that finished,
    stopped or runs. A viewer that judged a `running` record lost passes "lost"."""
    status = shown or record["status"]
    error = record.get("error")
    if error:
        return error
    if status == "failed":
        rank = record.get("failed_rank")
        return f"rank {rank} failed" if rank is not None else "the launcher failed"
    return _WHEN_UNSAID.get(status, "")


def failure_log(paths: RunPaths, record: RunRecord) -> Path:
    """The log that holds a failure's traceback: the failing rank's, else the launcher's."""
    rank = record.get("failed_rank")
    return paths.rank_log(rank) if rank is not None else paths.launcher_log


def explained_itself(record: RunRecord) -> bool:
    """The failing rank said why in one line (an `error` event, exit code 3): its traceback is not the cause."""
    rank = record.get("failed_rank")
    return rank is not None and (record.get("exit_codes") or {}).get(str(rank)) == EXIT_USER_ERROR


@dataclass(frozen=True)
class RootCause:
    rank: int | None
    exit_code: int | None
    pid: int | None
    exit_codes: dict[int, int] = field(default_factory=dict)  # every failed rank torch's agent listed → its exit code


_BLOCK = re.compile(r"Root Cause \(first observed failure\):(.*?)(?:\n=+|\Z)", re.S)
_REPORT = re.compile(r"\nFailures:\n(.*?)(?:\n=+|\Z)", re.S)  # ChildFailedError's list; the root cause follows it
_ENTRY = re.compile(r"\[\d+\]:\n(.*?)(?=\n\[\d+\]:|\n-+\n|\Z)", re.S)
_CALLED = re.compile(r"CalledProcessError: Command .*? (?:died with <Signals\.\w+: (\d+)>|returned non-zero exit status (-?\d+))")
_RANK = re.compile(r"rank\s*:\s*(\d+)")
_EXIT = re.compile(r"exitcode\s*:\s*(-?\d+)(?:\s*\(pid:\s*(\d+)\))?")


def root_cause(launcher_log: Path) -> RootCause | None:
    """torch's elastic agent names the rank whose failure it saw first (and how it ended); when
    several ranks are found dead at one poll, its word beats ours (a peer killed in the teardown
    is not the cause)."""
    text = read_tail(launcher_log)
    blocks = _BLOCK.findall(text)
    if not blocks:
        return _simple_launcher_cause(text)
    block = blocks[-1]
    rank, exit_ = _RANK.search(block), _EXIT.search(block)
    codes: dict[int, int] = {}
    reports = _REPORT.findall(text)
    for entry in _ENTRY.findall(reports[-1] + "\n" + block if reports else block):
        found_rank, found_exit = _RANK.search(entry), _EXIT.search(entry)
        if found_rank and found_exit:
            codes[int(found_rank.group(1))] = int(found_exit.group(1))
    return RootCause(
        rank=int(rank.group(1)) if rank else None,
        exit_code=int(exit_.group(1)) if exit_ else None,
        pid=int(exit_.group(2)) if exit_ and exit_.group(2) else None,
        exit_codes=codes,
    )


def first_of_several(cause: RootCause | None, dead: Mapping[int, RankRecord]) -> int | None:
    """Of several ranks found dead at one look (`dead`: their records), the one that failed first. torch's
    agent orders failures by whole seconds and breaks ties by rank, so within one second its word is "the
    lowest rank". A rank ended by a signal from outside (SIGKILL: the OOM killer, a user) did not react to
    anything; a peer that exits with a code ran its own error path, usually a collective that lost that rank.
    So when exactly one of the dead was ended that way, it is the first; otherwise torch's word. SIGTERM is
    left out: it is how torch's agent and tuitrain end the others."""
    outside = []
    for rank, rec in dead.items():
        code = rec.get("exit_code")
        if code is None and cause is not None:
            code = cause.exit_codes.get(rank)
        if code is None or (code < 0 and code != -signal.SIGTERM):
            outside.append(rank)  # no code anywhere: it never got to say
    if len(outside) == 1 and len(dead) > 1:
        return outside[0]
    return cause.rank if cause is not None else None


_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b.*)$")


# What torch's NCCL watchdog says (torch 2.11, seen on an H100) before it aborts the process: the C++ exception
# that ends the rank, whose "what()" no "SomeError:" line carries.
_NCCL_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
                           r".*?Timeout\(ms\)=(\d+)\)")
_NCCL_OPS = {"ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather", "_ALLGATHER_BASE": "all_gather",
             "REDUCE_SCATTER": "reduce_scatter", "_REDUCE_SCATTER_BASE": "reduce_scatter", "ALLTOALL": "all_to_all",
             "ALLTOALL_BASE": "all_to_all", "BROADCAST": "broadcast", "BARRIER": "barrier", "SEND": "send", "RECV": "recv"}


def nccl_timeout_line(text: str) -> str | None:
    """"NCCL's watchdog timed out all_reduce #2 after 10 s …" when the log says the rank ended that way."""
    found = _NCCL_TIMEOUT.search(text)
    if found is None:
        return None
    seq, op, ms = found.groups()
    return (f"NCCL's watchdog timed out {_NCCL_OPS.get(op, op.lower())} #{seq} after {int(ms) / 1000:g} s: a rank "
            "never joined it, or a GPU stalled")


def last_exception_line(text: str) -> str | None:
    """The last "SomeError: message" line of a log tail: what a traceback ended with (an NCCL watchdog's timeout
    first: the rank's own traceback, if any, only follows from it)."""
    nccl = nccl_timeout_line(text)
    if nccl is not None:
        return nccl
    for line in reversed(text.replace("\r", "\n").splitlines()):
        match = _EXCEPTION.match(line.strip())
        if match:
            return match.group(1)[:300]
    return None


def _simple_launcher_cause(text: str) -> RootCause | None:
    """With one process accelerate runs it without torch's agent and reports its end as a
    CalledProcessError: the process is rank 0."""
    found = _CALLED.findall(text)
    if not found:
        return None
    signal_number, code = found[-1]
    return RootCause(rank=0, exit_code=-int(signal_number) if signal_number else int(code), pid=None)
