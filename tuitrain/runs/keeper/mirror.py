"""Mirroring a node's part of a run directory into the home run directory, as it is written.

The node side (`NodeFiles.changes`) reads what is new since the last call, by byte offset, like every viewer
does; the home side (`apply`) appends or replaces exactly those files, so a viewer at home reads a multi-machine
run as it reads a local one. Which files travel, and where they land, is decided here and only here:

    logs/rank-K.log      → logs/rank-K.log       (global rank numbers: unique across machines)
    logs/rank-K.times    → logs/rank-K.times     (when each line was written: rundir.linetimes)
    logs/launcher.log    → logs/machine-M.log    (each machine's accelerate launch and agent)
    events.jsonl         → events.jsonl          (whole lines only: several machines append to it)
    ranks/rank-K.json    → ranks/rank-K.json     (replaced whole when it changes)
    heartbeats/rank-K.json → the same            (the rank's step and phase, tuitrain.rundir.heartbeat: home judges
                                                  every machine's ranks for a hang; replaced whole when it changes)
    stacks/rank-K.txt    → the same              (the rank's stacks, taken on its machine: tuitrain.runs.view.stacks;
                                                  replaced whole when it changes; its data loader workers' stay)
    logs/nccl-trace-rank-K → the same            (the rank's NCCL flight recorder dump, written by PyTorch on a
                                                  watchdog timeout: sent in chunks as the logs are)
    (judged, no file)    → heartbeats/machine-M-states.json  (rank → its process's state, for the ranks whose state
                                                  says why they do not move: stopped by SIGSTOP; tuitrain.runs.view.hang
                                                  reads it; sent when it changes, looked at every STATES_SECONDS)
    machines/machine-M-samples.json → the same   (the machine's whole-run samples, tuitrain.runs.keeper.samples; replaced
                                                  whole when it changes)
    machines/machine-M-manifest.json → the same  (what the machine runs on, tuitrain.runs.keeper.manifest; replaced whole)
    machines/machine-M-git-K.diff    → the same  (the dirty diff of the manifest's code[K]; written once, sent in
                                                  chunks as the logs are)
    (sampled, no file)   → machines/machine-M-gpus.json  (the machine's latest GPUs, host CPU and RAM sample, sent by
                                                  its supervisor's sampling thread every samples.SAMPLE_SECONDS)
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuitrain.remote.wire import CHUNK, encode_bytes, write_into
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.keeper.samples import samples_path

if TYPE_CHECKING:
    from tuitrain.hardware.report import GpuReport

_HOME_PATH = re.compile(r"(logs/rank-\d+\.(log|times)|logs/machine-\d+\.log|events\.jsonl|ranks/rank-\d+\.json"
                        r"|heartbeats/rank-\d+\.json|heartbeats/machine-\d+-states\.json|stacks/rank-\d+\.txt|logs/nccl-trace-rank-\d+"
                        r"|machines/machine-\d+-(gpus|samples|manifest)\.json|machines/machine-\d+-git-\d+\.diff)\Z")


STATES_SECONDS = 2.0  # how often a node looks at its ranks' process states (as its supervisor judges a hang)
HOME = RunPaths(Path())  # the home run directory's names, relative (what travels names its home path)


class MirrorError(Exception):
    """A message that would write somewhere it must not."""


def machine_log(machine_rank: int) -> str:
    return str(HOME.machine_log(machine_rank))


def machine_gpus(machine_rank: int) -> str:
    """Where a machine's latest GPU and host sample lands at home (tuitrain.hardware.report's JSON)."""
    return str(HOME.machine_gpus(machine_rank))


def machine_states(machine_rank: int) -> str:
    """Where a machine's stopped ranks land at home (rank → state)."""
    return str(HOME.machine_states(machine_rank))


@dataclass
class NodeFiles:
    """What of a node's run directory has been sent home so far."""

    paths: RunPaths
    machine_rank: int
    offsets: dict[str, int] = field(default_factory=dict)  # home path → bytes sent
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)  # home path → (mtime_ns, size) sent
    states: dict[str, str] = field(default_factory=dict)  # the stopped ranks sent last (machine_states)
    states_at: float = 0.0

    @property
    def _whole_folders(self) -> tuple[tuple[Path, str], ...]:
        """The folders whose files travel whole, each with its files' pattern."""
        return ((self.paths.ranks, "rank-*.json"), (self.paths.heartbeats, "rank-*.json"),
                (self.paths.stacks, "rank-*.txt"))

    def _appendable(self) -> list[tuple[Path, str]]:
        files = [(self.paths.events, "events.jsonl"), (self.paths.launcher_log, machine_log(self.machine_rank))]
        if self.paths.logs.is_dir():
            files += [(p, f"logs/{p.name}") for p in sorted(self.paths.logs.glob("rank-*.log"))]
            files += [(p, f"logs/{p.name}") for p in sorted(self.paths.logs.glob("rank-*.times"))]
            files += [(p, f"logs/{p.name}") for p in sorted(self.paths.logs.glob("nccl-trace-rank-*"))
                      if _HOME_PATH.match(f"logs/{p.name}")]
        if self.paths.machines.is_dir():  # written once, before the manifest that names them; up to 1 MiB: chunked
            files += [(p, f"machines/{p.name}")
                      for p in sorted(self.paths.machines.glob(f"machine-{self.machine_rank}-git-*.diff"))]
        return files

    def changes(self, limit: int = 64) -> list[bytes]:
        """Messages for what is new (at most `limit` of them; call again for the rest)."""
        out: list[bytes] = []
        for local, home in self._appendable():
            while len(out) < limit:
                chunk = self._read_new(local, home)
                if not chunk:
                    break
                out.append(encode_bytes("append", home, chunk))
        whole = [(p, f"{folder.name}/{p.name}") for folder, pattern in self._whole_folders if folder.is_dir()
                 for p in sorted(folder.glob(pattern)) if _HOME_PATH.match(f"{folder.name}/{p.name}")]
        samples = samples_path(self.paths.root, self.machine_rank)
        whole.append((samples, f"machines/{samples.name}"))
        manifest = self.paths.machine_manifest(self.machine_rank)
        whole.append((manifest, f"machines/{manifest.name}"))
        for local, home in whole:
            try:
                info = local.stat()
                stamp = (info.st_mtime_ns, info.st_size)
                if self.stamps.get(home) == stamp or len(out) >= limit:
                    continue
                out.append(encode_bytes("file", home, local.read_bytes()))
            except OSError:
                continue  # not there yet, or being replaced: the next call sends it
            self.stamps[home] = stamp
        if len(out) < limit:
            out += self._states()
        return out

    def _states(self) -> list[bytes]:
        """This machine's stopped ranks, when that changed: home cannot see the processes of another machine."""
        now = time.monotonic()
        if now - self.states_at < STATES_SECONDS:
            return []
        self.states_at = now
        from tuitrain.rundir.record import RunRecordError, read_record
        from tuitrain.runs.view.hang import stopped_ranks

        try:
            states = {str(r): s for r, s in stopped_ranks(read_record(self.paths)).items()}
        except (OSError, RunRecordError):
            return []
        if states == self.states:
            return []
        self.states = states
        return [encode_bytes("file", machine_states(self.machine_rank), json.dumps(states).encode())]

    def _read_new(self, local: Path, home: str) -> bytes:
        offset = self.offsets.get(home, 0)
        try:
            with open(local, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(CHUNK)
        except OSError:
            return b""
        if home == "events.jsonl":  # whole lines only: home appends other machines' lines to the same file
            end = chunk.rfind(b"\n")
            chunk = chunk[: end + 1] if end >= 0 else b""
        self.offsets[home] = offset + len(chunk)
        return chunk


def apply(paths: RunPaths, message: dict[str, Any]) -> None:
    """Write one `append` or `file` message into the home run directory."""
    relative = str(message.get("path", ""))
    if not _HOME_PATH.match(relative):
        raise MirrorError(f"a node sent a file tuitrain does not mirror: {relative!r}")
    write_into(paths.root / relative, message)  # a log's bytes appended; a rank record, a samples file: whole


def read_machine_samples(paths: RunPaths) -> dict[int, GpuReport | str]:
    """machine rank → its latest GPU and host sample at home, or why it does not read (one being replaced is left
    out)."""
    from tuitrain.hardware.report import read_report

    folder = paths.root / "machines"
    samples: dict[int, GpuReport | str] = {}
    if not folder.is_dir():
        return samples
    for file in folder.glob("machine-*-gpus.json"):
        try:
            rank = int(file.name.split("-")[1])
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError, IndexError):
            continue
        samples[rank] = read_report(data)
    return samples
