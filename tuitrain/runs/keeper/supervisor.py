"""The detached supervisor, started as `python -m tuitrain.runs.keeper.supervise RUN_DIR`: a run's keeper.

Started in a session of its own by `tuitrain run`, so a closed terminal or a dropped SSH
connection does not reach it. It keeps run.json true, turns SIGTERM/SIGINT/SIGHUP into a graceful stop request,
honours control requests, watches for a hang, and records the run's end and its outcome, or, when `[run] restarts`
(or `on_oom`) and the cause allow it (tuitrain.runs.keeper.restart_rule), starts the whole run again from its latest
complete checkpoint after a backoff, with workers made afresh (tuitrain.runs.keeper.attempts). The processes it keeps
are its workers (tuitrain.runs.keeper.workers): this machine's ranks under one `accelerate launch`
(tuitrain.runs.keeper.local_launch, the default) or the node agents of a run on several machines
(tuitrain.runs.keeper.machine_links); a node agent's and a Slurm node's supervisors are this one with hooks overridden.

Whatever happens to it, the run does not outlive it: the launcher gets SIGTERM when the
supervisor dies (Linux's parent-death signal), each rank watches it (tuitrain.engine.watchdog),
and a failure of its own is recorded in run.json before it exits.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping, Unpack

from tuitrain.rundir.layout import CONTROL_ENDING, CONTROL_STOP, CONTROL_TERMINATE, KILL_REQUEST, RunPaths
from tuitrain.rundir.process_tree import KILL_GRACE_SECONDS, identity
from tuitrain.rundir.ranks import RankRecord
from tuitrain.rundir.record import RestartRecord, RunRecord, Status, read_record, record_end, update_record
from tuitrain.rundir.redirect import redirect_output
from tuitrain.rundir.run import Run
from tuitrain.runs.keeper.attempts import (
    counted_restarts,
    keep_attempt,
    progressed,
    restart_checkpoint,
    restart_event,
    restart_settings,
    split_profile,
    training_batch,
)
from tuitrain.runs.keeper.local_launch import LocalLaunch, free_port
from tuitrain.runs.keeper.restart_rule import ACCUMULATION_KEY, BATCH_KEY, AttemptEnd, backoff_seconds, cause_kind, verdict
from tuitrain.runs.keeper.supervisor_log import log
from tuitrain.runs.keeper.workers import Keeper, Outcome, Workers

__all__ = ["KILL_GRACE_SECONDS", "HANG_CHECK_SECONDS", "RunDirectoryGone", "Supervisor", "free_port", "log",
           "run_supervisor"]

POLL_SECONDS = 0.5  # how often control requests and rank records are looked at (an exit wakes it at once)
GONE_SECONDS = 2.0  # the run directory missing this long (two looks at least) ends the run
OUTPUT_LOOK_SECONDS = 1.0  # how often the output folder is looked for
HANG_CHECK_SECONDS = 2.0  # how often the ranks' heartbeats are judged (tuitrain.runs.view.hang)
HANG_STOP_FLOOR = 10.0  # on_hang = "stop": the ranks get at least this long (and a step's limit) to stop themselves
BACKOFF_LOOK_SECONDS = 0.2  # how often a stop is looked for while a restart waits


class RunDirectoryGone(Exception):
    """The run's directory was removed while the run went on: its processes are ended (run_supervisor's abort)."""


class Supervisor:
    """The keeper of one run: its record, control requests, signals, hang watch, end and outcome, over its workers
    (`workers` makes them for this keeper; by default this machine's ranks under one `accelerate launch`)."""

    # Whether the run's end is recorded once every rank has exited 0, without waiting for accelerate launch's
    # own exit (its interpreter's teardown: 1-3 s of torch's, after the outcome is known). A backend whose
    # outcome needs more than its ranks (a node agent's home, a Slurm job's steps) keeps the launcher's word.
    END_WITH_RANKS = True
    # Whether this keeper restarts its run (`[run] restarts`, `on_oom`): a node agent's is restarted by its home.
    RESTARTS_HERE = True

    def __init__(self, paths: RunPaths, workers: Callable[[Keeper], Workers] = LocalLaunch) -> None:
        self.paths = paths
        self.record = read_record(paths)
        self.stop_requested = False
        self.stop_signal: str | None = None  # the signal that asked the stop ("SIGTERM to its supervisor"), if one did
        self.terminating = False
        self.poll_seconds = POLL_SECONDS
        self._gone_since: float | None = None  # when the run directory was first found missing
        # the output folder was here once (made with the run's claim before it started; a home of several
        # machines may never have it)
        output_dir = self.run.output_dir
        self._output_seen = bool(output_dir) and os.path.isdir(str(output_dir))
        self._output_looked = 0.0
        self.sampler: Any = None  # tuitrain.runs.keeper.samples.RunSampler, from start() to finish()
        self.manifest: Any = None  # tuitrain.runs.keeper.manifest.ManifestWriter, from start() to finish()
        from tuitrain.runs.view.hang import hang_settings

        self.hang_after, self.on_hang = hang_settings(paths)
        self._hang_checked_at = 0.0
        self.hang_seen: float | None = None  # when the hang now seen began (None: the run moves)
        self._hang_said = ""  # the hang now seen: its first line (runs.view.hang.describe)
        self.hang_cause: str | None = None  # what it says of that hang: its ranks and the digest of their stacks
        self.hang_stop_deadline: float | None = None  # on_hang = "stop": when a stop the ranks could not agree on ends
        self.hang_error: str | None = None  # the run was ended for a hang: its recorded cause
        self._stop_wait = 0.0
        self.restarts = restart_settings(paths)
        self.not_restarted: str | None = None  # why a run that ended badly was not restarted (the rule's words)
        self.make_workers = workers
        self.workers = workers(self)

    # -- record ------------------------------------------------------------------------------
    @property
    def run(self) -> Run:
        """Its record as last written, as typed fields."""
        return Run(self.paths, self.record)

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

    @property
    def machine_rank(self) -> int:
        """This supervisor's machine, as its record says (0 for a local run). The ranks' records say it back
        (MACHINE_RANK_ENV): torch's GROUP_RANK need not match it (a c10d rendezvous orders machines its own way)."""
        return self.run.machine_rank

    def adopt_output_dir(self, records: Mapping[int, RankRecord]) -> None:
        """A script-mode run's checkpoints folder is its Trainer's: rank 0 names it in its record."""
        named = records[0].get("output_dir") if 0 in records else None
        if isinstance(named, str) and named and named != self.run.output_dir:
            log(f"output folder (named by rank 0): {named}")
            self.update(output_dir=named)

    # -- signals -----------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        log(f"received {signal.Signals(signum).name}: asking the ranks to save a checkpoint and stop")
        self.stop_signal = self.stop_signal or f"{signal.Signals(signum).name} to its supervisor"
        self.request_stop()

    def request_stop(self) -> None:
        try:
            self.paths.control.mkdir(exist_ok=True)
            self.paths.control_request(CONTROL_STOP).touch()
        except OSError as exc:
            log(f"could not write the stop request: {exc}")

    # -- start -------------------------------------------------------------------------------
    def start(self) -> None:
        self.workers.start()
        if self.workers.SAMPLED_HERE:
            self.start_sampling()
            self.start_manifest()

    # -- manifest ----------------------------------------------------------------------------
    def start_manifest(self) -> None:
        """What this machine runs on (versions, host, GPUs, data hashes, git), written in a thread into
        machines/machine-M-manifest.json (tuitrain.runs.keeper.manifest): the launcher has started already."""
        from tuitrain.runs.keeper.manifest import ManifestWriter

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
        machines/machine-M-samples.json (tuitrain.runs.keeper.samples: the one sampling code of every machine of a run)."""
        from tuitrain.runs.keeper.samples import RunSampler

        try:
            self.sampler = RunSampler(self.paths, self.record, self.rank_pids,
                                      machine_rank=self.run.machine_rank,
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
        return self.workers.rank_pids()

    def sampled(self, snapshot: Any) -> None:
        """Each sample of this machine, as taken (the first one names the manifest's GPUs; a node agent also sends
        each home)."""
        writer = self.manifest
        if writer is not None:
            writer.offer(snapshot)

    # -- control -----------------------------------------------------------------------------
    def poll_control(self) -> None:
        """The run's control requests: stop and `stop --now` are the keeper's; the workers pass on what their
        ranks cannot read here. While the workers are torn down after a failure, none is taken."""
        if self.workers.tearing_down:
            return
        if not self.stop_requested and self.paths.control_request(CONTROL_STOP).exists():
            self.stop_requested = True
            log(self.workers.STOP_SAID)
            self.update(status="stopping")
        if not self.terminating and self.paths.control_request(CONTROL_TERMINATE).exists():
            self.terminating = True
            log("terminate requested: ending every process of the run now")
            self.update(status="stopping")
            self.workers.terminate(f"ended by {KILL_REQUEST}")
        self.workers.relay_control()

    def mark_ending(self) -> None:
        """Before tuitrain itself signals the run's processes: a rank that takes SIGTERM as a stop request (under
        Slurm) ends at once when it finds this."""
        try:
            self.paths.control.mkdir(exist_ok=True)
            self.paths.control_request(CONTROL_ENDING).touch()
        except OSError as exc:
            log(f"could not write control/{CONTROL_ENDING}: {exc}")

    # -- hangs -------------------------------------------------------------------------------
    def watch_hang(self) -> None:
        """Judge the heartbeats every HANG_CHECK_SECONDS; on a new hang take the stacks once (the workers say when
        they are all here), then do `[run] on_hang` where the workers leave it to the keeper."""
        from tuitrain.runs.view.hang import describe, run_hang

        now = time.monotonic()
        if (self.terminating or self.hang_error or self.workers.tearing_down
                or now - self._hang_checked_at < HANG_CHECK_SECONDS):
            return
        self._hang_checked_at = now
        try:
            verdict = run_hang(self.paths, self.record, states=self.workers.rank_states())
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
        if self.hang_seen is None:
            self.hang_seen, self.hang_cause = verdict.since, None
            self._hang_said = describe(verdict, time.time())[0]
            log(self.workers.HANG_SAID.format(said=self._hang_said, on_hang=self.on_hang))
            self.workers.hang_begins(verdict.limit)
        elif self.hang_cause is not None:
            return  # this hang was acted on
        try:
            cause = self.workers.hang_cause(self._hang_said.removeprefix("hung? "))
        except Exception as exc:  # noqa: BLE001 — a judgement, never a reason to end the run
            log(f"could not judge the hang: {type(exc).__name__}: {exc}")
            return
        if cause is None:
            return  # its stacks are still on their way
        self.hang_cause = cause
        self.update(hang={"since": verdict.since, "ranks": [s.rank for s in verdict.stalled], "cause": cause})
        if not self.workers.ACTS_ON_HANG:
            return
        self.send_hang_word()
        if self.on_hang in ("kill", "restart"):  # a restart is the keeper's once its workers have ended
            self.end_hung(f"on_hang = \"{self.on_hang}\"")
        elif self.on_hang == "stop":
            self._stop_wait = max(HANG_STOP_FLOOR, verdict.limit or 0.0)
            self.hang_stop_deadline = now + self._stop_wait
            log(f"on_hang = \"stop\": asking the ranks to save and stop; ended as hung if they cannot within "
                f"{self._stop_wait:.0f}s")
            self.request_stop()

    def send_hang_word(self) -> None:
        """[notify] word of the hang (`on` lists "hung"), with the digest as its cause, from a thread of its own:
        a webhook that hangs too never holds the supervisor."""
        from tuitrain.notify import RunWord, notify_end
        from tuitrain.rundir.events import progress, read_events

        hung = RunWord.of(self.run).saying("hung", self.hang_cause)
        threading.Thread(target=notify_end, args=(hung, lambda: progress(read_events(self.paths.events)),
                                                  str(self.paths.root)), daemon=True, name="hang-word").start()

    def hang_stacks(self, stalled: str) -> str:
        """Take every rank's stacks once (stacks/), and say the hang in one line with their digest."""
        from tuitrain.runs.view.stacks import digest_text, take_stacks, write_digest

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
        if not (self.on_hang == "restart" and self.RESTARTS_HERE and self.restarts.restarts):
            self.update(status="stopping")  # a run that restarts goes on running
        self.workers.terminate(why)

    # -- watch -------------------------------------------------------------------------------
    def tick(self) -> None:
        """Called once per poll; a node agent mirrors its files and talks to home here."""

    def abort(self) -> None:
        """End every process of the run now (the supervisor itself is failing)."""
        self.workers.abort()

    def watch(self) -> int:
        """Until the workers have ended: their launcher's exit code (0 for machines, whose outcome is their word)."""
        woke = True
        while True:
            self.check_run_directory()
            self.check_output_dir()
            self.tick()
            self.poll_control()
            self.workers.poll(woke)
            self.watch_hang()
            code = self.workers.step()
            if code is not None:
                return code
            woke = self.workers.wait()

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

    def check_output_dir(self) -> None:
        """An output folder removed under the run (by hand, a cleanup job) is made again with its claim, so that no
        second run is let into it, and said: its checkpoints until then are gone (`output_removed`)."""
        folder = self.run.output_dir
        now = time.monotonic()
        if not folder or now - self._output_looked < OUTPUT_LOOK_SECONDS:
            return
        self._output_looked = now
        try:
            os.stat(folder)
        except FileNotFoundError:
            if not self._output_seen:
                return
            from tuitrain.runs.start.output_claim import claim_output_dir

            taken = claim_output_dir(Path(folder), self.paths)
            self.update(output_removed=time.time())
            log(f"the output folder {folder} was removed while the run went on: its checkpoints until now are gone; "
                + (f"made again, but {taken}" if taken else "made again and claimed for this run"))
            return
        except OSError:
            return
        self._output_seen = True

    # -- finish ------------------------------------------------------------------------------
    def finish(self, launcher_code: int) -> str | None:
        """Record the end; or, when the restart rule starts the run again, None: the next attempt is running."""
        settled = self.workers.settle(launcher_code)
        status, failed_rank, error = self.outcome(launcher_code, settled.records, settled.cause)
        if self.RESTARTS_HERE and status != "finished":
            ended = self.after_attempt(status, failed_rank, error, settled)
            if ended is None:
                return None
            status, failed_rank, error = ended
        self.stop_sampling()
        self.stop_manifest()
        self.record = record_end(self.paths, status=status, ended=time.time(), exit_codes=settled.exit_codes,
                                 failed_rank=failed_rank, error=error, not_restarted=self.not_restarted)
        log(self.workers.said_end(status, launcher_code, error))
        self.workers.after_end(settled.exit_codes)
        return status

    # -- restarts ----------------------------------------------------------------------------
    def after_attempt(self, status: Status, failed_rank: int | None, error: str | None, settled: Any) -> Outcome | None:
        """An attempt that ended badly: the restart rule's verdict, said; when it restarts, the backoff (a stop ends
        it: the outcome returned is the user's), then the next attempt (None). Else the outcome to record."""
        settings = self.restarts
        end = AttemptEnd(status, error, failed_rank, settled.exit_codes, hung=self.hang_error is not None,
                         stop_asked=self.stop_requested or self.paths.control_request(CONTROL_STOP).exists())
        checkpoint, skipped = restart_checkpoint(self.record)
        batch = training_batch(self.paths)
        said = verdict(end, settings, counted_restarts(self.record), progressed(self.record, checkpoint), batch)
        if not said.restart:
            if status == "failed" and (settings.restarts or settings.on_oom != "fail" or cause_kind(end) == "oom"):
                self.not_restarted = said.why
                log(said.why)
            return status, failed_rank, error
        number = self.run.attempt + 1
        wait = backoff_seconds(settings, counted_restarts(self.record) if said.counted else 0)
        now = time.time()
        entry: RestartRecord = {"attempt": number, "at": now + wait, "ended": now, "status": status, "error": error,
                                "failed_rank": failed_rank, "exit_codes": settled.exit_codes,
                                "began_from": self.run.resume_from, "resume_from": checkpoint,
                                "skipped": skipped, "counted": said.counted}
        if said.split is not None and batch is not None:
            entry["batch"] = {"per_device_train_batch_size": (batch[0], said.split[0]),
                              "gradient_accumulation_steps": (batch[1], said.split[1])}
        earlier = list(self.run.restarts)
        self.update(restarts=[*earlier, entry], restarts_allowed=settings.restarts)
        from tuitrain.runs.view.attempts import attempt_line

        log(f"{said.why}; " + (attempt_line(self.run, now) or f"attempt {number}")
            + (f" (passed over as damaged: {', '.join(skipped)})" if skipped else ""))
        self.send_restart_word()
        stopped = self.wait_to_restart(entry["at"], error)
        if stopped is not None:
            self.update(restarts=earlier)  # it never began
            return stopped
        try:
            self.begin_attempt(entry, said.split)
        except OSError as exc:
            log(f"could not start attempt {number}: {exc}")
            return "failed", failed_rank, f"could not start attempt {number} ({exc}) after: {error}"
        return None

    def send_restart_word(self) -> None:
        """[notify] word of the restart (`on` lists "restarted"), from a thread of its own, as a hang's."""
        from tuitrain.notify import RunWord, notify_end
        from tuitrain.rundir.events import progress, read_events
        from tuitrain.runs.view.attempts import attempt_line

        now = time.time()
        word = RunWord.of(self.run).saying("restarted", attempt_line(self.run, now), ended=now)
        threading.Thread(target=notify_end, args=(word, lambda: progress(read_events(self.paths.events)),
                                                  str(self.paths.root)), daemon=True, name="restart-word").start()

    def wait_to_restart(self, until: float, error: str | None) -> Outcome | None:
        """The backoff: None once it has passed; a stop (or `stop --now`, or a signal) ends the run instead."""
        after = f" while waiting to restart, after: {error}" if error else " while waiting to restart"
        while True:
            self.check_run_directory()
            if self.paths.control_request(CONTROL_TERMINATE).exists():
                self.update(status="stopping")
                log(f"terminate requested{after}: the run ends")
                return "killed", None, f"ended by {KILL_REQUEST}{after}"
            if self.paths.control_request(CONTROL_STOP).exists():
                self.update(status="stopping")
                how = f"on {self.stop_signal}" if self.stop_signal else "on request (`tuitrain stop`, or the app)"
                log(f"stop requested{after}: the run ends")
                checkpoint = self.run.restarts[-1].get("resume_from") if self.run.restarts else None
                resume = (f"; `tuitrain resume {self.paths.id}` continues from {Path(checkpoint).name}"
                          if checkpoint else "")
                return "stopped", None, f"stopped {how}{after}{resume}"
            left = until - time.time()
            if left <= 0:
                return None
            time.sleep(min(BACKOFF_LOOK_SECONDS, left))

    def own_log(self) -> Path:
        """The file this keeper's fds 1 and 2 write (its launcher log); a restart begins a new one."""
        return self.paths.launcher_log

    def begin_attempt(self, entry: RestartRecord, split: tuple[int, int] | None, choose: bool = True) -> None:
        """The attempt before kept apart (attempts/N/), this keeper's log begun afresh, the batch split, the run's
        record pointed at the checkpoint (`choose`: chosen again, one may have been damaged during the backoff),
        and workers made afresh and started."""
        number = entry["attempt"]
        self.workers.after_end({})
        kept = keep_attempt(self.paths, number - 1)
        redirect_output(self.own_log())
        log(f"attempt {number} of run {self.paths.id}; attempt {number - 1}'s files are in {kept.root}")
        if choose:
            checkpoint, skipped = restart_checkpoint(self.record)
            if checkpoint != entry.get("resume_from"):
                log(f"{Path(entry.get('resume_from') or '-').name} is no longer whole: starting from "
                    f"{Path(checkpoint).name if checkpoint else 'the beginning'}")
            entry = {**entry, "resume_from": checkpoint, "skipped": skipped}
            restart_event(self.paths, entry)
        self.prepare_attempt(kept, split)
        started = self.run.started
        begun: RestartRecord = {**entry, "at": time.time()}
        fields = self.attempt_fields(entry.get("began_from"), entry.get("resume_from"), number)
        fields["attempt"], fields["resume_from"], fields["hang"] = number, entry.get("resume_from"), None
        fields["restarts"] = [*(r for r in self.run.restarts if r.get("attempt") != number), begun]
        self.update(**fields)
        self.stop_requested, self.stop_signal, self.terminating = False, None, False
        self.hang_seen, self.hang_cause, self.hang_stop_deadline, self.hang_error = None, None, None, None
        self._hang_said, self._hang_checked_at = "", 0.0
        self.workers = self.make_workers(self)
        self.workers.start()
        if started:
            self.update(started=started)  # the run's start, not this attempt's

    def prepare_attempt(self, kept: RunPaths, split: tuple[int, int] | None) -> None:
        """What the next attempt trains with, before its workers start: the frozen profile with its batch split."""
        if split is not None:
            split_profile(self.paths, kept, *split)
            log(f"frozen profile: [training] {BATCH_KEY} = {split[0]}, {ACCUMULATION_KEY} = {split[1]} (the one before "
                f"is {kept.profile})")

    def attempt_fields(self, before: str | None, after: str | None, number: int) -> RunRecord:
        """What the next attempt's launch changes in the record: a script told its checkpoint (`[script]
        resume_arg`), a port picked afresh where the profile names none, each machine's own node folder."""
        from tuitrain.runs.keeper.attempts import attempt_argv, attempt_machines

        fields: RunRecord = {}
        argv, afresh = attempt_argv(self.paths, self.run.argv, before, after, self.run.num_machines)
        if argv:
            fields["argv"] = argv
        if afresh:
            fields["main_process_port"] = None
        if self.run.machines:
            fields["machines"] = attempt_machines(self.paths, self.run.machines, before, after, number)
        return fields

    def outcome(self, launcher_code: int, records: dict[int, RankRecord], cause: Any) -> Outcome:
        """(status, failed rank, one-line cause) of a run whose workers ended."""
        if self.hang_error:
            return "failed", None, self.hang_error
        if self.terminating:
            return "killed", None, self.workers.KILLED_SAID
        status, rank, error = self.workers.outcome(launcher_code, records, cause)
        return status, rank, (self.stopped_why() if status == "stopped" and error is None else error)

    def stopped_why(self) -> str:
        """A stopped run's one line: who asked, and the checkpoint it saved to continue from."""
        from tuitrain.rundir.checkpoints import latest_complete, run_checkpoints

        how = f"on {self.stop_signal}" if self.stop_signal else "on request (`tuitrain stop`, or the app)"
        newest = latest_complete(run_checkpoints(self.record))
        if newest is None:  # none here: a run of several machines may keep them on its machine 0
            return f"stopped {how}"
        return f"stopped {how} after saving {newest.path.name}; `tuitrain resume {self.paths.id}` continues from it"


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
        while True:  # each turn one attempt: a restart begins the next (Supervisor.finish's None)
            status = supervisor.finish(supervisor.watch())
            if status is not None:
                return status
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
