"""A node agent: one machine's part of a multi-machine run, `python -m tuitrain.runs.keeper.node_agent`.

The home supervisor starts it over ssh and sends, as the first line on its stdin, everything the machine needs
(the frozen profile, this machine's accelerate config and the run's record). The agent then is the supervisor of
this machine's ranks (the same `Supervisor`, in a node run directory under `workdir`) and, over the same ssh
channel, mirrors that directory home as it is written, answers home's beats and takes its control requests.

The link home is watched both ways: ssh's stdin closing, or no word from home for SILENCE_SECONDS, ends this
machine's ranks at once (a command started over ssh outlives a dead connection unless it watches for itself).

What the agent writes after its link closed cannot travel on it: home asks for it over a new ssh,
`python -m tuitrain.runs.keeper.node_agent NODE_DIR --last-words WORKDIR OFFSET PID`, which waits (bounded) for the agent
to end and prints its log from OFFSET (the bytes home already has) on.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from tuitrain.atomic import write_text_atomic
from tuitrain.errors import TuitrainError
from tuitrain.hardware.host import physical_cores
from tuitrain.launch.planner import arrival_env
from tuitrain.remote.wire import BEAT_SECONDS, SILENCE_SECONDS, WireError, decode, encode, encode_bytes, send
from tuitrain.rundir.layout import CONTROL_REQUESTS, CONTROL_TERMINATE, RunPaths
from tuitrain.rundir.process_tree import alive
from tuitrain.rundir.ranks import RankRecord
from tuitrain.rundir.record import INHERITED_KEYS, new_record, reserve_space, write_record
from tuitrain.rundir.redirect import redirect_output
from tuitrain.runs.keeper.mirror import NodeFiles, machine_gpus
from tuitrain.runs.keeper.supervisor import Supervisor, log
from tuitrain.runs.keeper.workers import Outcome

SETUP_TIMEOUT = 30.0
LAST_WORDS_WAIT = 20.0  # how long --last-words waits for the agent to end (it ends its ranks first)
LAST_WORDS_BYTES = 256 * 1024  # at most this much of the agent's log's end is sent home
MIRROR_SECONDS = 0.2  # how often new bytes are sent home (the watch loop's period on a node)
RECORD_KEYS = ("argv", "env", *INHERITED_KEYS)  # what this machine's record takes from the setup message


class SetupError(TuitrainError):
    """Why this machine cannot take its part, in one line (sent home as the machine's end)."""


class HomeLink:
    """The ssh channel home: a thread reads home's messages; `send` writes ours (from any thread)."""

    def __init__(self, incoming: IO[bytes], outgoing: IO[bytes]) -> None:
        self.incoming = incoming
        self.outgoing = outgoing
        self.heard = time.monotonic()
        self.closed = False
        self.requests: list[str] = []  # control requests not yet written to the control folder
        self.terminate_reason: str | None = None
        self._lock = threading.Lock()

    def read_setup(self, timeout: float = SETUP_TIMEOUT) -> dict[str, Any]:
        ready, _, _ = select.select([self.incoming], [], [], timeout)
        if not ready:
            raise SetupError(f"no setup from home within {timeout:.0f} s")
        line = self.incoming.readline()
        message = decode(line)
        if message["t"] != "setup":
            raise SetupError(f"home's first message was {message['t']!r}, not setup")
        return message

    def listen(self) -> None:
        threading.Thread(target=self._read, name="home-link", daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.incoming:
                try:
                    message = decode(line)
                except WireError:
                    continue
                self.heard = time.monotonic()
                if message["t"] == "control" and message.get("name") in CONTROL_REQUESTS:
                    self.requests.append(str(message["name"]))
                elif message["t"] == "terminate":
                    self.terminate_reason = str(message.get("why") or "home ended the run")
                    self.requests.append(CONTROL_TERMINATE)
        except (OSError, ValueError):
            pass
        self.closed = True

    def send(self, message: bytes) -> bool:
        with self._lock:
            ok = send(self.outgoing, message)
        if not ok:
            self.closed = True
        return ok

    def lost(self) -> str | None:
        """Why home can no longer be heard, or None."""
        if self.closed:
            return "its ssh link home closed"
        silent = time.monotonic() - self.heard
        if silent > SILENCE_SECONDS:
            return f"no word from home for {silent:.0f} s (the link is down?)"
        return None


class NodeSupervisor(Supervisor):
    END_WITH_RANKS = False  # home judges the run from every machine's word
    RESTARTS_HERE = False  # home restarts the whole run, every machine's part afresh

    def __init__(self, paths: RunPaths, link: HomeLink, machine_rank: int) -> None:
        super().__init__(paths)
        self.link = link
        self.files = NodeFiles(paths, machine_rank)
        self.relayed: set[str] = set()
        self.beat_at = 0.0
        self.link_lost: str | None = None
        self.poll_seconds = MIRROR_SECONDS
        self.mps: bool | None = None

    def tick(self) -> None:
        now = time.monotonic()
        for name in self.link.requests[:]:
            self.link.requests.remove(name)
            self.paths.control.mkdir(exist_ok=True)
            self.paths.control_request(name).touch()
            self.relayed.add(name)
        for name in sorted(self.relayed):
            if not self.paths.control_request(name).exists():  # rank 0 acted on it
                self.relayed.discard(name)
                self.link.send(encode("consumed", name=name))
        self.mirror()
        if now - self.beat_at >= BEAT_SECONDS:
            self.beat_at = now
            self.link.send(encode("beat"))
        lost = self.link.lost()
        if lost and self.link_lost is None and not self.terminating:
            self.link_lost = lost
            self.terminating = True
            log(f"{lost}: ending this machine's ranks")
            self.update(status="stopping")
            self.workers.terminate(lost)

    def sampled(self, snapshot: Any) -> None:
        """Each sample of this machine (the supervisor's sampling thread, every samples.SAMPLE_SECONDS) goes home as
        machines/machine-M-gpus.json, as `tuitrain gpus --json` prints it; the whole-run samples file travels as
        the mirror's other files do."""
        import json

        from tuitrain.hardware.report import to_json

        super().sampled(snapshot)
        if self.mps is None:
            from tuitrain.hardware.mps import mps_available

            self.mps = mps_available()
        self.link.send(encode_bytes("file", machine_gpus(self.files.machine_rank),
                                    json.dumps(to_json(snapshot, self.mps), default=str).encode()))

    def mirror(self) -> None:
        for message in self.files.changes():
            if not self.link.send(message):
                return

    def outcome(self, launcher_code: int, records: dict[int, RankRecord], cause: Any) -> Outcome:
        if self.link_lost:
            return "failed", None, f"this machine's ranks were ended: {self.link_lost}"
        if self.terminating and self.link.terminate_reason:
            return "killed", None, self.link.terminate_reason
        return super().outcome(launcher_code, records, cause)

    def report_end(self) -> None:
        """Send what is left of the files, then this machine's outcome."""
        for _ in range(10_000):
            changes = self.files.changes()
            if not changes or not all(self.link.send(m) for m in changes):
                break
        run = self.run
        self.link.send(encode("end", status=run.status, error=run.error, failed_rank=run.failed_rank,
                              exit_codes=run.exit_codes))


def node_root(workdir: Path, node_dir: str) -> Path:
    """The node run directory `node_dir` names, read from `workdir` (a relative or ~ path)."""
    return (workdir / Path(os.path.expanduser(node_dir))).resolve()


def prepare(setup: dict[str, Any]) -> RunPaths:
    """The node run directory, with its frozen inputs and record; its logs go to logs/launcher.log."""
    workdir = Path(os.path.expanduser(str(setup["workdir"])))
    try:
        os.chdir(workdir)
    except OSError as exc:
        raise SetupError(f"its workdir {workdir} cannot be entered ({exc.strerror}): create it there, or set the "
                         "machine's workdir in the profile") from exc
    root = node_root(Path.cwd(), str(setup["node_dir"]))
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        root.mkdir()
    except FileExistsError as exc:
        raise SetupError(f"{root} already exists there (a run with this id was started before)") from exc
    except OSError as exc:
        raise SetupError(f"cannot create {root} there ({exc.strerror})") from exc
    paths = RunPaths(root)
    paths.logs.mkdir()
    paths.control.mkdir()
    for name, text in (setup.get("files") or {}).items():
        if name in ("profile.toml", "accelerate.yaml"):
            write_text_atomic(root / name, str(text))
    given = dict(setup.get("record") or {})
    # the plan, made at home, knew neither this machine's cores nor where its tuitrain is
    given["env"] = arrival_env(given.get("env") or {}, physical_cores(), int(setup.get("processes_here") or 1))
    record = new_record(str(setup["run_id"]), str(setup.get("profile") or "profile"), cwd=str(workdir),
                        machine_rank=int(setup["machine_rank"]), home=setup.get("home"),
                        **{k: given[k] for k in RECORD_KEYS if k in given})
    write_record(paths, record)
    reserve_space(paths)
    return paths


def last_words(root: Path, offset: int, pid: int, wait: float = LAST_WORDS_WAIT) -> bytes:
    """The agent's log from `offset` on, once the agent `pid` has ended (or after `wait` seconds): what it said
    after its link home closed. At most LAST_WORDS_BYTES of its end, after a line saying how much was left out."""
    deadline = time.monotonic() + wait
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        with open(RunPaths(root).launcher_log, "rb") as handle:
            handle.seek(max(0, offset))
            data = handle.read()
    except OSError as exc:
        return f"[tuitrain] the agent's log cannot be read there: {exc}\n".encode()
    if len(data) > LAST_WORDS_BYTES:
        left_out = len(data) - LAST_WORDS_BYTES
        data = (f"\n[tuitrain] {left_out} bytes of the agent's log left out here: see {RunPaths(root).launcher_log} "
                "on its machine\n").encode() + data[left_out:]
    return data


def print_last_words(args: list[str]) -> int:
    """`NODE_DIR --last-words WORKDIR OFFSET PID`: the agent's last words on stdout."""
    node_dir, _, workdir, offset, pid = args
    sys.stdout.buffer.write(last_words(node_root(Path(os.path.expanduser(workdir)), node_dir), int(offset), int(pid)))
    sys.stdout.buffer.flush()
    return 0


def print_stacks(args: list[str]) -> int:
    """`NODE_DIR --stacks WORKDIR`: this machine's ranks' stacks as JSON on stdout (`tuitrain stacks` at home)."""
    import json

    from tuitrain.runs.view.stacks import node_stacks

    node_dir, _, workdir = args
    print(json.dumps(node_stacks(node_root(Path(os.path.expanduser(workdir)), node_dir))))
    return 0


def main() -> int:
    if sys.argv[2:3] == ["--last-words"]:
        return print_last_words(sys.argv[1:])
    if sys.argv[2:3] == ["--stacks"]:
        return print_stacks(sys.argv[1:])
    outgoing = os.fdopen(os.dup(1), "wb", buffering=0)
    incoming = os.fdopen(os.dup(0), "rb")
    link = HomeLink(incoming, outgoing)
    try:
        setup = link.read_setup()
        paths = prepare(setup)
    except (TuitrainError, WireError, OSError, KeyError, ValueError) as exc:
        why = str(exc) if isinstance(exc, TuitrainError) else f"could not set up ({type(exc).__name__}: {exc})"
        link.send(encode("end", status="failed", error=why, failed_rank=None, exit_codes={}))
        return 1
    redirect_output(paths.launcher_log)  # what this process and its children print: not into the wire
    link.send(encode("hello", node_dir=str(paths.root), pid=os.getpid(), host=os.uname().nodename))
    link.listen()
    machine_rank = int(setup["machine_rank"])
    supervisor = NodeSupervisor(paths, link, machine_rank)
    from tuitrain.runs.keeper.supervisor import run_supervisor

    status = run_supervisor(supervisor)
    supervisor.report_end()
    return 0 if status in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())
