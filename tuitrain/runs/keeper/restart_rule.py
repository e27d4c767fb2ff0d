"""Whether an attempt of a run that ended badly is started again, and how: the rule, pure (data in, a verdict out).

The keeper (tuitrain.runs.keeper.supervisor) asks it once an attempt has ended and its outcome is known. The cause
decides, as the record says it (the one-line error, the failed rank's exit code, a hang the keeper ended):

- restarted: a rank's crash (an exception, a signal: SIGKILL, SIGSEGV, an abort), an NCCL watchdog timeout, a machine
  or its link lost, a hang ended by `[run] on_hang = "restart"`;
- never: a stop or `stop --now` (the user's), a finished run, a hang under another on_hang;
- not, because it would fail again: the engine's refusal of the profile or its data (exit code 3: a bad key, a
  missing column), a missing or unreadable file, the code's own errors (an import, a name, a type, a key) and a
  full disk; an out-of-memory under `on_oom = "fail"` (the same batch runs out again);
- after an out-of-memory under `on_oom = "split_batch"`: restarted with the batch divided by its smallest factor and
  the accumulation multiplied by it, which takes none of `[run] restarts` (its floor, a batch of 1, bounds it).

A cause the list misses that fails again anyway is caught by the crash-loop rule: an attempt that was itself a restart
and ended without a new complete checkpoint is not restarted again ("no progress"). Each verdict says its decision
in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from tuitrain.rundir.disk_space import names_full_disk
from tuitrain.rundir.exits import EXIT_USER_ERROR

# exceptions the code or its inputs raise, the same again from the same checkpoint: a file, the code, a key
AGAIN = ("FileNotFoundError", "NotADirectoryError", "IsADirectoryError", "PermissionError", "ModuleNotFoundError",
         "ImportError", "SyntaxError", "NameError", "AttributeError", "TypeError", "KeyError", "UnicodeDecodeError")
_AGAIN = re.compile(r"\b(" + "|".join(AGAIN) + r")\b")
_OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|out of memory\. Tried to allocate")
_HUNG = re.compile(r"(^|: )hung: ")
BATCH_KEY = "per_device_train_batch_size"
ACCUMULATION_KEY = "gradient_accumulation_steps"


@dataclass(frozen=True)
class RestartSettings:
    """`[run]`'s restart keys as the run's frozen profile says them (tuitrain.profile.schema's defaults)."""

    restarts: int = 0
    backoff: float = 10.0
    backoff_max: float = 600.0
    on_hang: str = "notify"
    on_oom: str = "fail"


@dataclass(frozen=True)
class AttemptEnd:
    """What the rule reads of an attempt's end."""

    status: str
    error: str | None
    failed_rank: int | None = None
    exit_codes: Mapping[str, Any] = field(default_factory=dict)
    hung: bool = False  # the keeper ended it for a hang (a machine's keeper: its error says "hung: …")
    stop_asked: bool = False  # a stop was asked before it ended


@dataclass(frozen=True)
class Verdict:
    restart: bool
    why: str  # the decision, in one line
    counted: bool = True  # takes one of run.restarts
    split: tuple[int, int] | None = None  # on_oom: (batch, accumulation) the next attempt trains with


def cause_kind(end: AttemptEnd) -> str:
    """finished | stopped | killed | hang | oom | again | crash: what ended the attempt, as the rule sorts it."""
    if end.status in ("finished", "stopped", "killed"):
        return end.status
    error = end.error or ""
    if end.hung or _HUNG.search(error):
        return "hang"
    if _OOM.search(error):
        return "oom"
    code = end.exit_codes.get(str(end.failed_rank)) if end.failed_rank is not None else None
    if code == EXIT_USER_ERROR or _AGAIN.search(error) or names_full_disk(error):
        return "again"
    return "crash"


def again_words(end: AttemptEnd) -> str:
    """Why an attempt of kind "again" would fail the same way from the same checkpoint."""
    error = end.error or ""
    code = end.exit_codes.get(str(end.failed_rank)) if end.failed_rank is not None else None
    if code == EXIT_USER_ERROR:
        return "the run refused its profile or data (a fix is needed, not a restart)"
    if names_full_disk(error):
        return "the disk is full, and a restart saves to it again"
    found = _AGAIN.search(error)
    return f"a {found.group(1) if found else 'cause'} fails the same way from the same checkpoint"


def split_batch(batch: int, accumulation: int) -> tuple[int, int] | None:
    """The batch divided by its smallest factor and the accumulation multiplied by it (a batch of 8 → 4 × 2): the
    effective batch unchanged. None at the floor, a batch of 1."""
    if batch <= 1:
        return None
    factor = next(f for f in range(2, batch + 1) if batch % f == 0)
    return batch // factor, accumulation * factor


def backoff_seconds(settings: RestartSettings, counted_before: int) -> float:
    """The wait before a restart: the first wait, doubled for each counted restart before it, up to the cap."""
    return min(settings.backoff_max, settings.backoff * 2 ** counted_before)


def verdict(end: AttemptEnd, settings: RestartSettings, counted_before: int, progressed: bool | None,
            batch: tuple[int, int] | None) -> Verdict:
    """Whether the attempt that ended as `end` is started again. `counted_before`: restarts that took one of
    run.restarts so far; `progressed`: None for the run's first attempt, else whether this attempt (itself a restart)
    wrote a complete checkpoint newer than the one it began from; `batch`: the (batch, accumulation) it trained with."""
    kind = cause_kind(end)
    if kind == "finished":
        return Verdict(False, "finished")
    if kind in ("stopped", "killed") or end.stop_asked:
        return Verdict(False, "not restarted: a stop was asked")
    if kind == "again":
        return Verdict(False, f"not restarted: {again_words(end)}")
    if kind == "oom":
        if settings.on_oom != "split_batch":
            return Verdict(False, 'not restarted: out of memory again with the same batch ([run] on_oom = '
                                  '"split_batch" starts it again with a smaller one)')
        smaller = split_batch(*batch) if batch is not None else None
        if batch is None or smaller is None:
            shown = batch[0] if batch is not None else "?"
            return Verdict(False, f"not restarted: out of memory with {BATCH_KEY} = {shown}, the floor of "
                                  'on_oom = "split_batch"')
        return Verdict(True, f"out of memory: restarting with {BATCH_KEY} = {smaller[0]} and {ACCUMULATION_KEY} = "
                             f"{smaller[1]} (was {batch[0]} and {batch[1]}: the same effective batch)",
                       counted=False, split=smaller)
    if kind == "hang" and settings.on_hang != "restart":
        return Verdict(False, f'not restarted: on_hang = "{settings.on_hang}" (on_hang = "restart" starts a hung run '
                              "again)")
    if counted_before >= settings.restarts:
        if settings.restarts == 0:
            return Verdict(False, "not restarted: [run] restarts = 0")
        return Verdict(False, f"not restarted: its {settings.restarts} restart"
                              f"{'s' if settings.restarts != 1 else ''} ([run] restarts) are used")
    if progressed is False:
        return Verdict(False, "not restarted again: this attempt wrote no new checkpoint since the restart before it "
                              "(a crash loop)")
    what = "hung" if kind == "hang" else "crashed"
    return Verdict(True, f"restarting: it {what} (restart {counted_before + 1} of {settings.restarts})")
