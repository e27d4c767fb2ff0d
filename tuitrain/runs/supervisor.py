"""The detached supervisor, started as `python -m tuitrain.runs.supervise RUN_DIR`.

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
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Unpack

import psutil

from tuitrain.runs.exit_waiter import ExitWaiter
from tuitrain.runs.exits import describe_exit, first_of_several, full_disk, last_exception_line, root_cause
from tuitrain.runs.layout import CONTROL_ENDING, CONTROL_STOP, CONTROL_TERMINATE, SUPERVISOR_ENV, RunPaths
from tuitrain.runs.parent_death import die_with_parent
from tuitrain.runs.process_tree import KILL_GRACE_SECONDS, descendants, end_processes, find, identity, running
from tuitrain.runs.ranks import read_rank_records
from tuitrain.runs.record import RunPids, RunRecord, read_record, record_end, update_record
from tuitrain.runs.tail import read_tail
from tuitrain.script import MACHINE_RANK_ENV

POLL_SECONDS = 0.5  # how often control requests and rank records are looked at (an exit wakes it at once)
SCAN_SECONDS = 5.0  # how often the launcher's process tree is walked when nothing changes
TEARDOWN_AFTER_RANK_DEATH = 1.0  # the elastic agent usually does it first; we make sure
TEARDOWN_GRACE_SECONDS = 1.5  # after a rank died: its peers are only waiting for it
LAUNCHER_GRACE_SECONDS = 3.0  # then the launcher has this long to exit by itself
GONE_SECONDS = 2.0  # the run directory missing this long (two looks at least) ends the run
LAUNCHER_EXIT_SECONDS = 60.0  # after every rank finished, the launcher's own teardown may take this long
HANG_CHECK_SECONDS = 2.0  # how often the ranks' heartbeats are judged (tuitrain.runs.hang)
HANG_STOP_FLOOR = 10.0  # on_hang = "stop": the ranks get at least this long (and a step's limit) to stop themselves


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log(message: str) -> None:
    try:
        print(f"[tuitrain supervisor {time.strftime('%H:%M:%S')}] {message}", flush=True)
    except OSError:
        pass  # a full disk must not take the supervisor down with it


class RunDirectoryGone(Exception):
    """The run's directory was removed while the run went on: its processes are ended (run_supervisor's abort)."""


class Supervisor:
    # Whether the run's end is recorded once every rank has exited 0, without waiting for accelerate launch's
    # own exit (its interpreter's teardown: 1-3 s of torch's, after the outcome is known). A backend whose
    # outcome needs more than its ranks (a node agent's home, a Slurm job's steps) keeps the launcher's word.
    END_WITH_RANKS = True

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
        self.rank_exit_codes: dict[int, int | None] = {}  # as the rank records last said
        self.first_dead_alone = False  # the first rank that died badly was the only dead one when seen
        self.first_dead_seen: tuple[int, ...] = ()  # every rank found dead at that look
        self._gone_since: float | None = None  # when the run directory was first found missing
        self.launcher_outlived_ranks = False  # the end was recorded before accelerate launch exited
        self.sampler: Any = None  # tuitrain.runs.samples.RunSampler, from start() to finish()
        self.manifest: Any = None  # tuitrain.runs.manifest.ManifestWriter, from start() to finish()
        from tuitrain.runs.hang import hang_settings

        self.hang_after, self.on_hang = hang_settings(paths)
        self._hang_checked_at = 0.0
        self.hang_seen: float | None = None  # when the hang now acted on began (None: the run moves)
        self.hang_cause: str | None = None  # what it says of that hang: its ranks and the digest of their stacks
        self.hang_stop_deadline: float | None = None  # on_hang = "stop": when a stop the ranks could not agree on ends
        self.hang_error: str | None = None  # the run was ended for a hang: its recorded cause
        self._stop_wait = 0.0

    # -- record ------------------------------------------------------------------------------
    def update(self, **fields: Unpack[RunRecord]) -> None:
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
        self.request_stop()

    def request_stop(self) -> None:
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
               SUPERVISOR_ENV: f"{me['pid']}:{me['started']}", MACHINE_RANK_ENV: str(self.machine_rank)}
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
        self.start_manifest()

    # -- manifest ----------------------------------------------------------------------------
    def start_manifest(self) -> None:
        """What this machine runs on (versions, host, GPUs, data hashes, git), written in a thread into
        machines/machine-M-manifest.json (tuitrain.runs.manifest): the launcher has started already."""
        from tuitrain.runs.manifest import ManifestWriter

        try:
            self.manifest = ManifestWriter(self.paths, self.record, self.machine_rank, log=log)
            self.manifest.start(expect_sample=self.sampler is not None)
        except Exception as exc:  # noqa: BLE001 — a record of the run, never a reason to end it
            log(f"could not start writing this machine's manifest: {type(exc).__name__}: {exc}")
            self.manifest = None

    def stop_manifest(self) -> None:
        """Wait (bounded) for the manifest, so a run that ended has one."""
        writer, self.manifest = self.manifest, None
        if writer is not None:
            writer.finish()

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
        """Each sample of this machine, as taken (the first one names the manifest's GPUs; a node agent also sends
        each home)."""
        writer = self.manifest
        if writer is not None:
            writer.offer(snapshot)

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
        records = self.own_rank_records()
        self.rank_exit_codes = {rank: rec["exit_code"] for rank, rec in records.items()}
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
            died_badly = rec["exit_code"] not in (None, 0) or (rec["exit_code"] is None and gone)
            if died_badly:
                dead_now.append(rank)
            if died_badly and self.first_dead_rank is None and not self.terminating:
                first_now = True
                self.first_dead_rank = rank
                self.rank_death_time = now
                log(f"rank {rank} (pid {rec['pid']}) ended ({describe_exit(rec['exit_code'])}); tearing down the others")
        if first_now:  # woken by its exit, it was seen dying alone: the first for certain; else torch's word decides
            self.first_dead_seen = tuple(dead_now)
            self.first_dead_alone = len(dead_now) == 1
        self.adopt_output_dir(records)
        if changed or now - self._scanned_at > SCAN_SECONDS:
            self.scan(now)
        if changed:
            pids: RunPids = {**(self.record.get("pids") or {})}
            pids["ranks"] = {str(r): info["pid"] for r, info in sorted(self.ranks.items())}
            processes = dict(self.record.get("processes") or {})
            processes.update({f"rank {r}": {"pid": info["pid"], "started": info["started"]}
                              for r, info in sorted(self.ranks.items())})
            self.update(pids=pids, processes=processes)

    def own_rank_records(self) -> dict[int, dict[str, Any]]:
        """The records of this machine's ranks. A Slurm run's node 0 also finds the other nodes' in the run's ranks/
        (copied there for viewers): their pids name no process of this machine, or another one, and reading one as
        a rank of its own tore the run down as soon as that rank's process was gone before its record came home."""
        records = read_rank_records(self.paths).items()
        return {rank: rec for rank, rec in records if int(rec.get("machine_rank", rec.get("node_rank")) or 0) == self.machine_rank}

    @property
    def machine_rank(self) -> int:
        """This supervisor's machine, as its record says (0 for a local run). The ranks' records say it back
        (MACHINE_RANK_ENV): torch's GROUP_RANK need not match it (a c10d rendezvous orders machines its own way)."""
        return int(self.record.get("machine_rank") or 0)

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

    # -- hangs -------------------------------------------------------------------------------
    def rank_states(self) -> dict[int, str]:
        states = {}
        for rank, info in list(self.ranks.items()):
            try:
                states[rank] = info["proc"].status() if info.get("proc") is not None else ""
            except psutil.Error:
                continue
        return states

    def watch_hang(self) -> None:
        """Judge the heartbeats every HANG_CHECK_SECONDS; on a new hang take the stacks once, then do `[run] on_hang`."""
        from tuitrain.runs.hang import describe, run_hang

        now = time.monotonic()
        if self.terminating or self.hang_error or now - self._hang_checked_at < HANG_CHECK_SECONDS:
            return
        self._hang_checked_at = now
        try:
            verdict = run_hang(self.paths, self.record, states=self.rank_states())
        except Exception as exc:  # noqa: BLE001 — a judgement, never a reason to end the run
            log(f"could not judge the heartbeats: {type(exc).__name__}: {exc}")
            return
        if verdict is None or not verdict.hung:
            if self.hang_seen is not None:
                log("the ranks move again: no longer hung")
            self.hang_seen, self.hang_stop_deadline = None, None
            return
        if self.hang_stop_deadline is not None and now >= self.hang_stop_deadline:
            self.end_hung(f"asked to stop, the ranks did not within {self._stop_wait:.0f}s")
            return
        if self.hang_seen is not None:
            return  # this hang was acted on
        self.hang_seen = verdict.since
        said = describe(verdict, time.time())
        log(f"{said[0]} (on_hang = {self.on_hang}); taking every rank's stacks")
        self.hang_cause = self.hang_stacks(said[0].removeprefix("hung? "))
        self.update(hang={"since": verdict.since, "ranks": [s.rank for s in verdict.stalled], "cause": self.hang_cause})
        self.send_hang_word()
        if self.on_hang == "kill":
            self.end_hung("on_hang = \"kill\"")
        elif self.on_hang == "stop":
            self._stop_wait = max(HANG_STOP_FLOOR, verdict.limit or 0.0)
            self.hang_stop_deadline = now + self._stop_wait
            log(f"on_hang = \"stop\": asking the ranks to save and stop; ended as hung if they cannot within "
                f"{self._stop_wait:.0f}s")
            self.request_stop()

    def send_hang_word(self) -> None:
        """[notify] word of the hang (`on` lists "hung"), with the digest as its cause, from a thread of its own:
        a webhook that hangs too never holds the supervisor."""
        from tuitrain.notify import notify_end
        from tuitrain.runs.events import progress, read_events

        hung = {**self.record, "status": "hung", "error": self.hang_cause}
        threading.Thread(target=notify_end, args=(hung, lambda: progress(read_events(self.paths.events)),
                                                  str(self.paths.root)), daemon=True, name="hang-word").start()

    def hang_stacks(self, stalled: str) -> str:
        """Take every rank's stacks once (stacks/), and say the hang in one line with their digest."""
        from tuitrain.runs.stacks import digest_text, take_stacks, write_digest

        try:
            digest = digest_text(write_digest(self.paths, take_stacks(self.paths, self.record)))
        except Exception as exc:  # noqa: BLE001 — the hang is still said, without where the ranks are
            log(f"could not take the stacks: {type(exc).__name__}: {exc}")
            digest = ""
        log(f"stacks: {digest or '(none)'}")
        return f"hung: {stalled}" + (f"; {digest}" if digest else "")

    def end_hung(self, why: str) -> None:
        self.hang_error = self.hang_cause or "hung"
        self.terminating = True
        log(f"{why}: ending every process of the run as hung")
        self.update(status="stopping")
        self.end_all(KILL_GRACE_SECONDS)

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
            self.check_run_directory()
            self.tick()
            self.poll_control()
            self.poll_ranks(exited)
            self.watch_hang()
            code = self.launcher.poll()
            if code is not None:
                return code
            if self.ranks_succeeded():
                self.launcher_outlived_ranks = True
                return 0  # what the launcher will say: accelerate launch exits with its ranks' code
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

    def check_run_directory(self) -> None:
        """Removed under a live run, nobody could see the run or stop it any more: it must not train on unseen.
        Only "no such file", twice at least GONE_SECONDS apart, counts: a network filesystem's passing error
        (ESTALE, EIO) must not end a run of days."""
        try:
            os.stat(self.paths.root)
        except FileNotFoundError:
            now = time.monotonic()
            if self._gone_since is None:
                self._gone_since = now
            elif now - self._gone_since >= GONE_SECONDS:
                raise RunDirectoryGone(f"the run directory {self.paths.root} was removed while the run went on") from None
            return
        except OSError:
            pass
        self._gone_since = None

    def ranks_succeeded(self) -> bool:
        """Every rank of this one-machine run has exited, each with code 0 in its record."""
        expected = int(self.record.get("num_processes") or 0)
        if not self.END_WITH_RANKS or int(self.record.get("num_machines") or 1) != 1 or expected < 1:
            return False
        if len(self.ranks) != expected or len(self.rank_exit_codes) != expected:
            return False
        if any(code != 0 for code in self.rank_exit_codes.values()):
            return False
        return all(info["proc"] is None or not running(info["proc"]) for info in self.ranks.values())

    # -- finish ------------------------------------------------------------------------------
    def finish(self, launcher_code: int) -> str:
        self.poll_ranks()
        self.scan(time.monotonic())
        exiting = self.launcher.pid if self.launcher is not None and self.launcher_outlived_ranks else None
        left = {pid: proc for pid, proc in self.tracked.items() if pid != exiting}
        if left:
            log(f"processes left after the launcher exited: {sorted(left)}; ending them")
            self.mark_ending()
            end_processes(left.values(), grace=KILL_GRACE_SECONDS)
        records = read_rank_records(self.paths)
        cause = root_cause(self.paths.launcher_log) if launcher_code != 0 else None
        exit_codes: dict[str, Any] = {"launcher": launcher_code}
        for rank, rec in sorted(records.items()):
            code = rec["exit_code"]
            if code is None and cause is not None:  # killed: only torch's agent saw how it ended
                code = cause.exit_codes.get(rank, cause.exit_code if cause.rank == rank else None)
            exit_codes[str(rank)] = code if code is not None else "killed"
        status, failed_rank, error = self.outcome(launcher_code, records, cause)
        self.stop_sampling()
        self.stop_manifest()
        self.record = record_end(self.paths, status=status, ended=time.time(), exit_codes=exit_codes,
                                 failed_rank=failed_rank, error=error)
        if exiting is None:
            log(f"run {status} (launcher exit code {launcher_code})" + (f": {error}" if error else ""))
        else:
            log(f"run {status} (every rank exited 0; accelerate launch still exiting)")
            self.await_launcher(exit_codes)
        return status

    def await_launcher(self, exit_codes: dict[str, Any]) -> None:
        """After the end is recorded: reap accelerate launch, ending it if its teardown hangs; a code other than
        the ranks' 0 is logged and recorded."""
        assert self.launcher is not None
        try:
            code = self.launcher.wait(timeout=LAUNCHER_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            log(f"accelerate launch (pid {self.launcher.pid}) did not exit {LAUNCHER_EXIT_SECONDS:.0f}s after its ranks; ending it")
            end_processes([p for p in self.tracked.values() if p.pid == self.launcher.pid], grace=KILL_GRACE_SECONDS)
            code = self.launcher.wait()
        if code != 0:
            log(f"accelerate launch exited with code {code} after every rank had exited 0")
            self.update(exit_codes={**exit_codes, "launcher": code})

    def outcome(self, launcher_code: int, records: dict[int, dict[str, Any]], cause: Any) -> tuple[str, int | None, str | None]:
        """(status, failed rank, one-line cause) of a run whose launcher exited."""
        if self.hang_error:
            return "failed", None, self.hang_error
        if self.terminating:
            return "killed", None, "ended by `tuitrain stop --now`: every process was terminated, nothing was saved"
        if self.stop_requested and launcher_code == 0:
            return "stopped", None, None
        if launcher_code == 0 and self.first_dead_rank is None:
            return "finished", None, None
        if self.first_dead_rank is not None and self.first_dead_alone:
            rank: int | None = self.first_dead_rank  # seen dying before any other: its peers failed after it
        else:  # several found dead in one look
            found = first_of_several(cause, {r: records[r] for r in self.first_dead_seen if r in records})
            rank = found if found is not None else self.first_dead_rank
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
        if code is None and cause is not None:
            code = cause.exit_codes.get(rank, cause.exit_code if cause.rank == rank else None)
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
