"""Is this run hung? The one rule (`judge`, pure: heartbeats in, a verdict out) and its reading of a run
directory (`run_hang`): `status`, `runs`, the supervisor's on_hang and `stop` all ask it.

A rank is stalled when its heartbeat has not moved for longer than its phase's limit, or when its process is
stopped (SIGSTOP: it moves no more until continued). Training steps get `[run] hang_after` when the profile sets
it, else a limit learned from the run: HANG_FACTOR times the slowest rank's recent step time, at least
HANG_FLOOR seconds. The slow phases (start-up and the first steps, an evaluation, a save, after training) get at
least SLOW_FLOOR seconds and SLOW_FACTOR times the longest such phase this rank has had: a slow evaluation, a big
save or a first step that compiles is never taken for a hang. A straggler is a rank whose steps take
STRAGGLER_FACTOR times the others' (ranks that never wait for each other), or whose time between steps (its next
batch, its callbacks: work of its own, before the next step's collectives) is STRAGGLER_FACTOR times theirs. Ranks
that wait for each other take the same time a step: the one the others wait for is told by its time between steps."""

from __future__ import annotations

import statistics
import time
import tomllib
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from tuitrain.profile.schema import SCHEMA, KeySpec
from tuitrain.rundir.heartbeat import Beat, heartbeat_folders, read_beats
from tuitrain.rundir.layout import (
    PHASE_BETWEEN,
    PHASE_EVALUATING,
    PHASE_FINISHING,
    PHASE_SAVING,
    PHASE_STARTING,
    PHASE_STEP,
    RunPaths,
)
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields

HANG_FACTOR = 10.0
HANG_FLOOR = 60.0
SLOW_FACTOR = 3.0
SLOW_FLOOR = 600.0
STRAGGLER_FACTOR = 2.0
STRAGGLER_MIN_SECONDS = 0.05  # a difference below this is noise, however large the ratio
SLOW_PHASES = (PHASE_STARTING, PHASE_EVALUATING, PHASE_SAVING, PHASE_FINISHING)
STOPPED = "stopped"  # psutil's status of a process stopped by SIGSTOP (or ctrl-z)
HUNG_LABEL = "hung?"


@dataclass(frozen=True)
class Stalled:
    rank: int
    phase: str
    step: int | None
    since: float  # when it last moved
    limit: float  # how long its phase may go without a move
    state: str | None = None  # its process's state when that says why (stopped)


@dataclass(frozen=True)
class Straggler:
    rank: int
    step_seconds: float
    others_seconds: float  # the median of the other ranks' step times
    part: str = "step"  # "step", or "between" (its time from a step's end to the next one's begin)


@dataclass(frozen=True)
class Hang:
    hung: bool
    stalled: tuple[Stalled, ...] = ()
    stragglers: tuple[Straggler, ...] = ()
    limit: float | None = None  # a training step's limit
    limit_from: str = ""  # "[run] hang_after", "learned" or "floor"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def since(self) -> float | None:
        """When the first stalled rank last moved."""
        return min((s.since for s in self.stalled), default=None)


def _rank_list(ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(str(r) for r in ranks)}"


def step_limit(beats: Iterable[Beat], hang_after: float | None) -> tuple[float, str]:
    """How long a training step may go without a move, and where that comes from."""
    if hang_after:
        return float(hang_after), "[run] hang_after"
    times = [b.step_seconds for b in beats if b.step_seconds]
    if times and HANG_FACTOR * max(times) > HANG_FLOOR:
        return HANG_FACTOR * max(times), "learned"
    return HANG_FLOOR, "floor"


def phase_limit(beat: Beat, base: float, learned: bool) -> float:
    """`learned`: some rank has step times (before that, a step is still start-up: the first one may compile)."""
    phase = beat.phase if beat.phase in SLOW_PHASES else PHASE_STARTING if not learned else None
    if phase is None:
        return base
    return max(base, SLOW_FLOOR, SLOW_FACTOR * beat.slow_seconds.get(phase, 0.0))


def _slower(timed: Mapping[int, float], part: str) -> list[Straggler]:
    found = []
    for rank, seconds in sorted(timed.items()):
        others = [s for r, s in timed.items() if r != rank]
        if not others:
            continue
        typical = statistics.median(others)
        if seconds > STRAGGLER_FACTOR * typical and seconds - typical > STRAGGLER_MIN_SECONDS:
            found.append(Straggler(rank, seconds, typical, part))
    return found


def stragglers(beats: Iterable[Beat]) -> tuple[Straggler, ...]:
    """The ranks much slower than the others: by their steps, else by their time between steps."""
    beats = list(beats)
    by_step = _slower({b.rank: b.step_seconds for b in beats if b.step_seconds}, "step")
    named = {s.rank for s in by_step}
    by_between = _slower({b.rank: b.between_seconds for b in beats if b.between_seconds is not None}, "between")
    return tuple(sorted([*by_step, *(s for s in by_between if s.rank not in named)], key=lambda s: s.rank))


def judge(beats: Iterable[Beat], now: float, hang_after: float | None = None,
          states: Mapping[int, str] | None = None) -> Hang:
    """The verdict on a running run from its ranks' last heartbeats, the time now, `[run] hang_after` (None: learn
    it) and the ranks' process states (rank -> psutil status; only "stopped" counts)."""
    beats = list(beats)
    states = states or {}
    base, source = step_limit(beats, hang_after)
    learned = any(b.step_seconds for b in beats)
    stalled = []
    for beat in sorted(beats, key=lambda b: b.rank):
        limit = phase_limit(beat, base, learned)
        state = states.get(beat.rank)
        if state == STOPPED or now - beat.time > limit:
            stalled.append(Stalled(beat.rank, beat.phase, beat.step, beat.time, limit,
                                   state if state == STOPPED else None))
    return Hang(bool(stalled), tuple(stalled), stragglers(beats), base, source)


def _doing(stalled: Stalled) -> str:
    at = f" {stalled.step}" if stalled.step is not None else ""
    if stalled.phase == PHASE_STEP:
        return f"in step{at}"
    if stalled.phase == PHASE_BETWEEN:
        return f"after step{at}" if at else stalled.phase
    return f"{stalled.phase} (step{at})" if at else stalled.phase


def describe(hang: Hang, now: float) -> list[str]:
    """What `status` says of it: one line for the stalled ranks, one a frozen rank, one a straggler."""
    lines = []
    if hang.stalled:
        since = hang.since or now
        where = ", ".join(f"rank {s.rank} {_doing(s)}" for s in hang.stalled)
        lines.append(f"{HUNG_LABEL} {_rank_list(s.rank for s in hang.stalled)} made no progress for "
                     f"{now - since:.0f}s (since {time.strftime('%H:%M:%S', time.localtime(since))}): {where}; "
                     f"a step's limit {hang.limit:.0f}s ({hang.limit_from})")
    for s in hang.stalled:
        if s.state == STOPPED:
            lines.append(f"rank {s.rank} is stopped (SIGSTOP): it answers no signal and moves no more until continued")
    for late in hang.stragglers:
        if late.part == "between":
            lines.append(f"straggler: rank {late.rank} takes {late.step_seconds:.2f}s between steps (its next batch, "
                         f"its callbacks), the others {late.others_seconds:.2f}s: they wait for it in every step")
        else:
            lines.append(f"straggler: rank {late.rank}'s steps take {late.step_seconds:.2f}s, "
                         f"the others' {late.others_seconds:.2f}s")
    return lines


# -- reading a run directory -----------------------------------------------------------------------------------------

def hang_settings(paths: RunPaths) -> tuple[float | None, str]:
    """`[run] hang_after` and `[run] on_hang` of the run's frozen profile (defaults when absent or unreadable)."""
    try:
        with open(paths.profile, "rb") as handle:
            run = tomllib.load(handle).get("run") or {}
    except (OSError, tomllib.TOMLDecodeError):
        run = {}
    hang_after = run.get("hang_after")
    on_hang = run.get("on_hang")
    spec = SCHEMA["run"]["on_hang"]
    assert isinstance(spec, KeySpec)
    return (float(hang_after) if isinstance(hang_after, (int, float)) and hang_after > 0 else None,
            str(on_hang) if on_hang in (spec.choices or ()) else str(spec.default))


def rank_states(record: RunRecord) -> dict[int, str]:
    """rank -> psutil status of this machine's live rank processes (pid and start time as recorded)."""
    from tuitrain.runs.liveness import live_processes

    states = {}
    for role, proc in live_processes(record).items():
        if role.startswith("rank "):
            try:
                states[int(role[5:])] = proc.status()
            except Exception:  # noqa: BLE001 — psutil.Error, or a role that is no rank number: no state to show
                continue
    return states


def stopped_ranks(record: RunRecord) -> dict[int, str]:
    """This machine's ranks whose process state says why they do not move (stopped): what it tells the others."""
    return {rank: state for rank, state in rank_states(record).items() if state == STOPPED}


def machine_states(paths: RunPaths) -> dict[int, str]:
    """rank -> state of the stopped ranks of other machines, as they last told it (stopped_ranks): an SSH machine's
    node agent through the mirror (runs.keeper.mirror), a Slurm node M > 0's supervisor in its own folder."""
    from tuitrain.atomic import read_json

    states: dict[int, str] = {}
    for folder in heartbeat_folders(paths):
        for file in folder.glob("machine-*-states.json") if folder.is_dir() else ():
            try:
                states.update({int(rank): str(state) for rank, state in read_json(file).items()})
            except (OSError, ValueError, AttributeError):
                continue
    return states


def live_beats(paths: RunPaths, record: RunRecord) -> list[Beat]:
    """The heartbeats of ranks still running: a rank that has exited, or a beat of an earlier process under the
    same rank (a requeued job), is no rank to judge."""
    from tuitrain.rundir.ranks import read_rank_records

    records = read_rank_records(paths)
    out = []
    for rank, beat in read_beats(paths).items():
        rec = records.get(rank)
        if rec is not None and (rec.get("exit_code") is not None or beat.pid not in (None, rec["pid"])):
            continue
        out.append(beat)
    return out


def run_hang(paths: RunPaths, record: RunRecord, now: float | None = None,
             states: Mapping[int, str] | None = None) -> Hang | None:
    """The verdict on a run that is running or stopping (None for any other: only a live run can hang)."""
    if Fields(record).status not in ("running", "stopping"):
        return None
    hang_after, _ = hang_settings(paths)
    if states is None:
        states = {**machine_states(paths), **rank_states(record)}
    return judge(live_beats(paths, record), time.time() if now is None else now, hang_after, states)


def status_label(summary: Mapping[str, Any]) -> str:
    """The status a list of runs shows: `hung?` for a live run that `run_summary` found hung, else its status. The
    summary's status is already judged where the run lives (`run_summary` settles a lost run first): another
    workstation's run is never judged again by this machine's processes."""
    status = str(summary.get("status", "?"))
    hang = summary.get("hang")
    return HUNG_LABEL if isinstance(hang, Mapping) and hang.get("hung") and status in ("running", "stopping") else status


def process_names(paths: RunPaths, record: RunRecord) -> dict[int, str]:
    """rank -> "pid P" of this machine's ranks (the record), "pid P on HOST" of another machine's (its rank record)."""
    from tuitrain.rundir.ranks import read_rank_records

    names = {}
    for rank, rec in read_rank_records(paths).items():  # every machine's (an SSH run's mirrored, a Slurm node's copied)
        names[rank] = f"pid {rec['pid']}" + (f" on {rec['host']}" if rec.get("host") else "")
    for role, entry in Fields(record).processes.items():
        if role.startswith("rank ") and role[5:].isdecimal():
            names[int(role[5:])] = f"pid {entry.get('pid') if isinstance(entry, Mapping) else entry}"
    return names


def stop_waits_for(paths: RunPaths, record: RunRecord, now: float | None = None) -> list[str]:
    """What a graceful stop of this run waits for and cannot get: a stopped rank, ranks that do not move (it is asked
    at a step's end); empty when nothing stands in its way."""
    hang = run_hang(paths, record, now)
    if hang is None or not hang.hung:
        return []
    return waits_for(hang, process_names(paths, record), time.time() if now is None else now)


def waits_for(hang: Hang, where: Mapping[int, str], now: float) -> list[str]:
    """What a graceful stop waits for in this hang (`where`: rank -> its process, process_names)."""
    lines = [f"rank {s.rank} ({where.get(s.rank, 'pid ?')}) is stopped (SIGSTOP): it cannot save or stop until it is "
             f"continued (kill -CONT {where.get(s.rank, 'pid ?').removeprefix('pid ')})"
             for s in hang.stalled if s.state == STOPPED]
    moving = [s.rank for s in hang.stalled if s.state != STOPPED]
    if moving:
        since = hang.since or now
        lines.append(f"{_rank_list(moving)} made no progress for {now - since:.0f}s ({HUNG_LABEL}): "
                     f"the stop is taken at a step's end, which {'they' if len(moving) > 1 else 'it'} may never reach")
    return lines
