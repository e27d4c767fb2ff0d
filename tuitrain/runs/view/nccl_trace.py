"""The NCCL flight recorder's dumps of a run, read into the digest: which ranks dumped, each one's last
collective (its op, sequence number and state) and which rank is behind the others.

PyTorch writes a rank's dump (on CUDA runs tuitrain turns the recorder on: tuitrain.launch.flight_recorder) when
NCCL's watchdog times out, into logs/nccl-trace-rank-N: a pickle of plain data, `{"version", "pg_config",
"pg_status", "entries": [{"record_id", "process_group": (name, desc), "collective_seq_id", "p2p_seq_id",
"profiling_name": "nccl:all_reduce", "state": "scheduled" | "started" | "completed", "frames", ...}, ...]}` (the
format torch.distributed.flight_recorder reads). It is read with an unpickler that builds nothing but plain
containers: a file that asks for any other class is refused, never run."""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from tuitrain.launch.flight_recorder import TRACE_FILE_PREFIX
from tuitrain.rundir.layout import RunPaths

MAX_DUMP_BYTES = 256 * 1024 * 1024  # 2000 entries with their frames are a few MiB; anything far larger is no dump
LABEL = "NCCL flight recorder"


def _same(value: object, *_: object) -> object:
    return value


# builtins that build plain containers, and torch's own rebuilders of typed lists (identity functions in PyTorch,
# torch/jit/_pickle.py), here without importing torch
_ALLOWED: dict[tuple[str, str], Any] = {
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "tuple"): tuple,
    ("builtins", "list"): list, ("builtins", "dict"): dict,
    **{("torch.jit._pickle", name): _same for name in
       ("build_intlist", "build_doublelist", "build_boollist", "build_tensorlist", "restore_type_tag")},
}


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which is no plain data") from None

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it refers to data outside the file")


class DumpError(Exception):
    """Why a dump could not be read, in words."""


def read_dump(path: Path) -> dict[str, Any]:
    """The dump at `path` as plain data; DumpError when it is no flight recorder dump (or half written)."""
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise DumpError(f"{size} bytes, more than a flight recorder dump")
        data = _PlainUnpickler(io.BytesIO(path.read_bytes())).load()
    except OSError as exc:
        raise DumpError(exc.strerror or str(exc)) from None
    except Exception as exc:  # noqa: BLE001 — pickle raises many kinds on a broken or truncated file
        raise DumpError(f"not a readable pickle ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise DumpError("no flight recorder dump (no list of entries)")
    return data


@dataclass(frozen=True)
class LastCollective:
    """A rank's last collective as its dump records it; `problem` instead when the dump could not be read, and
    `op` empty when it recorded none."""
    rank: int
    op: str = ""  # "all_reduce": the profiling name without its backend
    seq: int | None = None  # its collective sequence number in its process group
    state: str = ""  # "scheduled" (enqueued), "started" (waiting for the other ranks), "completed"
    group: str = ""  # the process group's name
    problem: str = ""

    def said(self) -> str:
        if self.problem:
            return f"dump unreadable: {self.problem}"
        if not self.op:
            return "no collective recorded"
        return f"last collective {self.op} #{self.seq}, {self.state}"


def _record_id(entry: Mapping[str, Any]) -> int:
    number = entry.get("record_id")
    return number if isinstance(number, int) else -1


def last_collective(rank: int, dump: Mapping[str, Any]) -> LastCollective:
    """The collective the rank recorded last (the highest record id; point-to-point operations aside)."""
    entries = [e for e in dump.get("entries") or [] if isinstance(e, Mapping) and not e.get("is_p2p")
               and isinstance(e.get("collective_seq_id"), int)]
    if not entries:
        return LastCollective(rank)
    last = max(entries, key=_record_id)
    group = last.get("process_group")
    name = str(group[0]) if isinstance(group, (tuple, list)) and group else str(last.get("pg_id", ""))
    return LastCollective(rank, str(last.get("profiling_name") or "?").split(":")[-1], int(last["collective_seq_id"]),
                          str(last.get("state") or "?"), name)


def trace_files(paths: RunPaths) -> dict[int, Path]:
    """rank -> its dump, for each rank that left one in the run directory."""
    prefix = paths.root / TRACE_FILE_PREFIX
    found = {}
    for path in prefix.parent.glob(prefix.name + "*") if prefix.parent.is_dir() else ():
        number = path.name[len(prefix.name):]
        if number.isdecimal() and path.is_file():
            found[int(number)] = path
    return dict(sorted(found.items()))


def read_traces(paths: RunPaths) -> dict[int, LastCollective]:
    """rank -> its last collective, for each rank that dumped."""
    out = {}
    for rank, path in trace_files(paths).items():
        try:
            out[rank] = last_collective(rank, read_dump(path))
        except DumpError as exc:
            out[rank] = LastCollective(rank, problem=str(exc))
    return out


def behind(traces: Mapping[int, LastCollective]) -> list[int]:
    """The ranks whose last collective in a process group comes before the others' there: the ones the others
    wait for (empty when every rank that dumped reached the same one)."""
    by_group: dict[str, dict[int, int]] = {}
    for t in traces.values():
        if t.seq is not None:
            by_group.setdefault(t.group, {})[t.rank] = t.seq
    late = {rank for seqs in by_group.values() if len(seqs) > 1
            for rank, seq in seqs.items() if seq < max(seqs.values())}
    return sorted(late)


def _ranks(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def trace_lines(traces: Mapping[int, LastCollective], world_size: int | None = None) -> list[str]:
    """The digest's lines for the dumps: which ranks dumped (and which did not), then one line a group of ranks at
    the same last collective, the ranks that are behind first. Empty when no rank dumped."""
    if not traces:
        return []
    missing = [r for r in range(world_size or 0) if r not in traces]
    late = behind(traces)
    head = f"{LABEL} ({TRACE_FILE_PREFIX}K): {_ranks(sorted(traces))} dumped"
    head += f"; {_ranks(missing)} did not" if missing else ""
    head += f"; {_ranks(late)} behind" if late else ""
    groups: dict[str, list[int]] = {}
    for rank, t in sorted(traces.items()):
        groups.setdefault(t.said() + (" (behind)" if rank in late else ""), []).append(rank)
    ordered = sorted(groups.items(), key=lambda g: (not any(r in late for r in g[1]), len(g[1]), g[1][0]))
    return [head, *(f"{LABEL}, {_ranks(ranks)}: {text}" for text, ranks in ordered)]


def traces_json(traces: Mapping[int, LastCollective]) -> dict[str, Any]:
    """What digest.json keeps of them: rank -> its last collective, and the ranks behind."""
    return {"ranks": {str(r): {"op": t.op, "seq": t.seq, "state": t.state, "group": t.group, "problem": t.problem}
                      for r, t in traces.items()}, "behind": behind(traces)}
