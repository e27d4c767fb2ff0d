"""Every rank's Python stacks, all threads, and a digest of where each group of ranks is (issue 26).

Taken with `py-spy dump` where it is installed (it needs nothing of the rank), else by the signal on which each
rank's faulthandler writes stacks/rank-K.txt (tuitrain.engine.rank_io.register_stacks_dump). A stopped rank
(SIGSTOP) answers no signal: it is named as stopped. The digest is one line a group of ranks at the same place,
the ranks that are elsewhere first: "rank 1: in your script, train.py line 88 `time.sleep(…)`; rank 0: waiting in
broadcast (collective.py:21 → distributed_c10d.py:2400)"."""

from __future__ import annotations

import json
import linecache
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from tuitrain.atomic import write_json_atomic
from tuitrain.runs.heartbeat import Beat
from tuitrain.runs.layout import STACKS_SIGNAL, RunPaths

ANSWER_SECONDS = 5.0  # how long the ranks have to write their stacks
SETTLED_SECONDS = 0.3  # a stacks file that has not grown for this long is complete
PY_SPY_SECONDS = 10.0
MACHINE_SECONDS = 60.0  # another machine's answer: ssh, then its ranks' (py-spy, or faulthandler)
FRAMES_SHOWN = 16  # of each rank's main thread in its block, innermost first; the files keep them all
LIVE_STATUSES = ("running", "stopping", "starting")
TUITRAIN_DIR = str(Path(__file__).resolve().parents[1])
_FAULTHANDLER_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)")
_FAULTHANDLER_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')
_PY_SPY_THREAD = re.compile(r"^Thread (\S+) (.*)$")
_PY_SPY_FRAME = re.compile(r"^\s+(\S.*?) \((.+):(\d+)\)$")


class StacksError(Exception):
    """Why no stacks can be taken of a run, in one line."""


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    func: str


@dataclass(frozen=True)
class Thread:
    name: str
    frames: tuple[Frame, ...]  # the innermost first, as both tools print them
    current: bool = False  # the thread that took the signal (faulthandler's "Current thread")


@dataclass(frozen=True)
class RankStacks:
    rank: int
    pid: int | None
    how: str  # "py-spy", "faulthandler", or "" when none could be taken
    text: str = ""
    state: str | None = None  # the process's status when it explains a missing stack (stopped)
    threads: tuple[Thread, ...] = field(default=())


def parse_stacks(text: str) -> tuple[Thread, ...]:
    """The threads of a faulthandler or `py-spy dump` text."""
    threads: list[Thread] = []
    name, current, frames = None, False, []  # type: ignore[var-annotated]
    for line in text.splitlines():
        head = _FAULTHANDLER_THREAD.match(line) or _PY_SPY_THREAD.match(line)
        if head:
            if name is not None:
                threads.append(Thread(name, tuple(frames), current))
            name, current, frames = head.group(0).split(" (")[0], line.startswith("Current thread"), []
            continue
        frame = _FAULTHANDLER_FRAME.match(line)
        if frame:
            frames.append(Frame(frame.group(1), int(frame.group(2)), frame.group(3)))
            continue
        frame = _PY_SPY_FRAME.match(line)
        if frame and name is not None:
            frames.append(Frame(frame.group(2), int(frame.group(3)), frame.group(1)))
    if name is not None:
        threads.append(Thread(name, tuple(frames), current))
    return tuple(threads)


def main_thread(threads: Sequence[Thread]) -> Thread | None:
    """The thread running the program (its outermost frame is a module's code), else the one that took the signal."""
    running = [t for t in threads if t.frames and t.frames[-1].func == "<module>"]
    for group in (running, [t for t in threads if t.current], list(threads)):
        if group:
            return next((t for t in group if t.current), group[0])
    return None


def _stdlib() -> str:
    return os.path.join(sysconfig.get_paths()["stdlib"], "")


def is_yours(file: str) -> bool:
    """A frame of the user's own code: not a library, not Python's, not tuitrain's."""
    if file.startswith("<") or "site-packages" in file or "dist-packages" in file:
        return False
    return not (file.startswith(_stdlib()) or file.startswith(os.path.join(TUITRAIN_DIR, "")))


def source_line(frame: Frame) -> str:
    """The frame's line of code with a call's arguments elided: `time.sleep(…)`."""
    text = linecache.getline(frame.file, frame.line).split("#")[0].strip()
    if "(" in text:
        text = text[: text.index("(")] + "(…)"
    return text[:60]


def describe_thread(thread: Thread) -> str:
    frames = thread.frames
    if not frames:
        return "no Python frame"
    collective = [i for i, f in enumerate(frames) if "/torch/distributed/" in f.file]
    if collective:
        named = [i for i in collective if frames[i].file.endswith("distributed_c10d.py") and frames[i].func != "wrapper"]
        at = named[0] if named else collective[0]
        caller = next((f for f in frames[at + 1:] if "/torch/" not in f.file), None)
        via = f"{os.path.basename(caller.file)}:{caller.line} → " if caller else ""
        return f"waiting in {frames[at].func} ({via}{os.path.basename(frames[at].file)}:{frames[at].line})"
    backward = next((i for i, f in enumerate(frames) if f.func == "_engine_run_backward"), None)
    if backward is not None:
        caller = next((f for f in frames[backward + 1:] if "/torch/" not in f.file), None)
        via = f"{os.path.basename(caller.file)}:{caller.line} → " if caller else ""
        return f"in backward, where DDP all-reduces the gradients ({via}graph.py:{frames[backward].line})"
    yours = next((f for f in frames if is_yours(f.file)), None)
    if yours is not None:
        code = source_line(yours)
        return f"in your script, {os.path.basename(yours.file)} line {yours.line}" + (f" `{code}`" if code else "")
    return f"in {frames[0].func} ({os.path.basename(frames[0].file)}:{frames[0].line})"


def describe_rank(stacks: RankStacks) -> str:
    main = main_thread(stacks.threads)
    if main is not None:
        return describe_thread(main)
    if stacks.state == "stopped":
        return (f"stopped (SIGSTOP): no stack, it answers no signal until continued (kill -CONT {stacks.pid})")
    return f"no stack: it did not answer {STACKS_SIGNAL} within {ANSWER_SECONDS:.0f}s" if stacks.pid else "not running here"


_WAITING = ("waiting in", "in backward")  # what describe_thread says of a rank that waits for the others


def digest(where: Mapping[int, str]) -> list[str]:
    """One line a group of ranks at the same place; the smaller groups first (the ranks that are elsewhere), and a
    rank in its own code before one that waits for the others."""
    groups: dict[str, list[int]] = {}
    for rank, text in sorted(where.items()):
        groups.setdefault(text, []).append(rank)
    ordered = sorted(groups.items(), key=lambda g: (len(g[1]), g[0].startswith(_WAITING), g[1][0]))
    return [f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}: {text}" for text, ranks in ordered]


# -- taking them -----------------------------------------------------------------------------------------------------

def _py_spy(pid: int) -> str | None:
    spy = shutil.which("py-spy")
    if spy is None:
        return None
    try:
        done = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=PY_SPY_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and done.stdout.strip() else None


def _settled(paths: Sequence[Path], deadline: float) -> None:
    """Wait until every file has content and has stopped growing, or the deadline."""
    sizes: dict[Path, int] = {}
    still = time.monotonic()
    while time.monotonic() < deadline:
        now = {p: (p.stat().st_size if p.exists() else 0) for p in paths}
        if now != sizes:
            sizes, still = now, time.monotonic()
        elif all(now.values()) and time.monotonic() - still >= SETTLED_SECONDS:
            return
        time.sleep(0.05)


def take_stacks(paths: RunPaths, record: Mapping[str, Any], timeout: float = ANSWER_SECONDS) -> dict[int, RankStacks]:
    """Every live rank's stacks on this machine, each also in stacks/rank-K.txt."""
    from tuitrain.runs.liveness import live_processes

    procs = {int(role[5:]): proc for role, proc in live_processes(dict(record)).items()
             if role.startswith("rank ") and role[5:].isdigit()}
    paths.stacks.mkdir(parents=True, exist_ok=True)
    taken: dict[int, RankStacks] = {}
    signalled: dict[int, Any] = {}
    for rank, proc in sorted(procs.items()):
        spied = _py_spy(proc.pid)
        if spied is not None:
            paths.rank_stacks(rank).write_text(spied, encoding="utf-8")
            taken[rank] = RankStacks(rank, proc.pid, "py-spy", spied, threads=parse_stacks(spied))
            continue
        try:
            state = proc.status()
            if state == "stopped":  # the signal would wait for a SIGCONT, and dump then
                taken[rank] = RankStacks(rank, proc.pid, "", state=state)
                continue
            os.truncate(paths.rank_stacks(rank), 0)  # the rank's faulthandler appends: the file is this dump alone
            os.kill(proc.pid, getattr(signal, STACKS_SIGNAL))
            signalled[rank] = proc
        except Exception as exc:  # noqa: BLE001 — OSError, or psutil.Error: gone meanwhile
            taken[rank] = RankStacks(rank, proc.pid, "", text=str(exc))
    _settled([paths.rank_stacks(r) for r in signalled], time.monotonic() + timeout)
    for rank, proc in signalled.items():
        try:
            text = paths.rank_stacks(rank).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        taken[rank] = RankStacks(rank, proc.pid, "faulthandler" if text else "", text, threads=parse_stacks(text))
    return dict(sorted(taken.items()))


# -- on every machine of a run over SSH ------------------------------------------------------------------------------

def stacks_json(taken: Mapping[int, RankStacks]) -> dict[str, Any]:
    """What a machine's node agent answers to `--stacks`: each of its ranks' stacks, as text."""
    return {str(r): {"pid": s.pid, "how": s.how, "state": s.state, "text": s.text} for r, s in taken.items()}


def stacks_from_json(data: Mapping[str, Any]) -> dict[int, RankStacks]:
    out = {}
    for rank, entry in data.items():
        text = str(entry.get("text") or "")
        pid = entry.get("pid")
        out[int(rank)] = RankStacks(int(rank), int(pid) if pid is not None else None, str(entry.get("how") or ""),
                                    text, entry.get("state"), parse_stacks(text))
    return out


def node_stacks(root: Path) -> dict[str, Any]:
    """A node agent's answer to `NODE_DIR --stacks`: the stacks of the ranks its node run directory records."""
    from tuitrain.runs.record import read_record

    paths = RunPaths(root)
    return stacks_json(take_stacks(paths, read_record(paths)))


def machines_stacks(paths: RunPaths, record: Mapping[str, Any]) -> tuple[dict[int, RankStacks], list[str]]:
    """The stacks of every machine's ranks, each machine asked at once through its node agent over ssh
    (`python -m tuitrain.runs.node_agent NODE_DIR --stacks WORKDIR`), each kept in stacks/rank-K.txt here; and a
    line for each machine that did not answer."""
    from tuitrain.remote import ssh
    from tuitrain.runs.node_command import agent_argv

    machines = [m for m in record.get("machines") or [] if isinstance(m, Mapping)]
    options = ssh.SshOptions(config=record.get("ssh_config"))

    def ask(machine: Mapping[str, Any]) -> ssh.RemoteResult:
        argv = [*agent_argv(machine), "--stacks", str(machine["workdir"])]
        return ssh.run(str(machine["host"]), argv, MACHINE_SECONDS, options)

    taken: dict[int, RankStacks] = {}
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, len(machines))) as pool:
        answers = list(pool.map(ask, machines))
    for machine, answer in zip(machines, answers, strict=True):
        said = f"machine {machine.get('machine_rank')} ({machine['host']})"
        try:
            if not answer.ok:
                why = answer.problem or (answer.stderr.strip().splitlines() or [f"exit {answer.returncode}"])[-1]
                raise ValueError(f"did not answer: {why}")
            got = stacks_from_json(json.loads(answer.stdout))
        except (ValueError, TypeError, AttributeError) as exc:
            problems.append(f"{said}: {exc}")
            continue
        paths.stacks.mkdir(parents=True, exist_ok=True)
        for rank, stacks in got.items():
            if stacks.text:
                paths.rank_stacks(rank).write_text(stacks.text, encoding="utf-8")
        taken.update(got)
    return taken, problems


def mirrored_stacks(paths: RunPaths, beats: Iterable[Beat], states: Mapping[int, str]) -> tuple[dict[int, RankStacks],
                                                                                              list[int]]:
    """At home, the stacks each machine's supervisor took of its ranks since they last moved, as the mirror brought
    them (a stacks file newer here than the rank's heartbeat), and a rank that `states` says is stopped as stopped;
    then the ranks with neither yet."""
    taken: dict[int, RankStacks] = {}
    missing = []
    for beat in sorted(beats, key=lambda b: b.rank):
        if states.get(beat.rank) == "stopped":
            taken[beat.rank] = RankStacks(beat.rank, beat.pid, "", state="stopped")
            continue
        try:
            fresh = paths.rank_stacks(beat.rank).stat().st_mtime >= paths.heartbeat(beat.rank).stat().st_mtime
            text = paths.rank_stacks(beat.rank).read_text(encoding="utf-8", errors="replace") if fresh else None
        except OSError:
            text = None
        if text is None:
            missing.append(beat.rank)
            continue
        how = ("py-spy" if text.startswith("Process ") else "faulthandler") if text else ""
        taken[beat.rank] = RankStacks(beat.rank, beat.pid, how, text, threads=parse_stacks(text))
    return taken, missing


def digest_data(paths: RunPaths, taken: Mapping[int, RankStacks], problems: Sequence[str] = ()) -> dict[str, Any]:
    """The digest of `taken`, a line for each machine that did not answer, and what the NCCL flight recorder's
    dumps in the run directory say (tuitrain.runs.nccl_trace)."""
    from tuitrain.runs.nccl_trace import read_traces, trace_lines, traces_json
    from tuitrain.runs.ranks import read_rank_records

    where = {rank: describe_rank(s) for rank, s in taken.items()}
    traces = read_traces(paths)
    world = max((int(r.get("world_size") or 0) for r in read_rank_records(paths).values()), default=0)
    data = {"time": time.time(), "lines": [*digest(where), *problems, *trace_lines(traces, world or None)],
            "ranks": {str(r): w for r, w in where.items()}, "how": {str(r): s.how for r, s in taken.items()}}
    if traces:
        data["flight_recorder"] = traces_json(traces)
    return data


def write_digest(paths: RunPaths, taken: Mapping[int, RankStacks], problems: Sequence[str] = ()) -> dict[str, Any]:
    """The digest (digest_data), also kept in stacks/digest.json (what `status` shows of a hung run)."""
    data = digest_data(paths, taken, problems)
    paths.stacks.mkdir(parents=True, exist_ok=True)
    write_json_atomic(paths.stacks_digest, data)
    return data


def gather(paths: RunPaths, record: Mapping[str, Any]) -> tuple[dict[int, RankStacks], dict[str, Any]]:
    """Every rank's stacks and their digest (kept in stacks/): what `tuitrain stacks` and the monitor's key show. Of a
    run that has ended, only what the NCCL flight recorder dumped (not kept: the hang's digest stays)."""
    from tuitrain.runs.liveness import effective_status

    status = effective_status(dict(record))
    if status not in LIVE_STATUSES:
        from tuitrain.runs.nccl_trace import trace_files

        if trace_files(paths):  # an NCCL timeout ended it: what its ranks' flight recorders dumped still says why
            return {}, digest_data(paths, {})
        raise StacksError(f"run {paths.id} is {status}: only a live run has stacks to take")
    taken = take_stacks(paths, record)
    problems: list[str] = []
    from tuitrain.runs.kind import run_kind

    if run_kind(record) == "machines":  # a run over SSH: every machine's ranks, through its node agent
        elsewhere, problems = machines_stacks(paths, record)
        taken = dict(sorted({**taken, **elsewhere}.items()))
    if not taken:
        raise StacksError(f"run {paths.id}: no rank of it runs on this machine (yet); nothing to take"
                          if not problems else f"run {paths.id}: no machine answered: " + "; ".join(problems))
    return taken, write_digest(paths, taken, problems)


def rank_block(stacks: RankStacks, where: str) -> list[str]:
    """A rank's heading and its main thread's frames, innermost first (or where it is, when it has no stack)."""
    head = f"rank {stacks.rank} (pid {stacks.pid}, {stacks.how or 'no stack'})"
    main = main_thread(stacks.threads)
    if main is None:
        return [head, "=" * len(head), where]
    lines = [head, "=" * len(head)]
    lines += [f"{f.func} {os.path.basename(f.file)}:{f.line}" for f in main.frames[:FRAMES_SHOWN]]
    if len(main.frames) > FRAMES_SHOWN:
        lines.append(f"… {len(main.frames) - FRAMES_SHOWN} more")
    others = len(stacks.threads) - 1
    if others:
        lines.append(f"(+{others} other thread{'s' if others > 1 else ''})")
    return lines


def read_digest(paths: RunPaths) -> dict[str, Any] | None:
    from tuitrain.atomic import read_json

    try:
        data = read_json(paths.stacks_digest)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("lines"), list) else None


def digest_text(data: Mapping[str, Any]) -> str:
    return "; ".join(str(line) for line in data.get("lines") or [])
