"""A run on the machines a profile lists, started from here over SSH: planned at home without their hardware,
checked by the doctor first, watched by a home supervisor that relays control to each machine's agent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuitrain.backends.base import CANNOT_QUEUE, Check, Preview, Say, Started
from tuitrain.backends.local import Supervised
from tuitrain.launch.machines import MachinePlan, MachinesPlan
from tuitrain.profile import Profile, settings_with_defaults
from tuitrain.rundir.kind import RunKind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import MachineEntry, RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.start.from_profile import machines_plan
from tuitrain.runs.start.new_run import Lineage, StartError, new_run_dir, start_run

if TYPE_CHECKING:
    from tuitrain.runs.queue.entries import QueueRequest
    from tuitrain.runs.view.stacks import RankStacks


def plan_profile_machines(profile: Profile, runs_root: Path, ssh_config: str | None = None,
                          local_cwd: str | None = None, resume_from: Path | None = None) -> MachinesPlan:
    """The profile's plan, one per machine, against `<new-run>` under `runs_root` (`runs.start.new_run.new_run_dir`)."""
    return machines_plan(profile, settings_with_defaults(profile), new_run_dir(runs_root), str(profile.path),
                         ssh_config, local_cwd=local_cwd, resume_from=resume_from)


def machine_command(machine: MachinePlan) -> str:
    return f"# machine {machine.machine_rank}: {machine.host}, in {machine.workdir}\n{machine.command_line()}"


def profile_paths(profile: Profile) -> list[tuple[str, str]]:
    """The profile's local paths a rank opens, as (key, absolute path): data files, a local model or tokenizer
    folder, a DeepSpeed JSON. A Hub id (no such path here, not written as a path) is not one."""
    base = Path(profile.path).expanduser().resolve().parent if profile.path else Path.cwd()
    data = profile.data
    out: list[tuple[str, str]] = []

    def add(key: str, raw: object, hub_like: bool = False) -> None:
        if not isinstance(raw, str) or not raw:
            return
        path = Path(raw).expanduser()
        looks_local = raw.startswith(("/", "./", "../", "~")) or (base / path).exists()
        if hub_like and not looks_local:
            return  # a Hub id such as "bert-base-uncased"
        out.append((key, str(path if path.is_absolute() else (base / path).resolve())))

    for leaf in ("train_file", "validation_file"):
        add(f"data.{leaf}", (data.get("data") or {}).get(leaf))
    for leaf in ("name_or_path", "tokenizer"):
        add(f"model.{leaf}", (data.get("model") or {}).get(leaf), hub_like=True)
    dist = data.get("distributed") or {}
    if dist.get("strategy") == "deepspeed":
        add("distributed.deepspeed.config_file", (dist.get("deepspeed") or {}).get("config_file"))
    return out


def machine_gpus(machine: MachinePlan) -> tuple[int, ...] | None:
    """The NVML indices a machine's plan uses: () for every GPU it has, None when it runs no CUDA ranks."""
    if machine.accelerator != "cuda":
        return None
    listed = machine.env.get("CUDA_VISIBLE_DEVICES", "")
    return tuple(int(g) for g in listed.split(",") if g.strip().isdecimal())


def doctor_report(profile: Profile, runs_root: Path, ssh_config: str | None, timeout: float) -> tuple[Any, MachinesPlan]:
    """(the doctor's report, the machines plan) of a multi-machine profile: every machine reached over ssh."""
    from tuitrain.remote.doctor import MachineSpec, doctor
    from tuitrain.remote.ssh import SshOptions

    plan = plan_profile_machines(profile, runs_root, ssh_config)
    paths = tuple(profile_paths(profile))
    specs = [MachineSpec(host=m.host, rank=m.machine_rank, python=m.python, workdir=m.workdir,
                         interface=m.network_interface, paths=paths,
                         address=plan.main_process_ip if m.machine_rank == 0 else None,
                         port=plan.main_process_port if m.machine_rank == 0 else None,
                         gpus=machine_gpus(m))
             for m in plan.machines]
    # connecting gets part of each machine's time, so an unreachable machine reads as such, not as a timeout
    options = SshOptions(config=ssh_config, connect_timeout=max(1, min(10, int(timeout * 0.6))))
    return doctor(specs, options, timeout=timeout), plan


class MachinesBackend(Supervised):
    kind: RunKind = "machines"

    def __init__(self, ssh_config: str | None = None, local_cwd: str | None = None) -> None:
        self.ssh_config = ssh_config  # None: ssh's own (~/.ssh/config); a resume reuses its parent's
        self.local_cwd = local_cwd  # a machine's default workdir in a plan (None: the current folder)

    def plan(self, profile: Profile, runs_root: Path, cwd: Path | None = None) -> Preview:
        plan = plan_profile_machines(profile, runs_root, self.ssh_config, self.local_cwd)
        accelerators = sorted({m.accelerator for m in plan.machines}) or ["cpu"]
        return Preview(kind=self.kind,
                       summary=f"{'/'.join(accelerators)} · {plan.num_processes} process(es) in all · "
                               f"{plan.num_machines} machine(s)",
                       commands=[machine_command(m) for m in plan.machines],
                       notes=[*plan.notes, *(n for m in plan.machines for n in m.notes)],
                       problems=list(plan.problems), plan=plan)

    def check(self, profile: Profile, runs_root: Path, timeout: float, say: Say) -> Check:
        say("checking the machines first (`tuitrain doctor`; --no-doctor skips this)")
        report, plan = doctor_report(profile, runs_root, self.ssh_config, timeout)
        failed = [check.line() for check in report.checks if check.ok is False] + [str(p) for p in plan.errors]
        return Check(lines=[*report.lines(), *(str(p) for p in plan.errors)], failed=failed)

    def start(self, profile: Profile, runs_root: Path, cwd: Path | None = None, *, lineage: Lineage | None = None,
              queue: QueueRequest | None = None) -> Started:
        """Every machine started over ssh (through `ssh_config`; a resume's, its parent's), kept by a supervisor here
        (`Supervisor` over `MachineLinks`)."""
        if queue is not None:
            raise StartError(f"{profile.path}: {CANNOT_QUEUE}")
        plan = plan_profile_machines(profile, runs_root, self.ssh_config,
                                     resume_from=lineage.checkpoint if lineage is not None else None)
        paths = start_run(profile, settings_with_defaults(profile), plan, runs_root, lineage=lineage, cwd=cwd,
                          workers="machines")
        return Started(paths)

    def world(self, profile: Profile) -> tuple[int, int]:
        plan = plan_profile_machines(profile, Path("."), self.ssh_config)
        return plan.num_processes, plan.num_machines

    def machines(self, record: RunRecord) -> list[MachineEntry]:
        return Fields(record).machines

    def take_stacks(self, paths: RunPaths, record: RunRecord) -> tuple[dict[int, RankStacks], list[str]]:
        """Its ranks on this machine (the home machine may be one of them), then every machine's through its node
        agent over ssh (the run's own ssh_config)."""
        from tuitrain.runs.view.stacks import machines_stacks, take_stacks

        here = take_stacks(paths, record)
        elsewhere, problems = machines_stacks(paths, self.machines(record), Fields(record).ssh_config)
        return dict(sorted({**here, **elsewhere}.items())), problems
