"""Every rank's Python stacks, all threads, and a digest of where each group of ranks is.

Taken with `py-spy dump` where it is installed (it needs nothing of the rank), else by the signal on which each
rank's faulthandler writes stacks/rank-K.txt (tuitrain.engine.rank_io.register_stacks_dump). A stopped rank
(SIGSTOP) answers no signal: it is named as stopped. The digest is one line a group of ranks at the same place,
the ranks that are elsewhere first: "rank 1: in your script, train.py line 88 `time.sleep(…)`; rank 0: waiting in
broadcast (collective.py:21 → distributed_c10d.py:2400)".

A rank on another machine is reached by that machine: over SSH through its node agent (machines_stacks); a Slurm
job's nodes share the run directory, so each node's supervisor is asked there (CONTROL_STACKS in its node folder,
nodes_stacks) and answers from its own tick (answer_stacks_request)."""

from __future__ import annotations

import json
import linecache
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypedDict

from tuitrain.atomic import read_json, write_json_atomic
from tuitrain.errors import TuitrainError
from tuitrain.rundir.heartbeat import Beat
from tuitrain.rundir.json_shape import answered, checked
from tuitrain.rundir.layout import CONTROL_STACKS, STACKS_SIGNAL, RunPaths
from tuitrain.rundir.record import MachineEntry, RankKey, RunRecord

ANSWER_SECONDS = 5.0  # how long the ranks have to write their stacks
SETTLED_SECONDS = 0.3  # a stacks file that has not grown for this long is complete
PY_SPY_SECONDS = 10.0
MACHINE_SECONDS = 60.0  # another machine's answer: ssh, then its ranks' (py-spy, or faulthandler)
NODE_SECONDS = 20.0  # a node sharing the run directory (a Slurm job's): its supervisor's answer to CONTROL_STACKS
NODE_POLL_SECONDS = 0.1
FRAMES_SHOWN = 16  # of each rank's main thread in its block, innermost first; the files keep them all
LIVE_STATUSES = ("running", "stopping", "starting")
TUITRAIN_DIR = str(Path(__file__).resolve().parents[1])
_FAULTHANDLER_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)")
_FAULTHANDLER_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')
_PY_SPY_THREAD = re.compile(r"^Thread (\S+) (.*)$")
_PY_SPY_FRAME = re.compile(r"^\s+(\S.*?) \((.+):(\d+)\)$")
_WORKER_HEAD = re.compile(r"^# tuitrain: data loader worker (\d+) \(pid (\d+), ([\w-]*)\)$", re.MULTILINE)
_TAKEN = re.compile(r"^# tuitrain: taken, \d+ data loader workers?$", re.MULTILINE)


class StacksError(TuitrainError):
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
class WorkerStacks:
    """One of a rank's data loader workers (a process it forked: tuitrain.engine.rank_io registers its stacks)."""
    worker: int  # its number in its DataLoader (torch's worker id)
    pid: int
    how: str
    text: str = ""
    threads: tuple[Thread, ...] = field(default=())


@dataclass(frozen=True)
class RankStacks:
    rank: int
    pid: int | None
    how: str  # "py-spy", "faulthandler", or "" when none could be taken
    text: str = ""
    state: str | None = None  # the process's status when it explains a missing stack (stopped)
    threads: tuple[Thread, ...] = field(default=())
    workers: tuple[WorkerStacks, ...] = field(default=())


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


_DATA_LOADER_WAITS = ("_try_get_data", "_get_data")  # a DataLoader's iterator waiting for its workers' next batch
DATA_LOADER_WAIT = "waiting for its data loader"


def _place(frames: Sequence[Frame], at: int) -> str:
    """"(train.py:90 → distributed_c10d.py:2801)": the frame at `at`, after the first of its callers outside torch."""
    caller = next((f for f in frames[at + 1:] if "/torch/" not in f.file), None)
    via = f"{os.path.basename(caller.file)}:{caller.line} → " if caller else ""
    return f"({via}{os.path.basename(frames[at].file)}:{frames[at].line})"


def describe_thread(thread: Thread) -> str:
    frames = thread.frames
    if not frames:
        return "no Python frame"
    collective = [i for i, f in enumerate(frames) if "/torch/distributed/" in f.file]
    if collective:
        named = [i for i in collective if frames[i].file.endswith("distributed_c10d.py") and frames[i].func != "wrapper"]
        at = named[0] if named else collective[0]
        return f"waiting in {frames[at].func} {_place(frames, at)}"
    backward = next((i for i, f in enumerate(frames) if f.func == "_engine_run_backward"), None)
    if backward is not None:
        return f"in backward {_place(frames, backward)}"
    loading = next((i for i, f in enumerate(frames) if f.func in _DATA_LOADER_WAITS
                    and f.file.endswith(os.path.join("torch", "utils", "data", "dataloader.py"))), None)
    if loading is not None:
        return f"{DATA_LOADER_WAIT} {_place(frames, loading)}"
    yours = next((f for f in frames if is_yours(f.file)), None)
    if yours is not None:
        code = source_line(yours)
        return f"in your script, {os.path.basename(yours.file)} line {yours.line}" + (f" `{code}`" if code else "")
    return f"in {frames[0].func} ({os.path.basename(frames[0].file)}:{frames[0].line})"


def worker_thread(worker: WorkerStacks) -> Thread | None:
    """The thread that runs the worker's loop (the one that took the signal, else its first), without the frames it
    inherited from the rank when it was forked (those outside multiprocessing's `_bootstrap`)."""
    thread = next((t for t in worker.threads if t.current), worker.threads[0] if worker.threads else None)
    if thread is None:
        return None
    end = next((i for i, f in enumerate(thread.frames) if f.func == "_bootstrap" and "multiprocessing" in f.file),
               len(thread.frames))
    return Thread(thread.name, thread.frames[:end], thread.current)


def describe_worker(worker: WorkerStacks) -> str:
    """"worker 1 in train.py line 40 `time.sleep(…)`"."""
    thread = worker_thread(worker)
    if thread is None:
        return f"worker {worker.worker}: no stack"
    said = describe_thread(thread)
    return f"worker {worker.worker} " + (f"in {said.removeprefix('in your script, ')}"
                                         if said.startswith("in your script, ") else said)


def describe_workers(workers: Sequence[WorkerStacks]) -> str:
    """The workers in your code, each on its own (the others wait for work, or collate, in torch)."""
    def busy(worker: WorkerStacks) -> bool:
        thread = worker_thread(worker)
        return thread is not None and any(is_yours(f.file) for f in thread.frames)

    said = [describe_worker(w) for w in sorted(workers, key=lambda w: w.worker) if busy(w)]
    return "; ".join(said) if said else f"{len(workers)} worker{'s' if len(workers) > 1 else ''}, none in your code"


def describe_rank(stacks: RankStacks) -> str:
    main = main_thread(stacks.threads)
    if main is not None:
        said = describe_thread(main)
        if said.startswith(DATA_LOADER_WAIT) and stacks.workers:
            said = f"{DATA_LOADER_WAIT}; {describe_workers(stacks.workers)}"
        return said
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
    several = len(where) > 1  # a lone rank's backward waits for no one: DDP all-reduces only among several
    return [f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}: {text}"
            + (", where DDP all-reduces the gradients" if several and text.startswith("in backward") else "")
            for text, ranks in ordered]


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


def _workers_of(paths: RunPaths, rank: int, proc: Any) -> list[tuple[int, Any, Path]]:
    """(worker, process, its stacks file) of each live data loader worker of the rank, by the markers they wrote
    (tuitrain.engine.rank_io.register_worker_stacks_dump); the markers of workers that have ended are removed."""
    import psutil

    try:
        children = {c.pid: c for c in proc.children(recursive=True)}
    except psutil.Error:
        return []
    found = []
    for marker in paths.stacks.glob(f"rank-{rank}-*.json") if paths.stacks.is_dir() else ():
        try:
            data = read_json(marker)
            pid, worker, file = int(data["pid"]), int(data["worker"]), paths.stacks / str(data["file"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if pid in children:
            found.append((worker, children[pid], file))
        elif not psutil.pid_exists(pid):  # killed at the end of its epoch: its finalizer never ran
            marker.unlink(missing_ok=True)
            file.unlink(missing_ok=True)
    return sorted(found, key=lambda w: (w[0], w[1].pid))


def _ask(proc: Any, file: Path, spied: str | None) -> str | None:
    """The process's stacks by py-spy (`spied`, also written to `file`); else None once it is signalled to write them
    there."""
    if spied is not None:
        file.write_text(spied, encoding="utf-8")
        return spied
    os.truncate(file, 0)  # its faulthandler appends: the file is this dump alone
    os.kill(proc.pid, getattr(signal, STACKS_SIGNAL))
    return None


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def take_stacks(paths: RunPaths, record: RunRecord, timeout: float = ANSWER_SECONDS) -> dict[int, RankStacks]:
    """Every live rank's stacks on this machine (and its data loader workers'), each also in stacks/rank-K.txt."""
    from tuitrain.runs.liveness import live_processes

    procs = {int(role[5:]): proc for role, proc in live_processes(record).items()
             if role.startswith("rank ") and role[5:].isdecimal()}
    paths.stacks.mkdir(parents=True, exist_ok=True)
    taken: dict[int, RankStacks] = {}
    answers: dict[int, str | None] = {}  # rank -> its stacks (None: signalled, in its file once it answers)
    workers: dict[int, list[tuple[int, int, Path, str | None]]] = {}  # rank -> (worker, pid, file, stacks)
    for rank, proc in sorted(procs.items()):
        try:
            spied = _py_spy(proc.pid)
            if spied is None and proc.status() == "stopped":  # a signal would wait for a SIGCONT, and dump then
                taken[rank] = RankStacks(rank, proc.pid, "", state="stopped")
                continue
            answers[rank] = _ask(proc, paths.rank_stacks(rank), spied)
        except Exception as exc:  # noqa: BLE001 — OSError, or psutil.Error: gone meanwhile
            taken[rank] = RankStacks(rank, proc.pid, "", text=str(exc))
            continue
        for worker, child, file in _workers_of(paths, rank, proc):
            try:
                workers.setdefault(rank, []).append((worker, child.pid, file, _ask(child, file, _py_spy(child.pid))))
            except OSError:
                continue  # it ended meanwhile
    pending = [paths.rank_stacks(r) for r, text in answers.items() if text is None]
    pending += [file for listed in workers.values() for _, _, file, text in listed if text is None]
    _settled(pending, time.monotonic() + timeout)
    for rank, spied in answers.items():
        text = spied if spied is not None else _read(paths.rank_stacks(rank))
        how = ("py-spy" if spied is not None else "faulthandler") if text else ""
        its_workers = []
        for worker, pid, file, wspied in workers.get(rank, []):
            wtext = wspied if wspied is not None else _read(file)
            its_workers.append(WorkerStacks(worker, pid, ("py-spy" if wspied is not None else "faulthandler")
                                            if wtext else "", wtext, parse_stacks(wtext)))
        taken[rank] = RankStacks(rank, procs[rank].pid, how, text, threads=parse_stacks(text),
                                 workers=tuple(its_workers))
        with open(paths.rank_stacks(rank), "a", encoding="utf-8") as out:  # appended: the rank keeps its file open
            out.write(workers_part(its_workers))
    return dict(sorted(taken.items()))


def workers_part(workers: Sequence[WorkerStacks]) -> str:
    """What follows a rank's own stacks in stacks/rank-K.txt once they are taken: each data loader worker's stacks
    under a heading, then the line that says the file is whole. That file is what comes home from another machine
    (tuitrain.runs.keeper.mirror), part-written too, so home reads a rank's file only once whole (stacks_from_file)."""
    parts = [f"\n# tuitrain: data loader worker {w.worker} (pid {w.pid}, {w.how})\n{w.text.rstrip()}\n" for w in workers]
    return "".join(parts) + f"\n# tuitrain: taken, {len(workers)} data loader worker{'s' if len(workers) != 1 else ''}\n"


def _how(text: str) -> str:
    return ("py-spy" if text.startswith("Process ") else "faulthandler") if text.strip() else ""


def stacks_from_file(rank: int, pid: int | None, text: str) -> RankStacks | None:
    """A rank's stacks and its workers' from its stacks file as take_stacks left it (workers_part); None while the
    file is not whole (its rank's dump, or its workers', still being written or carried)."""
    taken = _TAKEN.search(text)
    if taken is None:
        return None
    heads = list(_WORKER_HEAD.finditer(text, 0, taken.start()))
    bounds = [*(head.start() for head in heads), taken.start()]
    own = text[:bounds[0]].rstrip("\n")
    workers = []
    for head, end in zip(heads, bounds[1:], strict=True):
        wtext = text[head.end():end].strip("\n")
        workers.append(WorkerStacks(int(head.group(1)), int(head.group(2)), head.group(3), wtext, parse_stacks(wtext)))
    return RankStacks(rank, pid, _how(own), own, threads=parse_stacks(own), workers=tuple(workers))


# -- on every machine of a run over SSH ------------------------------------------------------------------------------

class WorkerJson(TypedDict):
    worker: int
    pid: int
    how: str
    text: str


class _RankTextNeeded(TypedDict):
    pid: int | None
    how: str
    text: str


class RankTextJson(_RankTextNeeded, total=False):  # an older agent's answer has neither
    state: str | None
    workers: list[WorkerJson]


NodeStacksJson = dict[RankKey, RankTextJson]  # a node's answer, by rank


def stacks_json(taken: Mapping[int, RankStacks]) -> NodeStacksJson:
    """What a machine's node agent answers to `--stacks`: each of its ranks' stacks (and its workers'), as text."""
    return {str(r): {"pid": s.pid, "how": s.how, "state": s.state, "text": s.text,
                     "workers": [{"worker": w.worker, "pid": w.pid, "how": w.how, "text": w.text} for w in s.workers]}
            for r, s in taken.items()}


def stacks_from_json(data: object) -> dict[int, RankStacks]:
    """A node's `stacks_json` answer, checked (ValueError naming the key where it does not fit), as stacks."""
    answer: NodeStacksJson
    answer, why = answered(data, NodeStacksJson)  # a file's or a function's name may hold bytes that are not UTF-8
    if why is not None:
        raise ValueError(why)
    return {int(rank): RankStacks(int(rank), e["pid"], e["how"], e["text"], e.get("state"), parse_stacks(e["text"]),
                                  tuple(WorkerStacks(w["worker"], w["pid"], w["how"], w["text"], parse_stacks(w["text"]))
                                        for w in e.get("workers", ())))
            for rank, e in answer.items()}


def node_stacks(root: Path) -> NodeStacksJson:
    """A node agent's answer to `NODE_DIR --stacks`: the stacks of the ranks its node run directory records."""
    from tuitrain.rundir.record import read_record

    paths = RunPaths(root)
    return stacks_json(take_stacks(paths, read_record(paths)))


def machines_stacks(paths: RunPaths, machines: Sequence[MachineEntry],
                    ssh_config: str | None) -> tuple[dict[int, RankStacks], list[str]]:
    """The stacks of the ranks of `machines` (a run's record lists them), each machine asked at once through its node
    agent over ssh (`python -m tuitrain.runs.keeper.node_agent NODE_DIR --stacks WORKDIR`), each kept in
    stacks/rank-K.txt here; and a line for each machine that did not answer."""
    from tuitrain.remote import ssh
    from tuitrain.runs.keeper.node_command import agent_argv

    options = ssh.SshOptions(config=ssh_config)

    def ask(machine: MachineEntry) -> ssh.RemoteResult:
        return ssh.run(machine["host"], [*agent_argv(machine), "--stacks", machine["workdir"]], MACHINE_SECONDS, options)

    taken: dict[int, RankStacks] = {}
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, len(machines))) as pool:
        answers = list(pool.map(ask, machines))
    for machine, answer in zip(machines, answers, strict=True):
        said = f"machine {machine['machine_rank']} ({machine['host']})"
        try:
            if not answer.ok:
                why = answer.problem or (answer.stderr.strip().splitlines() or [f"exit {answer.returncode}"])[-1]
                raise ValueError(f"did not answer: {why}")
            got = stacks_from_json(json.loads(answer.stdout))
        except (ValueError, RecursionError) as exc:
            problems.append(f"{said}: {exc}")
            continue
        taken.update(keep_stacks(paths, got))
    return taken, problems


def keep_stacks(paths: RunPaths, got: Mapping[int, RankStacks]) -> Mapping[int, RankStacks]:
    """Stacks another machine or node took, each rank's text kept in stacks/rank-K.txt here (where `tuitrain stacks`
    names them)."""
    paths.stacks.mkdir(parents=True, exist_ok=True)
    for rank, stacks in got.items():
        text = stacks.text + workers_part(stacks.workers)
        if stacks.text and _read(paths.rank_stacks(rank)) != text:
            paths.rank_stacks(rank).write_text(text, encoding="utf-8")
    return got


# -- on every node of a job that shares the run directory (Slurm) ----------------------------------------------------

def answer_stacks_request(paths: RunPaths, record: RunRecord) -> bool:
    """A node's supervisor, once a tick: when its control/ holds CONTROL_STACKS, take its own ranks' stacks (into its
    stacks/), answer with them in stacks/taken.json, then remove the request. True when it answered."""
    request = paths.control_request(CONTROL_STACKS)
    if not request.exists():
        return False
    try:
        answer = stacks_json(take_stacks(paths, record))
    except Exception as exc:  # noqa: BLE001 — the asker is told there is nothing, never left waiting
        answer = {}
        print(f"tuitrain: could not take the stacks: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    write_json_atomic(paths.stacks_taken, answer)
    request.unlink(missing_ok=True)
    return True


def nodes_stacks(paths: RunPaths, nodes: Mapping[int, RunPaths],
                 timeout: float = NODE_SECONDS) -> tuple[dict[int, RankStacks], list[str]]:
    """The stacks of the ranks of `nodes` (machine rank -> its folder, RunPaths.nodes), nodes that share this run
    directory on their filesystem: each node's supervisor is asked by CONTROL_STACKS in its control/ and answers
    (answer_stacks_request), all at once; each rank's stacks are kept in stacks/rank-K.txt here too. And a line for
    each node that did not answer within `timeout` (its request is taken back)."""
    for node in nodes.values():
        node.stacks_taken.unlink(missing_ok=True)
        node.control.mkdir(parents=True, exist_ok=True)
        node.control_request(CONTROL_STACKS).touch()
    deadline = time.monotonic() + timeout
    waiting = dict(nodes)
    while waiting and time.monotonic() < deadline:
        time.sleep(NODE_POLL_SECONDS)
        waiting = {m: node for m, node in waiting.items() if node.control_request(CONTROL_STACKS).exists()}
    taken: dict[int, RankStacks] = {}
    problems = []
    for machine, node in nodes.items():
        if machine in waiting:
            node.control_request(CONTROL_STACKS).unlink(missing_ok=True)
            problems.append(f"node {machine}: its supervisor did not answer within {timeout:.0f}s")
            continue
        try:
            taken.update(keep_stacks(paths, stacks_from_json(read_json(node.stacks_taken))))
        except (OSError, ValueError, RecursionError) as exc:
            problems.append(f"node {machine}: its answer could not be read ({exc})")
    return dict(sorted(taken.items())), problems


def mirrored_stacks(paths: RunPaths, beats: Iterable[Beat], states: Mapping[int, str]) -> tuple[dict[int, RankStacks],
                                                                                              list[int]]:
    """At home, the stacks each machine's supervisor took of its ranks (and their data loader workers) since they last
    moved, as the mirror brought them (a whole stacks file newer here than the rank's heartbeat), and a rank that
    `states` says is stopped as stopped; then the ranks with neither yet."""
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
        stacks = stacks_from_file(beat.rank, beat.pid, text) if text is not None else None
        if stacks is None:
            missing.append(beat.rank)
            continue
        taken[beat.rank] = stacks
    return taken, missing


class _DigestNeeded(TypedDict):
    time: float  # when it was taken
    lines: list[str]


class Digest(_DigestNeeded, total=False):
    """stacks/digest.json: the digest's lines, where each rank is and how its stacks were taken, the flight
    recorder's dumps (what `status` and the monitor show of a hung run, checked where read)."""

    ranks: dict[RankKey, str]
    how: dict[RankKey, str]
    flight_recorder: Any


def digest_data(paths: RunPaths, taken: Mapping[int, RankStacks], problems: Sequence[str] = ()) -> Digest:
    """The digest of `taken`, a line for each machine that did not answer, and what the NCCL flight recorder's
    dumps in the run directory say (tuitrain.runs.view.nccl_trace)."""
    from tuitrain.rundir.ranks import read_rank_records
    from tuitrain.runs.view.nccl_trace import read_traces, trace_lines, traces_json

    where = {rank: describe_rank(s) for rank, s in taken.items()}
    traces = read_traces(paths)
    world = max((r.get("world_size", 0) for r in read_rank_records(paths).values()), default=0)
    data: Digest = {"time": time.time(), "lines": [*digest(where), *problems, *trace_lines(traces, world or None)],
                    "ranks": {str(r): w for r, w in where.items()}, "how": {str(r): s.how for r, s in taken.items()}}
    if traces:
        data["flight_recorder"] = traces_json(traces)
    return data


def write_digest(paths: RunPaths, taken: Mapping[int, RankStacks], problems: Sequence[str] = ()) -> Digest:
    """The digest (digest_data), also kept in stacks/digest.json (what `status` shows of a hung run)."""
    data = digest_data(paths, taken, problems)
    paths.stacks.mkdir(parents=True, exist_ok=True)
    write_json_atomic(paths.stacks_digest, data)
    return data


def gather(paths: RunPaths, record: RunRecord,
           take: Callable[[RunPaths, RunRecord], tuple[dict[int, RankStacks], list[str]]],
           ) -> tuple[dict[int, RankStacks], Digest]:
    """Every rank's stacks and their digest (kept in stacks/): what `tuitrain stacks` and the monitor's key show,
    taken by `take` (its backend's `take_stacks`: wherever its ranks run). Of a run that has ended, only what the NCCL
    flight recorder dumped (not kept: the hang's digest stays)."""
    from tuitrain.runs.liveness import effective_status

    status = effective_status(record)
    if status not in LIVE_STATUSES:
        from tuitrain.runs.view.nccl_trace import trace_files

        if trace_files(paths):  # an NCCL timeout ended it: what its ranks' flight recorders dumped still says why
            return {}, digest_data(paths, {})
        raise StacksError(f"run {paths.id} is {status}: only a live run has stacks to take")
    taken, problems = take(paths, record)
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
    if stacks.workers:
        lines.append(f"(+{len(stacks.workers)} data loader worker{'s' if len(stacks.workers) > 1 else ''}, "
                     "in stacks/ too)")
    return lines


def threads_block(stacks: RankStacks, where: str) -> list[str]:
    """A rank's heading and every thread's frames, all of them, innermost first: its main thread first, then the
    others as taken, then its data loader workers' (what stacks/rank-K.txt keeps, read as rank_block reads it)."""
    head = f"rank {stacks.rank} (pid {stacks.pid}, {stacks.how or 'no stack'})"
    if not stacks.threads:
        return [head, "=" * len(head), where]
    main = main_thread(stacks.threads)
    lines = [head, "=" * len(head)]
    for thread in [main, *(t for t in stacks.threads if t is not main)] if main else stacks.threads:
        lines.append(_thread_head(thread, main=thread is main))
        lines += [f"  {f.func} {os.path.basename(f.file)}:{f.line}" for f in thread.frames]
    for worker in stacks.workers:
        lines.append(f"data loader worker {worker.worker} (pid {worker.pid}, {worker.how or 'no stack'})")
        for thread in worker.threads:
            lines.append("  " + _thread_head(thread, main=False))
            lines += [f"    {f.func} {os.path.basename(f.file)}:{f.line}" for f in thread.frames]
    return lines


def _thread_head(thread: Thread, main: bool) -> str:
    marks = [m for m, on in (("main", main), ("took the signal", thread.current)) if on]
    frames = f"{len(thread.frames)} frame{'s' if len(thread.frames) != 1 else ''}"
    return f"{thread.name} ({', '.join([*marks, frames])}):"


def read_digest(paths: RunPaths) -> Digest | None:
    """The digest kept in stacks/digest.json; None where there is none, or it does not check (damaged)."""
    try:
        data, why = checked(paths.stacks_digest.read_bytes(), Digest)
    except OSError:
        return None
    return data if why is None else None


def digest_text(data: Digest) -> str:
    return "; ".join(data["lines"])
