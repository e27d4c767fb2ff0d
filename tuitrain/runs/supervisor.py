"""The detached supervisor: `python -m tuitrain.runs.supervisor RUN_DIR`.

Started in a session of its own by `tuitrain run`, so a closed terminal or a dropped SSH
connection does not reach it. It starts `accelerate launch`, keeps run.json true, tears the
ranks down when one dies, and turns SIGTERM/SIGINT/SIGHUP into a graceful stop request.

Whatever happens to it, the run does not outlive it: the launcher gets SIGTERM when the
supervisor dies (Linux's parent-death signal), each rank watches it (tuitrain.engine.watchdog),
and a failure of its own is recorded in run.json before it exits.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import psutil

from tuitrain.runs.exit_waiter import ExitWaiter
from tuitrain.runs.exits import describe_exit, full_disk, last_exception_line, root_cause
from tuitrain.runs.layout import CONTROL_ENDING, CONTROL_STOP, CONTROL_TERMINATE, SUPERVISOR_ENV, RunPaths
from tuitrain.runs.process_tree import descendants, end_processes, find, identity, running
from tuitrain.runs.ranks import read_rank_records
from tuitrain.runs.record import read_record, record_end, update_record
from tuitrain.runs.tail import read_tail

POLL_SECONDS = 0.5  # how often control requests and rank records are looked at (an exit wakes it at once)
SCAN_SECONDS = 5.0  # how often the launcher's process tree is walked when nothing changes
TEARDOWN_AFTER_RANK_DEATH = 1.0  # the elastic agent usually does it first; we make sure
KILL_GRACE_SECONDS = 5.0
TEARDOWN_GRACE_SECONDS = 1.5  # after a rank died: its peers are only waiting for it
LAUNCHER_GRACE_SECONDS = 3.0  # then the launcher has this long to exit by itself


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log(message: str) -> None:
    try:
        print(f"[tuitrain supervisor {time.strftime('%H:%M:%S')}] {message}", flush=True)
    except OSError:
        pass  # a full disk must not take the supervisor down with it


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGTERM the child when this process dies (PR_SET_PDEATHSIG);
    None where that does not exist."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the prctl took hold
            os._exit(1)

    return preexec


class Supervisor:
    def __init__(self, paths: RunPaths) -> None:
        self.paths = paths
        self.record = read_record(paths)
        self.launcher: subprocess.Popen[bytes] | None = None
        self.tracked: dict[int, psutil.Process] = {}  # every live process of the run we have seen
        self.ranks: dict[int, dict[str, Any]] = {}  # rank → {"pid", "started"}
        self.first_dead_rank: int | None = None
        self.rank_death_time: float | None = None
        self.ranks_ended = False
        self.stop_requested = False
        self.terminating = False
        self._scanned_at = 0.0
        self._ranks_stamp: tuple[int, int] | None = None  # the ranks folder's (mtime_ns, size) when last read
        self.exits = ExitWaiter()
        self.poll_seconds = POLL_SECONDS
        self.sampler: Any = None  # tuitrain.runs.samples.RunSampler, from start() to finish()

    # -- record ------------------------------------------------------------------------------
    def update(self, **fields: Any) -> None:
        """A mid-run update: on a full disk it is logged and skipped (the end is still recorded,
        through the space reserve), never fatal."""
        try:
            self.record = update_record(self.paths, **fields)
        except OSError as exc:
            log(f"could not update run.json: {exc}")

    def announce(self) -> None:
        """Record this process first, so a viewer can tell a live run from a lost one."""
        me = identity(os.getpid())
        self.update(processes={"supervisor": me}, pids={"supervisor": os.getpid(), "ranks": {}})

    # -- signals -----------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        log(f"received {signal.Signals(signum).name}: asking the ranks to save a checkpoint and stop")
        try:
            self.paths.control.mkdir(exist_ok=True)
            self.paths.control_request(CONTROL_STOP).touch()
        except OSError as exc:
            log(f"could not write the stop request: {exc}")

    # -- launch ------------------------------------------------------------------------------
    def launcher_env(self) -> dict[str, str]:
        """What the launcher's environment gets beyond the plan's (a Slurm agent's: see tuitrain.slurm.agent)."""
        return {}

    def launcher_preexec(self) -> Callable[[], None] | None:
        return die_with_parent()

    def launch_argv(self) -> tuple[list[str], int | None]:
        argv = list(self.record["argv"])
        port = self.record.get("main_process_port")
        if port is None and "--main_process_port" not in argv and int(self.record["num_processes"]) > 1:
            port = free_port()
            at = argv.index("--config_file") + 2
            argv[at:at] = ["--main_process_port", str(port)]
        return argv, port

    def start(self) -> None:
        argv, port = self.launch_argv()
        me = identity(os.getpid()) or {"pid": os.getpid(), "started": None}
        env = {**os.environ, **self.record["env"], **self.launcher_env(), "TUITRAIN_RUN_DIR": str(self.paths.root),
               SUPERVISOR_ENV: f"{me['pid']}:{me['started']}"}
        log(f"starting: {' '.join(argv)}")
        self.launcher = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, cwd=self.record.get("cwd") or None,
                                         preexec_fn=self.launcher_preexec())
        launcher = identity(self.launcher.pid)
        if launcher is not None:
            self.tracked[self.launcher.pid] = psutil.Process(self.launcher.pid)
        self.exits.watch(self.launcher.pid)
        self.update(
            status="running",
            started=time.time(),
            argv=argv,
            main_process_port=port,
            pids={"supervisor": os.getpid(), "launcher": self.launcher.pid, "ranks": {}},
            processes={"supervisor": me, "launcher": launcher},
        )
        self.start_sampling()

    # -- samples -----------------------------------------------------------------------------
    def start_sampling(self) -> None:
        """This machine's GPUs, host and ranks, sampled in a thread for the whole run into
        machines/machine-M-samples.json (tuitrain.runs.samples: the one sampling code of every machine of a run)."""
        from tuitrain.runs.samples import RunSampler

        try:
            self.sampler = RunSampler(self.paths, self.record, self.rank_pids,
                                      machine_rank=int(self.record.get("machine_rank") or 0),
                                      on_snapshot=self.sampled, log=log)
            self.sampler.start()
        except Exception as exc:  # noqa: BLE001 — figures are a nicety: the run goes on without them
            log(f"could not start sampling this machine: {type(exc).__name__}: {exc}")
            self.sampler = None

    def stop_sampling(self) -> None:
        """The last sample and the file's last write, before run.json says the run ended."""
        sampler, self.sampler = self.sampler, None
        if sampler is not None:
            sampler.stop()

    def rank_pids(self) -> dict[int, int]:
        """rank → pid of this machine's ranks (read by the sampling thread; one that ended reads as gone there)."""
        return {rank: info["pid"] for rank, info in list(self.ranks.items()) if info.get("proc") is not None}

    def sampled(self, snapshot: Any) -> None:
        """Each sample of this machine, as taken (a node agent sends it home)."""

    # -- watch -------------------------------------------------------------------------------
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

    def poll_ranks(self, exited: bool = True) -> None:
        """`exited`: a watched process ended (or no exit could be watched): look at every rank again."""
        assert self.launcher is not None
        now = time.monotonic()
        if not (self._ranks_changed() or exited or now - self._scanned_at > SCAN_SECONDS):
            return
        records = read_rank_records(self.paths)
        changed = False
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
            died_badly = rec["exit_code"] not in (None, 0) or (rec["exit_code"] is None and gone)
            if died_badly and self.first_dead_rank is None and not self.terminating:
                self.first_dead_rank = rank
                self.rank_death_time = now
                log(f"rank {rank} (pid {rec['pid']}) ended ({describe_exit(rec['exit_code'])}); tearing down the others")
        self.adopt_output_dir(records)
        if changed or now - self._scanned_at > SCAN_SECONDS:
            self.scan(now)
        if changed:
            pids = dict(self.record.get("pids") or {})
            pids["ranks"] = {str(r): info["pid"] for r, info in sorted(self.ranks.items())}
            processes = dict(self.record.get("processes") or {})
            processes.update({f"rank {r}": {"pid": info["pid"], "started": info["started"]}
                              for r, info in sorted(self.ranks.items())})
            self.update(pids=pids, processes=processes)

    def adopt_output_dir(self, records: dict[int, dict[str, Any]]) -> None:
        """A script-mode run's checkpoints folder is its Trainer's: rank 0 names it in its record."""
        named = (records.get(0) or {}).get("output_dir")
        if isinstance(named, str) and named and named != self.record.get("output_dir"):
            log(f"output folder (named by rank 0): {named}")
            self.update(output_dir=named)

    def poll_control(self) -> None:
        if not self.stop_requested and self.paths.control_request(CONTROL_STOP).exists():
            self.stop_requested = True
            log("stop requested: the ranks save a checkpoint and stop at the next step end")
            self.update(status="stopping")
        if not self.terminating and self.paths.control_request(CONTROL_TERMINATE).exists():
            self.terminating = True
            log("terminate requested: ending every process of the run now")
            self.update(status="stopping")
            self.end_all(KILL_GRACE_SECONDS)

    def mark_ending(self) -> None:
        """Before tuitrain itself signals the run's processes: a rank that takes SIGTERM as a stop request (under
        Slurm) ends at once when it finds this."""
        try:
            self.paths.control.mkdir(exist_ok=True)
            self.paths.control_request(CONTROL_ENDING).touch()
        except OSError as exc:
            log(f"could not write control/{CONTROL_ENDING}: {exc}")

    def end_all(self, grace: float, spare_launcher: bool = False) -> None:
        """End every process of the run; `spare_launcher`: all but the launcher, which then exits
        by itself and says which rank failed first (ended at once, it would not)."""
        self.mark_ending()
        self.scan(time.monotonic())
        launcher = self.launcher.pid if self.launcher is not None and spare_launcher else None
        killed = end_processes([p for p in self.tracked.values() if p.pid != launcher], grace=grace)
        if killed:
            log(f"killed after {grace:.1f}s grace: {sorted(killed)}")

    def tick(self) -> None:
        """Called once per poll; a node agent mirrors its files and talks to home here."""

    def abort(self) -> None:
        """End every process of the run now (the supervisor itself is failing)."""
        if self.launcher is not None:
            self.end_all(KILL_GRACE_SECONDS)

    def watch(self) -> int:
        assert self.launcher is not None
        exited = True
        while True:
            self.tick()
            self.poll_control()
            self.poll_ranks(exited)
            code = self.launcher.poll()
            if code is not None:
                return code
            since = time.monotonic() - self.rank_death_time if self.rank_death_time else None
            if since is not None and since > TEARDOWN_AFTER_RANK_DEATH and not self.ranks_ended:
                self.end_all(TEARDOWN_GRACE_SECONDS, spare_launcher=True)
                self.ranks_ended = True
            elif since is not None and since > TEARDOWN_AFTER_RANK_DEATH + LAUNCHER_GRACE_SECONDS:
                self.end_all(KILL_GRACE_SECONDS)  # the launcher did not exit by itself
                self.rank_death_time = None
            # a rank's or the launcher's exit wakes this at once; while a teardown is under way, look often
            wait = 0.1 if self.rank_death_time is not None else self.poll_seconds
            exited = bool(self.exits.wait(wait)) or not self.exits.watching

    # -- finish ------------------------------------------------------------------------------
    def finish(self, launcher_code: int) -> str:
        self.poll_ranks()
        self.scan(time.monotonic())
        if self.tracked:
            log(f"processes left after the launcher exited: {sorted(self.tracked)}; ending them")
            self.mark_ending()
            end_processes(self.tracked.values(), grace=KILL_GRACE_SECONDS)
        records = read_rank_records(self.paths)
        cause = root_cause(self.paths.launcher_log) if launcher_code != 0 else None
        exit_codes: dict[str, Any] = {"launcher": launcher_code}
        for rank, rec in sorted(records.items()):
            code = rec["exit_code"]
            if code is None and cause is not None and cause.rank == rank:
                code = cause.exit_code
            exit_codes[str(rank)] = code if code is not None else "killed"
        status, failed_rank, error = self.outcome(launcher_code, records, cause)
        self.stop_sampling()
        self.record = record_end(self.paths, status=status, ended=time.time(), exit_codes=exit_codes,
                                 failed_rank=failed_rank, error=error)
        log(f"run {status} (launcher exit code {launcher_code})" + (f": {error}" if error else ""))
        return status

    def outcome(self, launcher_code: int, records: dict[int, dict[str, Any]], cause: Any) -> tuple[str, int | None, str | None]:
        """(status, failed rank, one-line cause) of a run whose launcher exited."""
        if self.terminating:
            return "killed", None, "ended by `tuitrain stop --now`: every process was terminated, nothing was saved"
        if self.stop_requested and launcher_code == 0:
            return "stopped", None, None
        if launcher_code == 0 and self.first_dead_rank is None:
            return "finished", None, None
        rank = cause.rank if cause is not None and cause.rank is not None else self.first_dead_rank
        if rank is None and launcher_code < 0:
            pid = self.launcher.pid if self.launcher else "?"
            return "failed", None, f"accelerate launch (pid {pid}) was {describe_exit(launcher_code)}"
        if rank is None:
            bad = [r for r, rec in records.items() if rec["exit_code"] not in (0, None)]
            rank = min(bad) if bad else None
        if rank is None:
            return "failed", None, f"accelerate launch exited with code {launcher_code} before any rank failed (see logs/launcher.log)"
        return "failed", rank, self.rank_failure(rank, records.get(rank), cause)

    def rank_failure(self, rank: int, rec: dict[str, Any] | None, cause: Any) -> str:
        from tuitrain.runs.events import read_events

        code = rec["exit_code"] if rec else None
        if code is None and cause is not None and cause.rank == rank:
            code = cause.exit_code
        pid = rec["pid"] if rec else (cause.pid if cause is not None else None)
        errors = [e for e in read_events(self.paths.events) if e.get("event") == "error" and e.get("rank") == rank]
        where = f"rank {rank} (pid {pid})" if pid else f"rank {rank}"
        if errors:
            return str(errors[-1].get("message"))
        said = last_exception_line(read_tail(self.paths.rank_log(rank)))
        return f"{where} {describe_exit(code)}" + (f": {said}" if said else "") + self.full_disk_note()

    def full_disk_note(self) -> str:
        """A rank that dies while the disk is full rarely gets to say so (its log is on it too)."""
        for folder in (self.record.get("output_dir"), str(self.paths.root)):
            note = full_disk(Path(folder)) if folder else None
            if note:
                return f" — {note}"
        return ""


def run_supervisor(supervisor: Supervisor) -> str:
    """Announce, start, watch and finish; a failure of its own is recorded too. Returns the final status."""
    paths = supervisor.paths
    try:
        supervisor.announce()
        supervisor.install_signal_handlers()
        try:
            supervisor.start()
        except OSError as exc:
            supervisor.record = record_end(paths, status="failed", ended=time.time(),
                                           error=f"could not start the launcher: {exc}")
            log(f"could not start the launcher: {exc}")
            return "failed"
        return supervisor.finish(supervisor.watch())
    except BaseException as exc:  # noqa: BLE001 — whatever it is, the run must not be left running unrecorded
        traceback.print_exc()
        error = f"the supervisor failed: {type(exc).__name__}: {exc} (traceback in logs/launcher.log)"
        log(error)
        try:
            supervisor.abort()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        try:
            supervisor.stop_sampling()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        try:
            supervisor.record = record_end(paths, status="failed", ended=time.time(), error=error)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        return "failed"


def supervise(run_dir: Path) -> int:
    paths = RunPaths(run_dir)
    try:
        machines = bool(read_record(paths).get("machines"))
        if machines:
            from tuitrain.runs.home_supervisor import HomeSupervisor

            supervisor: Supervisor = HomeSupervisor(paths)
        else:
            supervisor = Supervisor(paths)
    except BaseException as exc:  # noqa: BLE001 — an unreadable record: say so where the run's viewers look
        traceback.print_exc()
        try:
            record_end(paths, status="failed", ended=time.time(), error=f"the supervisor could not start: {exc}")
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        return 1
    return 0 if run_supervisor(supervisor) in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
