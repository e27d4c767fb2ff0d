"""Where things live inside a run directory (the contract between the engine and every viewer)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

RUNS_DIR_ENV = "TUITRAIN_RUNS_DIR"
SUPERVISOR_ENV = "TUITRAIN_SUPERVISOR"  # "pid:start time" of the run's supervisor, in every rank's environment

CONTROL_SAVE = "save-now"
CONTROL_EVALUATE = "evaluate-now"
CONTROL_STOP = "stop"
CONTROL_TERMINATE = "terminate"
# what ended a killed run, in its record: a terminate request does not say who dropped it (the CLI or the app's k)
KILL_REQUEST = "a kill request (`tuitrain stop --now`, or k in the app)"
CONTROL_REQUESTS = (CONTROL_SAVE, CONTROL_EVALUATE, CONTROL_STOP, CONTROL_TERMINATE)
# no request: written by the supervisor before it ends processes itself, so a rank under Slurm (which takes SIGTERM
# as Slurm's stop, tuitrain.rundir.preemption) knows this SIGTERM is tuitrain's and ends at once
CONTROL_ENDING = "ending"
CONTROL_HOLD = "hold"  # a queued run of a sweep being queued: it waits until the whole sweep is in the queue
CONTROL_DROP_SWEEP = "drop-sweep"  # its sweep was interrupted while being queued: it leaves the queue, never started
# no request to the ranks either: a node's supervisor that finds it in its control/ takes its own ranks' stacks into
# its stacks/ and removes it (a Slurm job's nodes, asked through the shared run directory: tuitrain.runs.view.stacks)
CONTROL_STACKS = "stacks"
# what a rank's heartbeat says it is doing (heartbeats/rank-K.json): the slow phases (start-up, evaluating, saving,
# after training) are judged apart from training steps by tuitrain.runs.view.hang
PHASE_STARTING = "starting"  # from the rank's start to its first training step: model, data, process group
PHASE_STEP = "step"
PHASE_BETWEEN = "between steps"  # after a step's end: control, logging, the next batch
PHASE_EVALUATING = "evaluating"
PHASE_SAVING = "saving"
PHASE_FINISHING = "after training"
# a rank dumps every thread's Python stack into its stacks file on this signal (faulthandler, tuitrain.runs.view.stacks)
STACKS_SIGNAL = "SIGUSR2"


def default_runs_root(cwd: Path | None = None) -> Path:
    env = os.environ.get(RUNS_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return (cwd or Path.cwd()) / "runs"


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def id(self) -> str:
        return self.root.name

    @property
    def record(self) -> Path:
        return self.root / "run.json"

    @property
    def profile(self) -> Path:
        return self.root / "profile.toml"

    @property
    def accelerate_config(self) -> Path:
        return self.root / "accelerate.yaml"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def rank_log(self, rank: int) -> Path:
        return self.logs / f"rank-{rank}.log"

    @property
    def launcher_log(self) -> Path:
        return self.logs / "launcher.log"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def control(self) -> Path:
        return self.root / "control"

    def control_request(self, name: str) -> Path:
        return self.control / name

    @property
    def ranks(self) -> Path:
        """One small JSON per rank: pid, host, node, exit code (written by the rank itself)."""
        return self.root / "ranks"

    def rank_record(self, rank: int) -> Path:
        return self.ranks / f"rank-{rank}.json"

    @property
    def heartbeats(self) -> Path:
        """One small JSON per rank: its step, what it is doing and since when (tuitrain.rundir.heartbeat)."""
        return self.root / "heartbeats"

    def heartbeat(self, rank: int) -> Path:
        return self.heartbeats / f"rank-{rank}.json"

    def machine_states(self, machine_rank: int) -> Path:
        """Machine M's ranks whose process state says why they do not move (stopped), for viewers on other machines."""
        return self.heartbeats / f"machine-{machine_rank}-states.json"

    @property
    def stacks(self) -> Path:
        """Each rank's latest Python stacks (all threads) and their digest (tuitrain.runs.view.stacks)."""
        return self.root / "stacks"

    def rank_stacks(self, rank: int) -> Path:
        return self.stacks / f"rank-{rank}.txt"

    @property
    def stacks_digest(self) -> Path:
        return self.stacks / "digest.json"

    @property
    def stacks_taken(self) -> Path:
        """A node's answer to CONTROL_STACKS: its ranks' stacks as JSON (tuitrain.runs.view.stacks.stacks_json)."""
        return self.stacks / "taken.json"

    @property
    def space_reserve(self) -> Path:
        """A small file the supervisor deletes when the disk is full, so the run's end can still
        be recorded."""
        return self.root / ".space-reserve"

    @property
    def default_output_dir(self) -> Path:
        return self.root / "output"

    @property
    def training_args(self) -> Path:
        """TrainingArguments as the Trainer saw them (`to_dict()`), written by global rank 0."""
        return self.root / "training_args.json"

    def machine_log(self, machine_rank: int) -> Path:
        """Machine M's launcher log at home (mirrored over SSH; a Slurm node M > 0's agent writes it directly)."""
        return self.logs / f"machine-{machine_rank}.log"

    @property
    def machines(self) -> Path:
        return self.root / "machines"

    def machine_gpus(self, machine_rank: int) -> Path:
        """Machine M's latest GPU and host sample (an SSH run's node agent sends it home every 2 s)."""
        return self.machines / f"machine-{machine_rank}-gpus.json"

    def machine_samples(self, machine_rank: int) -> Path:
        """Machine M's whole-run GPU, host and rank figures (tuitrain.runs.keeper.samples)."""
        return self.machines / f"machine-{machine_rank}-samples.json"

    def machine_manifest(self, machine_rank: int) -> Path:
        """What machine M ran on: versions, host, GPUs, data hashes, git state (tuitrain.runs.keeper.manifest)."""
        return self.machines / f"machine-{machine_rank}-manifest.json"

    @staticmethod
    def machine_of(file: Path) -> int:
        """The machine rank a `machines/machine-M-…` file's name gives (0 where it gives none)."""
        named = re.match("machine-([0-9]{1,7})-", file.name)
        return int(named[1]) if named else 0

    def machine_git_diff(self, machine_rank: int, index: int) -> Path:
        """The dirty diff of the manifest's `code[index]` repository on machine M (size-capped)."""
        return self.machines / f"machine-{machine_rank}-git-{index}.diff"

    @property
    def attempts(self) -> Path:
        """The earlier attempts of a restarted run (tuitrain.runs.keeper.attempts), each in a folder of its own."""
        return self.root / "attempts"

    def attempt(self, number: int) -> RunPaths:
        """Attempt N's own files once a restart began the next (its logs/, ranks/, heartbeats/, stacks/, and the
        profile.toml it ran with when a restart changed it): a run directory's names, in attempts/N/."""
        return RunPaths(self.attempts / str(number))

    def node(self, machine_rank: int) -> RunPaths:
        """A Slurm run's node M > 0 keeps its own record, control and ranks here (node 0 uses the run's own)."""
        return self if machine_rank == 0 else RunPaths(self.root / "nodes" / f"machine-{machine_rank}")

    def nodes(self) -> dict[int, RunPaths]:
        """Every node that keeps files in this run directory, by machine rank: node 0 (the run's own folders), then
        each Slurm node M > 0 whose folder exists (`node`)."""
        found = {0: self}
        folder = self.root / "nodes"
        for path in folder.glob("machine-*") if folder.is_dir() else ():
            rank = path.name.removeprefix("machine-")
            if rank.isdecimal() and int(rank) > 0 and self.node(int(rank)).root == path:
                found[int(rank)] = self.node(int(rank))
        return dict(sorted(found.items()))
