"""`python -m tuitrain.slurm.agent RUN_DIR`: one node's part of a Slurm job, started by the job's `srun`.

It asks the one planner for its node (tuitrain.launch.planner, through plan_launch, with the node's own hardware
probed here), with machine_rank = SLURM_NODEID, num_machines = the job's nodes and main_process_ip = the address of
the job's first host (`scontrol show hostnames $SLURM_JOB_NODELIST`, then its NodeAddr), then supervises that
`accelerate launch` with the ordinary supervisor. The run directory is on the cluster's shared filesystem, so
nothing is mirrored: node 0 keeps the run directory itself (run.json, logs, events, control); node M > 0 keeps its
record in nodes/machine-M/ and writes its ranks' logs into the run's logs/ (each rank's file is its own).

Stop requests arrive as the run's control files, as locally (`tuitrain stop`, or the batch script's trap of Slurm's
time-limit warning); rank 0 decides for every rank.

Every node's supervisor answers a request for its ranks' stacks (control/stacks in its own folder, written by
`tuitrain stacks` or by node 0 on a hang: tuitrain.runs.view.stacks.nodes_stacks) from its tick.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from tuitrain.atomic import write_json_atomic, write_text_atomic
from tuitrain.errors import TuitrainError
from tuitrain.rundir import preemption
from tuitrain.rundir.layout import CONTROL_ENDING, CONTROL_REQUESTS, CONTROL_STOP, RunPaths
from tuitrain.rundir.ranks import RankRecord
from tuitrain.rundir.record import (
    RunRecord,
    RunRecordError,
    SlurmRecord,
    Status,
    has_ended,
    inherited,
    new_record,
    read_record,
    record_end,
    reserve_space,
    update_record,
    write_record,
)
from tuitrain.rundir.redirect import redirect_output
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.local_launch import LauncherOptions, LocalLaunch
from tuitrain.runs.keeper.supervisor import HANG_CHECK_SECONDS, Supervisor, log, run_supervisor
from tuitrain.runs.keeper.workers import Outcome
from tuitrain.slurm.commands import hostnames, node_address
from tuitrain.slurm.script import WARNED_FILE
from tuitrain.yaml_text import dump as dump_yaml

if TYPE_CHECKING:
    from tuitrain.launch.planner import MachineRole
    from tuitrain.profile.settings import Settings

PORT_BASE = 20000  # with no main_process_port in the profile, every node derives the same one from the job id
PORT_SPAN = 20000


class AgentError(TuitrainError):
    """Why this node cannot take its part, in one line (recorded as the run's end)."""


def job_port(job_id: str) -> int:
    return PORT_BASE + int(job_id) % PORT_SPAN if job_id.isdecimal() else PORT_BASE


def node_paths(home: RunPaths, node: int) -> RunPaths:
    return home.node(node)


def link_logs(home: RunPaths, paths: RunPaths, node: int, processes: int) -> None:
    """Node M > 0's rank logs and events: links to the run's own files."""
    paths.logs.mkdir(exist_ok=True)
    for rank in range(node * processes, (node + 1) * processes):
        link = paths.rank_log(rank)
        if not link.is_symlink():
            link.symlink_to(home.rank_log(rank))
    if not paths.events.is_symlink():
        paths.events.symlink_to(home.events)


def prepare_node(home: RunPaths, node: int, processes: int, record: RunRecord) -> RunPaths:
    """Node M > 0: its own record and control folder; its ranks' logs and the events go to the run's own files."""
    paths = node_paths(home, node)
    if node == 0:
        return paths
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.control.mkdir(exist_ok=True)
    write_text_atomic(paths.profile, home.profile.read_text(encoding="utf-8"))
    link_logs(home, paths, node, processes)
    write_record(paths, new_record(home.id, str(Fields(record).profile), machine_rank=node, home=str(home.root),
                                   **inherited(record, "cwd", "profile_path")))  # the run directory is shared: its cwd too
    return paths


def node_role(settings: Settings, root: Path, node: int, nodes: int, main_host: str | None, job_id: str,
              environ: Mapping[str, str]) -> MachineRole:
    """Node `node` of `nodes`'s place in the job: it meets the others at the job's first host (None: one node,
    nobody to meet), at the profile's port or the job's; its network interface is the profile's; with Slurm's
    CUDA_VISIBLE_DEVICES every GPU it sees is the run's."""
    from tuitrain.launch.planner import role_of

    dist = settings["distributed"]
    port = dist["main_process_port"]
    if nodes > 1 and port is None:
        port = job_port(job_id)
    return dataclasses.replace(role_of(settings, root), rank=node, machines=nodes, main_ip=main_host, port=port,
                               interface=dist["network_interface"],
                               scheduler_gpus=bool(environ.get("CUDA_VISIBLE_DEVICES")))


def plan_node(paths: RunPaths, node: int, nodes: int, main_host: str | None, job_id: str) -> Any:
    """This node's LaunchPlan: the planner's answer for node `node` of the job, from the frozen profile and this
    machine's hardware."""
    from tuitrain.hardware import detect_hardware
    from tuitrain.launch import plan_launch
    from tuitrain.profile import Profile
    from tuitrain.runs.start.from_profile import launch_settings

    with open(paths.profile, "rb") as handle:
        data = tomllib.load(handle)
    hardware = detect_hardware()
    settings, _notes = launch_settings(Profile(path=paths.profile, data=data, notes=[]), hardware)
    resume_from = Fields(read_record(paths)).resume_from
    plan = plan_launch(settings, hardware, paths.root, file=str(paths.profile),
                       resume_from=Path(resume_from) if resume_from else None,
                       role=node_role(settings, paths.root, node, nodes, main_host, job_id, os.environ))
    if plan.errors:
        raise AgentError("; ".join(str(p) for p in plan.errors))
    return plan


def slurm_launcher() -> LauncherOptions:
    """A Slurm node's launcher ignores SIGTERM (Slurm's reaches every process: the ranks save and stop, the launcher
    waits for them; tuitrain.rundir.preemption), and gets SIGKILL, not SIGTERM, when this agent dies."""
    return LauncherOptions(env=preemption.launcher_env(), parent_death_signal=signal.SIGKILL, first=preemption.ignore_term)


FOLLOW_SLACK = 120.0  # node M > 0: how much longer than node 0's longest backoff it waits for node 0's restart


class SlurmSupervisor(Supervisor):
    """The ordinary supervisor, with a launcher that outlives Slurm's SIGTERM (tuitrain.rundir.preemption), saying
    so when the stop came from Slurm (its time-limit warning, or its SIGTERM). A restart ([run] restarts) is node 0's
    decision, within the job; every other node follows it (`follow_node_0`)."""

    END_WITH_RANKS = False  # a requeued or preempted job's outcome is the launcher's and Slurm's word

    def __init__(self, paths: RunPaths, home: RunPaths, requeue: bool = False) -> None:
        super().__init__(paths, workers=lambda keeper: LocalLaunch(keeper, slurm_launcher()))
        self.home = home
        self.requeue = requeue
        self.slurm_term = False  # Slurm's SIGTERM reached this agent (preemption, requeue, scancel)
        self.published: dict[str, int] = {}  # node M > 0: rank record → the mtime it was copied home at
        self.told_states: dict[int, str] = {}  # its stopped ranks as last written (tell_stopped_ranks)
        self._states_at = 0.0

    def _on_signal(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGTERM and not self.stop_requested:  # the cause, unless a stop was asked before
            self.slurm_term = True
        super()._on_signal(signum, frame)

    def tick(self) -> None:
        from tuitrain.runs.view.stacks import answer_stacks_request

        self.publish_ranks()
        answer_stacks_request(self.paths, self.record)  # `tuitrain stacks` (or node 0 on a hang) asked for its ranks'
        self.tell_stopped_ranks()

    def tell_stopped_ranks(self) -> None:
        """Its ranks stopped by SIGSTOP, into its folder's heartbeats/ (runs.view.hang.machine_states) when that changes:
        a viewer on another host cannot look at this node's processes."""
        from tuitrain.runs.view.hang import stopped_ranks

        now = time.monotonic()
        if now - self._states_at < HANG_CHECK_SECONDS:
            return
        self._states_at = now
        states = stopped_ranks(self.record)
        if states == self.told_states:
            return
        try:
            write_json_atomic(self.paths.machine_states(self.machine_rank), {str(r): s for r, s in states.items()})
            self.told_states = states
        except OSError as exc:
            log(f"could not write its stopped ranks: {exc}")

    def hang_stacks(self, stalled: str) -> str:
        """Node 0 of several: the hang's digest names every node's ranks, each other node's supervisor asked through
        the shared run directory (runs.view.stacks.nodes_stacks) once this one has taken its own ranks'."""
        others = {m: node for m, node in self.home.nodes().items() if m > 0}
        if self.paths != self.home or not others:
            return super().hang_stacks(stalled)
        from tuitrain.runs.view.stacks import digest_text, nodes_stacks, take_stacks, write_digest

        try:
            taken = take_stacks(self.paths, self.record)
            elsewhere, problems = nodes_stacks(self.paths, others)
            digest = digest_text(write_digest(self.paths, {**taken, **elsewhere}, problems))
        except Exception as exc:  # noqa: BLE001 — the hang is still said, without where the ranks are
            log(f"could not take the stacks: {type(exc).__name__}: {exc}")
            digest = ""
        log(f"stacks: {digest or '(none)'}")
        return f"hung: {stalled}" + (f"; {digest}" if digest else "")

    def send_hang_word(self) -> None:
        """Node 0 sends word of the job's hang (it judges every node's ranks); node M > 0, judging its own to act on
        `on_hang`, would send the same word again."""
        if self.paths == self.home:
            super().send_hang_word()

    # -- restarts (within the job; a requeue is Slurm's and stays as it is) ------------------------------------
    def after_attempt(self, status: Status, failed_rank: int | None, error: str | None, settled: Any) -> Any:
        if self.paths == self.home:
            return super().after_attempt(status, failed_rank, error, settled)
        return self.follow_node_0(status, failed_rank, error)

    def follow_node_0(self, status: Status, failed_rank: int | None, error: str | None) -> Any:
        """Node M > 0, once its ranks ended: node 0 decides for the job (its record is the run's). This node begins
        the same next attempt once node 0 has begun it; it ends with its own outcome when the run has ended, or
        when no restart came within node 0's longest backoff and FOLLOW_SLACK."""
        mine = self.run.attempt
        deadline = time.monotonic() + self.restarts.backoff_max + FOLLOW_SLACK
        while time.monotonic() < deadline and self.restarts.restarts + (self.restarts.on_oom != "fail") > 0:
            try:
                home = read_record(self.home)
            except (RunRecordError, OSError):
                break
            home_run = Fields(home)
            if home_run.attempt > mine and home_run.restarts:
                entry = home_run.restarts[-1]
                log(f"node 0 began attempt {entry['attempt']}: this node begins it too")
                try:
                    self.begin_attempt(entry, None, choose=False)
                except OSError as exc:
                    return "failed", failed_rank, f"could not start attempt {entry['attempt']} ({exc}) after: {error}"
                return None
            if has_ended(home):
                break
            time.sleep(0.5)
        return status, failed_rank, error

    def own_log(self) -> Path:
        return self.paths.launcher_log if self.paths == self.home else self.home.machine_log(self.machine_rank)

    def prepare_attempt(self, kept: RunPaths, split: tuple[int, int] | None) -> None:
        """Node 0 splits the run's batch; node M > 0 takes the run's profile as node 0 left it, and links its rank
        logs into the run's logs/ again (node 0 began that folder afresh)."""
        if self.paths == self.home:
            super().prepare_attempt(kept, split)
            return
        write_text_atomic(kept.profile, self.paths.profile.read_text(encoding="utf-8"))
        write_text_atomic(self.paths.profile, self.home.profile.read_text(encoding="utf-8"))
        processes = self.run.num_processes // self.run.num_machines
        link_logs(self.home, self.paths, self.machine_rank, processes)

    def publish_ranks(self) -> None:
        """Node M > 0: its ranks' records into the run's ranks/ (the viewers' list of ranks and hosts). They are
        kept apart on the node, where its supervisor reads them: another node's ranks are no processes of its."""
        if self.paths == self.home:
            return
        try:
            found = list(self.paths.ranks.glob("rank-*.json"))
        except OSError:
            return
        for path in found:
            try:
                stamp = path.stat().st_mtime_ns
                if self.published.get(path.name) != stamp:
                    self.home.ranks.mkdir(exist_ok=True)
                    write_text_atomic(self.home.ranks / path.name, path.read_text(encoding="utf-8"))
                    self.published[path.name] = stamp
            except OSError as exc:
                log(f"could not copy {path.name} into the run's ranks/: {exc}")

    def finish(self, launcher_code: int) -> str | None:
        status = super().finish(launcher_code)
        self.publish_ranks()  # with their exit codes
        return status

    def outcome(self, launcher_code: int, records: dict[int, RankRecord], cause: Any) -> Outcome:
        status, rank, error = super().outcome(launcher_code, records, cause)
        if status == "finished" and self.paths != self.home and self.home.control_request(CONTROL_STOP).exists():
            # node M > 0: `tuitrain stop` asked the run (its ranks heard it from rank 0). Read at the end, not
            # polled: by now node 0 has cleared a requeued job's stale requests, or these ranks could not have met
            status = "stopped"
        job = self.run.slurm.get("job_id") or os.environ.get("SLURM_JOB_ID")
        then = (f"if Slurm requeues job {job}, it resumes from it" if self.requeue
                else f"`tuitrain resume {self.home.id}` submits a job that continues from it")
        if status == "stopped" and (self.home.root / WARNED_FILE).exists():
            error = f"stopped at Slurm's time-limit warning (job {job}) after saving a checkpoint; {then}"
        elif status == "stopped" and self.slurm_term:
            error = (f"stopped at Slurm's SIGTERM (job {job}: preempted, requeued or scancel --signal=TERM) after "
                     f"saving a checkpoint; {then}")
        return status, rank, error


def restart_fields(record: RunRecord, restarts: int) -> RunRecord:
    """A requeued job's run starts again in its own directory, from the latest complete checkpoint of its output
    folder (the one a graceful stop at Slurm's SIGTERM saved); its last end is cleared, kept in slurm.requeued."""
    from tuitrain.runs.start.from_profile import ResumeError, choose_checkpoint

    run = Fields(record)
    try:
        checkpoint: str | None = str(choose_checkpoint(record, "latest").path) if run.output_dir else None
    except ResumeError:
        checkpoint = run.resume_from  # nothing saved yet: where the run itself began
    slurm: SlurmRecord = {**run.slurm}
    slurm["requeued"] = [*(slurm.get("requeued") or []),
                         {"restart": restarts, "time": time.time(), "previous": run.status,
                          "error": run.error, "resume_from": checkpoint}]
    slurm.pop("state", None)
    return {"status": "planned", "ended": None, "error": None, "exit_codes": None, "failed_rank": None,
            "resume_from": checkpoint, "slurm": slurm}


def clear_control(paths: RunPaths) -> None:
    """The last attempt's requests (its stop above all) and marks do not reach the new one."""
    for name in (*CONTROL_REQUESTS, CONTROL_ENDING):
        paths.control_request(name).unlink(missing_ok=True)
    (paths.root / WARNED_FILE).unlink(missing_ok=True)


def main(run_dir: Path) -> int:
    home = RunPaths(run_dir)
    node = int(os.environ.get("SLURM_NODEID", "0"))
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "1")
    job_id = os.environ.get("SLURM_JOB_ID", "")
    record = read_record(home)
    restarts = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    restart: RunRecord = {}
    if restarts and job_id and job_id == str(Fields(record).slurm.get("job_id")):
        restart = restart_fields(record, restarts)  # every node finds the same checkpoint on the shared filesystem
        record = {**record, **restart}
        if node == 0:
            write_record(home, record)
    elif has_ended(record):
        print(f"tuitrain: run {home.id} has already ended ({Fields(record).status}); nothing to do", file=sys.stderr)
        return 1
    processes = Fields(record).num_processes // max(nodes, 1)
    paths = prepare_node(home, node, processes, record)
    if restart:
        clear_control(paths)
    redirect_output(paths.launcher_log if node == 0 else home.machine_log(node))
    log(f"Slurm job {job_id}: node {node} of {nodes} on {os.uname().nodename}")
    if restart:
        log(f"Slurm requeued job {job_id} (restart {restarts}): " + (
            f"resuming from {restart['resume_from']}" if restart.get("resume_from")
            else "no complete checkpoint yet: starting from the beginning"))
    try:
        main_host = node_address(hostnames(os.environ["SLURM_JOB_NODELIST"])[0]) if nodes > 1 else None
        plan = plan_node(paths, node, nodes, main_host, job_id)
    except (TuitrainError, OSError, KeyError, ValueError, IndexError) as exc:
        why = str(exc) if isinstance(exc, TuitrainError) else f"{type(exc).__name__}: {exc}"
        log(f"node {node} cannot start: {why}")
        record_end(paths, status="failed", ended=time.time(), error=f"Slurm job {job_id}, node {node}: {why}")
        return 1
    write_text_atomic(paths.accelerate_config, dump_yaml(plan.accelerate_config))
    slurm = Fields(read_record(paths)).slurm
    slurm["job_id"], slurm["host"], slurm["nodes"] = job_id or slurm.get("job_id"), os.uname().nodename, nodes
    fields = {**plan.record_fields(), "slurm": slurm}
    if plan.cwd:  # a [script] runs in its workdir, as it does when tuitrain runs it locally
        fields["cwd"] = plan.cwd
    if node == 0:
        fields["status"] = "starting"
    update_record(paths, **fields)
    reserve_space(paths)
    status = run_supervisor(SlurmSupervisor(paths, home, requeue=bool(Fields(record).slurm.get("requeue"))))
    return 0 if status in ("finished", "stopped") else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tuitrain.slurm.agent RUN_DIR")
    sys.exit(main(Path(sys.argv[1])))
