"""The workers of a multi-machine run as its home keeps them: one node agent per machine, started over ssh.

The keeper (tuitrain.runs.keeper.supervisor.Supervisor, given these workers by tuitrain.runs.keeper.supervise) keeps the home
run directory true, as for a single-machine run; these workers mirror every node's files in (tuitrain.runs.keeper.mirror),
relay control requests (save-now and evaluate-now to the machine of global rank 0, which decides for every rank;
stop and terminate to all), and gather every machine's word of its end.

The run ends everywhere when any part of it ends badly: a machine whose ranks failed, an agent that ended without
a word, or a machine silent for SILENCE_SECONDS (its link is down) makes every other machine end its ranks. The
failure recorded is the root cause: a machine whose ranks died only because a peer went away (a gloo or NCCL
connection error) is not blamed while another machine's failure arrives within FAILURE_WINDOW seconds.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from tuitrain.remote import ssh
from tuitrain.remote.wire import BEAT_SECONDS, SILENCE_SECONDS, WireError, decode, encode, send
from tuitrain.rundir.layout import CONTROL_EVALUATE, CONTROL_REQUESTS, CONTROL_SAVE, CONTROL_TERMINATE, KILL_REQUEST
from tuitrain.rundir.process_tree import identity, signal_name
from tuitrain.rundir.ranks import RankRecord, read_rank_records
from tuitrain.rundir.record import MachineEntry, inherited
from tuitrain.runs.keeper.mirror import MirrorError, apply, machine_log
from tuitrain.runs.keeper.node_command import agent_argv
from tuitrain.runs.keeper.supervisor_log import log
from tuitrain.runs.keeper.workers import Keeper, Outcome, Settled
from tuitrain.yaml_text import dump as dump_yaml

POLL_SECONDS = 0.1
FAILURE_WINDOW = 3.0  # after a first failure, how long to wait for a likelier root cause from another machine
TEARDOWN_SECONDS = 30.0  # after asking every machine to end, how long before their ssh links are cut
LAST_WORDS_SECONDS = 40.0  # the new ssh that brings a machine's last words home (its agent may take 20 s to end)
HANG_STACKS_SECONDS = 30.0  # after a step's limit, how much longer home waits for every machine's stacks of a hang
_PEER_GONE = re.compile(r"connection (closed|reset) by peer|broken pipe|gloo|nccl|timed out|socket", re.IGNORECASE)
_TO_MAIN_ONLY = (CONTROL_SAVE, CONTROL_EVALUATE)  # global rank 0 reads these and tells every rank


@dataclass
class Failure:
    host: str
    machine_rank: int
    error: str
    failed_rank: int | None = None
    secondary: bool = False  # most likely a consequence of another machine's failure


@dataclass
class MachineLink:
    machine: MachineEntry
    proc: subprocess.Popen[bytes]
    heard: float
    stderr: bytearray = field(default_factory=bytearray)
    hello: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    closed: bool = False  # its ssh stdout ended
    stderr_reader: threading.Thread | None = None

    def said(self) -> str:
        """All ssh wrote on stderr; call once ssh has ended (its reader may still be draining the pipe)."""
        if self.stderr_reader is not None:
            self.stderr_reader.join(timeout=2)
        return self.stderr.decode(errors="replace")

    @property
    def host(self) -> str:
        return str(self.machine["host"])

    @property
    def rank(self) -> int:
        return int(self.machine["machine_rank"])

    @property
    def done(self) -> bool:
        return self.end is not None or self.closed

    def send(self, message: bytes) -> bool:
        return self.proc.stdin is not None and send(self.proc.stdin, message)


def _read_stdout(rank: int, stream: IO[bytes], inbox: queue.Queue[tuple[int, dict[str, Any] | None]]) -> None:
    try:
        for line in stream:
            try:
                inbox.put((rank, decode(line)))
            except WireError:
                continue  # a login banner or the like: not ours
    except (OSError, ValueError):
        pass
    inbox.put((rank, None))


def _read_stderr(stream: IO[bytes], into: bytearray) -> None:
    try:
        for line in stream:
            into.extend(line)
            del into[:-8192]
    except (OSError, ValueError):
        pass


class MachineLinks:
    STOP_SAID = "stop requested: every machine's ranks save a checkpoint and stop"
    KILLED_SAID = f"ended by {KILL_REQUEST}: every process on every machine was terminated"
    HANG_SAID = "{said}; every machine takes its ranks' stacks (and acts on on_hang = {on_hang})"
    SAMPLED_HERE = False  # each machine's own supervisor samples it; its files come home
    ACTS_ON_HANG = False  # each machine's supervisor acts on `[run] on_hang` for its ranks

    def __init__(self, keeper: Keeper) -> None:
        self.keeper = keeper
        self.paths = keeper.paths
        self.options = ssh.SshOptions(config=keeper.run.ssh_config)
        self.links: list[MachineLink] = []
        self.inbox: queue.Queue[tuple[int, dict[str, Any] | None]] = queue.Queue()
        self.failures: list[Failure] = []
        self.relayed: set[str] = set()
        self.teardown_since: float | None = None
        self.beat_at = 0.0
        self.fetchers: list[threading.Thread] = []  # bringing last words home (bring_last_words)
        self.hang_digest_due: float | None = None  # until when home waits for a hang's stacks

    # -- start -------------------------------------------------------------------------------
    def setup_message(self, machine: MachineEntry) -> bytes:
        record = self.keeper.record
        node_record = {**inherited(record),
                       "argv": machine["argv"], "env": machine["env"], "accelerator": machine["accelerator"]}
        files = {"profile.toml": self.paths.profile.read_text(encoding="utf-8"),
                 "accelerate.yaml": dump_yaml(machine["accelerate_config"])}
        return encode("setup", run_id=self.paths.id, profile=self.keeper.run.profile, machine_rank=machine["machine_rank"],
                      workdir=machine["workdir"], node_dir=machine["node_dir"], home=os.uname().nodename,
                      processes_here=machine.get("num_processes"), record=node_record, files=files)

    def start(self) -> None:
        processes: dict[str, Any] = {"supervisor": identity(os.getpid())}
        for machine in self.keeper.run.machines:
            argv = agent_argv(machine)
            log(f"machine {machine['machine_rank']}: starting its agent on {machine['host']}: {' '.join(argv)}")
            proc = ssh.start(machine["host"], argv, self.options, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=False)
            link = MachineLink(machine, proc, time.monotonic())
            self.links.append(link)
            processes[f"ssh {link.host}"] = identity(proc.pid)
            assert proc.stdout is not None and proc.stderr is not None
            threading.Thread(target=_read_stdout, args=(link.rank, proc.stdout, self.inbox), daemon=True).start()
            link.stderr_reader = threading.Thread(target=_read_stderr, args=(proc.stderr, link.stderr), daemon=True)
            link.stderr_reader.start()
            link.send(self.setup_message(machine))
        self.keeper.update(status="running", started=time.time(), processes=processes,
                           pids={"supervisor": os.getpid(), "ranks": {}})

    # -- watch -------------------------------------------------------------------------------
    @property
    def tearing_down(self) -> bool:
        return self.teardown_since is not None

    def poll(self, woke: bool) -> None:
        """Beat every machine still running (their messages are read while the keeper waits)."""
        now = time.monotonic()
        if now - self.beat_at >= BEAT_SECONDS:
            self.beat_at = now
            for link in self.links:
                if not link.done:
                    link.send(encode("beat"))

    def step(self) -> int | None:
        """0 once every machine's part has ended (its word, or its link closed or cut): the outcome is theirs."""
        now = time.monotonic()
        self.check_links(now)
        if self.failures and self.teardown_since is None:
            self.teardown("another machine failed: " + self.root_failure().error)
        if self.teardown_since is not None and now - self.teardown_since > TEARDOWN_SECONDS:
            log(f"machines still running {TEARDOWN_SECONDS:.0f} s after being asked to end: cutting their links")
            self.cut_links()
        if not all(link.done for link in self.links):
            return None
        self.receive()
        return 0

    def wait(self) -> bool:
        self.receive()
        return False

    def receive(self) -> None:
        deadline = time.monotonic() + POLL_SECONDS
        while True:
            try:
                rank, message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return
            self.handle(self.links[rank], message)

    def handle(self, link: MachineLink, message: dict[str, Any] | None) -> None:
        if message is None:
            if link.closed:
                return  # cut from here already, and said why
            link.closed = True
            if link.end is None:
                try:
                    link.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    ssh_kill(link.proc)
                said = link.said()
                log(f"machine {link.rank} ({link.host}): ssh ended with {link.proc.returncode}"
                    + (f": {said.strip().splitlines()[-1]}" if said.strip() else " and said nothing"))
                self.fail(Failure(link.host, link.rank, closed_why(link, said)))
                if link.hello is not None:
                    self.bring_last_words(link)
            return
        link.heard = time.monotonic()
        kind = message["t"]
        if kind in ("append", "file"):
            try:
                apply(self.paths, message)
            except (MirrorError, OSError) as exc:
                log(f"machine {link.rank} ({link.host}): {exc}")
            if message.get("path") == "ranks/rank-0.json":
                self.keeper.adopt_output_dir(read_rank_records(self.paths))
        elif kind == "hello":
            link.hello = message
            log(f"machine {link.rank} ({link.host}): agent pid {message.get('pid')} in {message.get('node_dir')}")
        elif kind == "consumed" and message.get("name") in CONTROL_REQUESTS:
            self.relayed.discard(str(message["name"]))
            self.paths.control_request(str(message["name"])).unlink(missing_ok=True)
        elif kind == "end":
            link.end = message
            self.on_machine_end(link, message)

    def bring_last_words(self, link: MachineLink) -> None:
        """What the agent wrote after its link closed (it ends its ranks, and says why) comes home over a new ssh,
        appended to logs/machine-M.log after the bytes the link brought; in a thread, bounded by LAST_WORDS_SECONDS."""
        def fetch() -> None:
            home_log = self.paths.root / machine_log(link.rank)
            try:
                offset = home_log.stat().st_size
            except OSError:
                offset = 0
            argv = [*agent_argv(link.machine), "--last-words", str(link.machine["workdir"]), str(offset),
                    str(link.hello.get("pid") if link.hello else 0)]
            result = ssh.run(link.host, argv, LAST_WORDS_SECONDS, self.options)
            if result.ok and result.stdout:
                with open(home_log, "ab") as handle:  # ssh.run reads text: broken UTF-8 arrives replaced
                    handle.write(result.stdout.encode())
                log(f"machine {link.rank} ({link.host}): its agent's last words, written after its link closed, "
                    f"came home over a new ssh into logs/machine-{link.rank}.log")
            elif not result.ok:
                log(f"machine {link.rank} ({link.host}): its agent's last words could not be brought home: "
                    f"{result.problem or result.stderr.strip()}")

        thread = threading.Thread(target=fetch, name=f"last-words-{link.rank}", daemon=True)
        self.fetchers.append(thread)
        thread.start()

    def on_machine_end(self, link: MachineLink, end: dict[str, Any]) -> None:
        status, error = end.get("status"), end.get("error")
        log(f"machine {link.rank} ({link.host}) ended: {status}" + (f": {error}" if error else ""))
        if status == "failed" or (status == "killed" and self.teardown_since is None and not self.keeper.terminating):
            text = str(error or f"its ranks ended {status}")
            self.fail(Failure(link.host, link.rank, f"{link.host}: {text}", end.get("failed_rank"),
                              secondary=bool(_PEER_GONE.search(text))))

    def check_links(self, now: float) -> None:
        for link in self.links:
            silent = now - link.heard
            if not link.done and silent > SILENCE_SECONDS:
                self.fail(Failure(link.host, link.rank, f"{link.host}: no word from its agent for {silent:.0f} s (the "
                                                        "machine or the network to it is down?)"))
                link.closed = True
                ssh_kill(link.proc)

    # -- hangs -------------------------------------------------------------------------------
    def rank_pids(self) -> dict[int, int]:
        return {}

    def rank_states(self) -> dict[int, str] | None:
        return None  # runs.view.hang reads every machine's mirrored states

    def hang_begins(self, limit: float | None) -> None:
        self.hang_digest_due = time.monotonic() + (limit or 0.0) + HANG_STACKS_SECONDS

    def hang_cause(self, stalled: str) -> str | None:
        """Each machine's supervisor takes its own ranks' stacks on a hang, and their files come home. Once every
        rank's stacks are here (or a stopped rank is known stopped), or a step's limit and HANG_STACKS_SECONDS have
        passed, home writes the digest of the hang."""
        from tuitrain.runs.view.hang import live_beats, machine_states
        from tuitrain.runs.view.stacks import digest_text, mirrored_stacks, write_digest

        record = self.keeper.record
        taken, missing = mirrored_stacks(self.paths, live_beats(self.paths, record), machine_states(self.paths))
        if missing and self.hang_digest_due is not None and time.monotonic() < self.hang_digest_due:
            return None
        hosts = {r: rec.get("host") for r, rec in read_rank_records(self.paths).items()}
        problems = [f"rank {r}{f' ({hosts[r]})' if hosts.get(r) else ''}: its stacks did not come home" for r in missing]
        digest = digest_text(write_digest(self.paths, taken, problems))
        log(f"stacks: {digest or '(none)'}")
        return f"hung: {stalled}" + (f"; {digest}" if digest else "")

    # -- control -----------------------------------------------------------------------------
    def relay_control(self) -> None:
        """Every request but `stop --now` (the keeper's: `terminate`) goes on to the machines that act on it."""
        for name in CONTROL_REQUESTS:
            if name == CONTROL_TERMINATE or name in self.relayed or not self.paths.control_request(name).exists():
                continue
            self.relayed.add(name)
            for link in self.links:
                if not link.done and (name not in _TO_MAIN_ONLY or link.rank == 0):
                    link.send(encode("control", name=name))

    def terminate(self, why: str) -> None:
        self.teardown(why)

    def fail(self, failure: Failure) -> None:
        log(f"machine {failure.machine_rank} failed: {failure.error}")
        self.failures.append(failure)

    def root_failure(self) -> Failure:
        first = self.failures[0]
        return next((f for f in self.failures if not f.secondary), first)

    def teardown(self, why: str) -> None:
        """Ask every machine still running to end its ranks now."""
        if self.failures and not self.keeper.terminating:
            wait_until = time.monotonic() + FAILURE_WINDOW  # a likelier root cause may be on its way
            while time.monotonic() < wait_until and all(f.secondary for f in self.failures):
                self.receive()
        self.teardown_since = time.monotonic()
        for link in self.links:
            if not link.done:
                link.send(encode("terminate", why=why))

    def cut_links(self) -> None:
        for link in self.links:
            if not link.done:
                ssh_kill(link.proc)
                link.closed = True

    def abort(self) -> None:
        for link in self.links:
            if not link.done:
                link.send(encode("terminate", why="the home supervisor failed"))
        self.cut_links()

    # -- finish ------------------------------------------------------------------------------
    def settle(self, code: int) -> Settled:
        exit_codes: dict[str, Any] = {}
        for link in self.links:
            for key, link_code in ((link.end or {}).get("exit_codes") or {}).items():
                exit_codes[f"{key} {link.host}" if key == "launcher" else key] = link_code
            if link.proc.stdin is not None:
                link.proc.stdin.close()
            try:
                link.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                ssh_kill(link.proc)
        return Settled(exit_codes)

    def outcome(self, code: int, records: dict[int, RankRecord], cause: Any) -> Outcome:
        if self.failures:
            root = self.root_failure()
            return "failed", root.failed_rank, root.error
        statuses = {str((link.end or {}).get("status")) for link in self.links}
        if statuses <= {"finished", "stopped"}:
            return ("stopped" if self.keeper.stop_requested or "stopped" in statuses else "finished"), None, None
        return "failed", None, "machines ended " + ", ".join(f"{link.host}: {(link.end or {}).get('status')}"
                                                              for link in self.links)

    def said_end(self, status: str, code: int, error: str | None) -> str:
        return f"run {status}" + (f": {error}" if error else "")

    def after_end(self, exit_codes: dict[str, Any]) -> None:
        for thread in self.fetchers:  # the end is recorded first: last words only add to a machine's log
            thread.join(timeout=LAST_WORDS_SECONDS + 5)


def closed_why(link: MachineLink, said: str) -> str:
    """Why a machine's part ended when its ssh link closed without the agent's end: the link, when the ssh client
    here was killed by a signal (the agent then ends its ranks: "its ssh link home closed"); else what ssh said."""
    code = link.proc.returncode
    if code is not None and code < 0:
        return (f"the ssh link to {link.host} closed (ssh exited {code}: {signal_name(code)} on this machine; its agent "
                f"there ended its ranks: see logs/machine-{link.rank}.log)")
    problem = ssh.classify(link.host, code, said, agent_argv(link.machine))
    if link.hello is not None and (problem is None or problem.kind in ("ssh", "exit")):
        return (f"{link.host}: its tuitrain agent (pid {link.hello.get('pid')}) ended without reporting an end "
                f"(killed, crashed, or its ssh link closed: see logs/machine-{link.rank}.log)")
    return str(problem) if problem else ""


def ssh_kill(proc: subprocess.Popen[bytes]) -> None:
    ssh.kill_group(proc, wait=5)
