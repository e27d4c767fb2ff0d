"""A run keeper's workers on one machine: its ranks under one `accelerate launch` (tuitrain.runs.keeper.workers), or a run's
one rank started directly (tuitrain.engine.direct_launch: then the launcher and the rank are one process).

The launcher is started here with the plan's environment and its `LauncherOptions`; each rank is found by the record it writes
(tuitrain.rundir.ranks) and watched by its pid, and every process the launcher starts is tracked, so that none
outlives the run. When a rank dies the others are torn down, and the rank seen dying first is the one blamed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import psutil

from tuitrain.rundir.disk_space import disk_full, names_full_disk
from tuitrain.rundir.exits import describe_exit, first_of_several, last_exception_line, root_cause
from tuitrain.rundir.layout import KILL_REQUEST, SUPERVISOR_ENV
from tuitrain.rundir.process_tree import (
    KILL_GRACE_SECONDS,
    descendants,
    end_processes,
    find,
    identity,
    keep_popen_code,
    running,
)
from tuitrain.rundir.ranks import RankRecord, read_rank_records
from tuitrain.rundir.record import RunPids
from tuitrain.rundir.script_env import MACHINE_RANK_ENV
from tuitrain.rundir.tail import read_tail
from tuitrain.runs.keeper.exit_waiter import ExitWaiter
from tuitrain.runs.keeper.parent_death import die_with_parent
from tuitrain.runs.keeper.supervisor_log import log
from tuitrain.runs.keeper.workers import Keeper, Outcome, Settled

SCAN_SECONDS = 5.0  # how often the launcher's process tree is walked when nothing changes
TEARDOWN_AFTER_RANK_DEATH = 1.0  # the elastic agent usually does it first; we make sure
TEARDOWN_GRACE_SECONDS = 1.5  # after a rank died: its peers are only waiting for it
LAUNCHER_GRACE_SECONDS = 3.0  # then the launcher has this long to exit by itself
LAUNCHER_EXIT_SECONDS = 60.0  # after every rank finished, the launcher's own teardown may take this long
DIRECT_MODULE = "tuitrain.engine.direct_launch"  # tuitrain.launch.planner.DIRECT_MODULE (not imported: the supervisor stays light)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class LauncherOptions:
    """What the launcher gets beyond the plan: more environment, the signal it is sent when its keeper dies, and
    what runs in it before `accelerate launch` does (tuitrain.runs.keeper.parent_death.die_with_parent's `first`). A Slurm
    node's are tuitrain.slurm.agent.slurm_launcher()'s; everyone else's are the defaults."""

    env: Mapping[str, str] = field(default_factory=dict)
    parent_death_signal: int = signal.SIGTERM
    first: Callable[[], None] | None = None


class LocalLaunch:
    STOP_SAID = "stop requested: the ranks save a checkpoint and stop at the next step end"
    KILLED_SAID = f"ended by {KILL_REQUEST}: every process was terminated, nothing was saved"
    HANG_SAID = "{said} (on_hang = {on_hang}); taking every rank's stacks"
    SAMPLED_HERE = True
    ACTS_ON_HANG = True
    tearing_down = False  # a rank's death is torn down by `step`, while control requests are still honoured

    def __init__(self, keeper: Keeper, options: LauncherOptions = LauncherOptions()) -> None:
        self.keeper = keeper
        self.paths = keeper.paths
        self.options = options
        self.launcher: subprocess.Popen[bytes] | None = None
        self.tracked: dict[int, psutil.Process] = {}  # every live process of the run we have seen
        self.ranks: dict[int, dict[str, Any]] = {}  # rank → {"pid", "started", "proc"}
        self.first_dead_rank: int | None = None
        self.rank_death_time: float | None = None
        self.ranks_ended = False
        self._scanned_at = 0.0
        self._ranks_stamp: tuple[int, int] | None = None  # the ranks folder's (mtime_ns, size) when last read
        self.exits = ExitWaiter()
        self.rank_exit_codes: dict[int, int | None] = {}  # as the rank records last said
        self.first_dead_alone = False  # the first rank that died badly was the only dead one when seen
        self.first_dead_seen: tuple[int, ...] = ()  # every rank found dead at that look
        self.launcher_outlived_ranks = False  # the end was recorded before accelerate launch exited
        self.direct = DIRECT_MODULE in keeper.run.argv[1:3]  # the launcher is the run's one rank

    # -- start -------------------------------------------------------------------------------
    def launch_argv(self) -> tuple[list[str], int | None]:
        run = self.keeper.run
        argv = list(run.argv)
        port = run.main_process_port
        if port is None and "--main_process_port" not in argv and run.num_processes > 1:
            port = free_port()
            at = argv.index("--config_file") + 2
            argv[at:at] = ["--main_process_port", str(port)]
        return argv, port

    def start(self) -> None:
        keeper = self.keeper
        argv, port = self.launch_argv()
        me = identity(os.getpid()) or {"pid": os.getpid(), "started": None}
        env = {**os.environ, **keeper.run.env, **self.options.env, "TUITRAIN_RUN_DIR": str(self.paths.root),
               SUPERVISOR_ENV: f"{me['pid']}:{me['started']}", MACHINE_RANK_ENV: str(keeper.machine_rank)}
        log(f"starting: {' '.join(argv)}")
        self.launcher = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, cwd=keeper.run.cwd or None,
                                         preexec_fn=die_with_parent(self.options.parent_death_signal, self.options.first))
        launcher = identity(self.launcher.pid)
        if launcher is not None:
            self.tracked[self.launcher.pid] = psutil.Process(self.launcher.pid)
        self.exits.watch(self.launcher.pid)
        keeper.update(
            status="running",
            started=time.time(),
            argv=argv,
            main_process_port=port,
            pids={"supervisor": os.getpid(), "launcher": self.launcher.pid, "ranks": {}},
            processes={"supervisor": me, "launcher": launcher},
        )

    # -- watch -------------------------------------------------------------------------------
    def rank_pids(self) -> dict[int, int]:
        """rank → pid of this machine's ranks (read by the sampling thread; one that ended reads as gone there)."""
        return {rank: info["pid"] for rank, info in list(self.ranks.items()) if info.get("proc") is not None}

    def scan(self, now: float) -> None:
        """Track the launcher's descendants (dataloader workers and the like) and drop the dead."""
        assert self.launcher is not None
        self._scanned_at = now
        launcher = self.tracked.get(self.launcher.pid)
        if launcher is not None:
            for proc in descendants(launcher):
                self.tracked.setdefault(proc.pid, proc)
        self.tracked = {pid: proc for pid, proc in self.tracked.items() if running(proc)}

    def _ranks_changed(self) -> bool:
        """Whether a rank record was written since the last look (each is replaced atomically: a new folder entry)."""
        try:
            info = os.stat(self.paths.ranks)
        except OSError:
            return False
        stamp = (info.st_mtime_ns, info.st_size)
        changed, self._ranks_stamp = stamp != self._ranks_stamp, stamp
        return changed

    def poll(self, woke: bool = True) -> None:
        """`woke`: a watched process ended (or no exit could be watched): look at every rank again."""
        assert self.launcher is not None
        keeper = self.keeper
        now = time.monotonic()
        if not (self._ranks_changed() or woke or now - self._scanned_at > SCAN_SECONDS):
            return
        records = self.own_rank_records()
        self.rank_exit_codes = {rank: rec.get("exit_code") for rank, rec in records.items()}
        changed = False
        first_now = False
        dead_now: list[int] = []
        for rank, rec in records.items():
            known = self.ranks.get(rank)
            if known is None or known["pid"] != rec["pid"]:
                proc = find(rec["pid"], rec.get("started"))
                self.ranks[rank] = {"pid": rec["pid"], "started": rec.get("started"), "proc": proc}
                if proc is not None:
                    self.tracked[proc.pid] = proc
                    self.exits.watch(proc.pid)
                changed = True
            proc = self.ranks[rank]["proc"]
            gone = proc is None or not running(proc)
            code = rec.get("exit_code")
            died_badly = code not in (None, 0) or (code is None and gone)
            if died_badly:
                dead_now.append(rank)
            if died_badly and self.first_dead_rank is None and not keeper.terminating:
                first_now = True
                self.first_dead_rank = rank
                self.rank_death_time = now
                log(f"rank {rank} (pid {rec['pid']}) ended ({describe_exit(code)}); tearing down the others")
        if first_now:  # woken by its exit, it was seen dying alone: the first for certain; else torch's word decides
            self.first_dead_seen = tuple(dead_now)
            self.first_dead_alone = len(dead_now) == 1
        keeper.adopt_output_dir(records)
        if changed or now - self._scanned_at > SCAN_SECONDS:
            self.scan(now)
        if changed:
            pids: RunPids = {**keeper.run.pids}
            pids["ranks"] = {str(r): info["pid"] for r, info in sorted(self.ranks.items())}
            processes = dict(keeper.run.processes)
            processes.update({f"rank {r}": {"pid": info["pid"], "started": info["started"]}
                              for r, info in sorted(self.ranks.items())})
            keeper.update(pids=pids, processes=processes)

    def own_rank_records(self) -> dict[int, RankRecord]:
        """The records of this machine's ranks. A Slurm run's node 0 also finds the other nodes' in the run's ranks/
        (copied there for viewers): their pids name no process of this machine, or another one, and reading one as
        a rank of its own tore the run down as soon as that rank's process was gone before its record came home."""
        records = read_rank_records(self.paths).items()
        machine = self.keeper.machine_rank
        return {rank: rec for rank, rec in records if rec.get("machine_rank", rec.get("node_rank", 0)) == machine}

    def relay_control(self) -> None:
        """Nothing to pass on: the ranks read the run's control folder themselves."""

    def end_all(self, grace: float, spare_launcher: bool = False) -> None:
        """End every process of the run; `spare_launcher`: all but the launcher, which then exits
        by itself and says which rank failed first (ended at once, it would not)."""
        self.keeper.mark_ending()
        self.scan(time.monotonic())
        launcher = self.launcher.pid if self.launcher is not None and spare_launcher else None
        targets = [p for p in self.tracked.values() if p.pid != launcher]
        killed = end_processes(targets, grace=grace)
        if self.launcher is not None:
            keep_popen_code(self.launcher, targets)
        if killed:
            log(f"killed after {grace:.1f}s grace: {sorted(killed)}")

    def terminate(self, why: str) -> None:
        self.end_all(KILL_GRACE_SECONDS)

    # -- hangs -------------------------------------------------------------------------------
    def rank_states(self) -> dict[int, str] | None:
        states = {}
        for rank, info in list(self.ranks.items()):
            try:
                states[rank] = info["proc"].status() if info.get("proc") is not None else ""
            except psutil.Error:
                continue
        return states

    def hang_begins(self, limit: float | None) -> None:
        """The stacks are taken at once (hang_cause)."""

    def hang_cause(self, stalled: str) -> str | None:
        return self.keeper.hang_stacks(stalled)

    def step(self) -> int | None:
        assert self.launcher is not None
        code = self.launcher.poll()
        if code is not None:
            return code
        if not self.direct and self.ranks_succeeded():  # direct: the rank's exit is the launcher's, seen by poll
            self.launcher_outlived_ranks = True
            return 0  # what the launcher will say: accelerate launch exits with its ranks' code
        since = time.monotonic() - self.rank_death_time if self.rank_death_time else None
        if since is not None and since > TEARDOWN_AFTER_RANK_DEATH and not self.ranks_ended:
            self.end_all(TEARDOWN_GRACE_SECONDS, spare_launcher=True)
            self.ranks_ended = True
        elif since is not None and since > TEARDOWN_AFTER_RANK_DEATH + LAUNCHER_GRACE_SECONDS:
            self.end_all(KILL_GRACE_SECONDS)  # the launcher did not exit by itself
            self.rank_death_time = None
        return None

    def wait(self) -> bool:
        # a rank's or the launcher's exit wakes this at once; while a teardown is under way, look often
        wait = 0.1 if self.rank_death_time is not None else self.keeper.poll_seconds
        return bool(self.exits.wait(wait)) or not self.exits.watching

    def ranks_succeeded(self) -> bool:
        """Every rank of this one-machine run has exited, each with code 0 in its record."""
        run = self.keeper.run
        expected = run.num_processes
        if not self.keeper.END_WITH_RANKS or run.num_machines != 1:
            return False
        if len(self.ranks) != expected or len(self.rank_exit_codes) != expected:
            return False
        if any(code != 0 for code in self.rank_exit_codes.values()):
            return False
        return all(info["proc"] is None or not running(info["proc"]) for info in self.ranks.values())

    def abort(self) -> None:
        if self.launcher is not None:
            self.end_all(KILL_GRACE_SECONDS)

    # -- finish ------------------------------------------------------------------------------
    def settle(self, code: int) -> Settled:
        self.poll()
        self.scan(time.monotonic())
        exiting = self.launcher.pid if self.launcher is not None and self.launcher_outlived_ranks else None
        left = {pid: proc for pid, proc in self.tracked.items() if pid != exiting}
        if left:
            log(f"processes left after the launcher exited: {sorted(left)}; ending them")
            self.keeper.mark_ending()
            end_processes(left.values(), grace=KILL_GRACE_SECONDS)
        records = read_rank_records(self.paths)
        cause = root_cause(self.paths.launcher_log) if code != 0 else None
        exit_codes: dict[str, Any] = {"launcher": code}
        for rank, rec in sorted(records.items()):
            rank_code = self.rank_code(rank, rec, cause)
            exit_codes[str(rank)] = rank_code if rank_code is not None else "killed"
        return Settled(exit_codes, records, cause)

    def said_end(self, status: str, code: int, error: str | None) -> str:
        if self.launcher_outlived_ranks:
            return f"run {status} (every rank exited 0; accelerate launch still exiting)"
        who = "its one rank's" if self.direct else "launcher"
        return f"run {status} ({who} exit code {code})" + (f": {error}" if error else "")

    def after_end(self, exit_codes: dict[str, Any]) -> None:
        """After the end is recorded: reap accelerate launch, ending it if its teardown hangs; a code other than
        the ranks' 0 is logged and recorded."""
        if not self.launcher_outlived_ranks:
            return
        assert self.launcher is not None
        try:
            code = self.launcher.wait(timeout=LAUNCHER_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            log(f"accelerate launch (pid {self.launcher.pid}) did not exit {LAUNCHER_EXIT_SECONDS:.0f}s after its ranks; ending it")
            end_processes([p for p in self.tracked.values() if p.pid == self.launcher.pid], grace=KILL_GRACE_SECONDS)
            code = self.launcher.wait()
        if code != 0:
            log(f"accelerate launch exited with code {code} after every rank had exited 0")
            self.keeper.update(exit_codes={**exit_codes, "launcher": code})

    def outcome(self, code: int, records: dict[int, RankRecord], cause: Any) -> Outcome:
        if self.keeper.stop_requested and code == 0:
            return "stopped", None, None
        if code == 0 and self.first_dead_rank is None:
            return "finished", None, None
        if self.first_dead_rank is not None and self.first_dead_alone:
            rank: int | None = self.first_dead_rank  # seen dying before any other: its peers failed after it
        else:  # several found dead in one look
            found = first_of_several(cause, {r: records[r] for r in self.first_dead_seen if r in records})
            rank = found if found is not None else self.first_dead_rank
        if rank is None and code < 0:
            pid = self.launcher.pid if self.launcher else "?"
            who = "the run's one process" if self.direct else "accelerate launch"
            return "failed", None, f"{who} (pid {pid}) was {describe_exit(code)}"
        if rank is None:
            bad = [r for r, rec in records.items() if rec.get("exit_code") not in (0, None)]
            rank = min(bad) if bad else None
        if rank is None:
            who = "the run's one process" if self.direct else "accelerate launch"
            return "failed", None, f"{who} exited with code {code} before any rank failed (see logs/launcher.log)"
        return "failed", rank, self.rank_failure(rank, records.get(rank), cause)

    def rank_failure(self, rank: int, rec: RankRecord | None, cause: Any) -> str:
        from tuitrain.rundir.events import read_events

        code = self.rank_code(rank, rec, cause)
        pid = rec["pid"] if rec else (cause.pid if cause is not None else None)
        errors = [e for e in read_events(self.paths.events) if e.get("event") == "error" and e.get("rank") == rank]
        where = f"rank {rank} (pid {pid})" if pid else f"rank {rank}"
        tail = read_tail(self.paths.rank_log(rank))
        if errors:
            said = str(errors[-1].get("message"))
        else:
            last = last_exception_line(tail)
            said = f"{where} {describe_exit(code)}" + (f": {last}" if last else "")
        return said + self.full_disk_note(said, tail)

    def rank_code(self, rank: int, rec: RankRecord | None, cause: Any) -> int | None:
        """A rank's exit code: its record's; for a rank killed before it could write one, what saw it end (the
        directly started rank is the launcher: Popen's code; else torch's agent, in the launcher's log)."""
        code = rec.get("exit_code") if rec else None
        if code is None and self.direct and self.launcher is not None:
            code = self.launcher.returncode
        if code is None and cause is not None:
            code = cause.exit_codes.get(rank, cause.exit_code if cause.rank == rank else None)
        return code

    def full_disk_note(self, said: str, log_tail: str) -> str:
        """A full disk, when the rank's words do not name it already: a rank that dies while the disk is full rarely
        gets to say so (its log is on it too), and torch's save names only a position in its file."""
        if names_full_disk(said):
            return ""
        note = disk_full((self.keeper.run.output_dir, str(self.paths.root)), f"{said}\n{log_tail}")
        return f" — {note}" if note else ""
