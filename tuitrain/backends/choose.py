"""The one place that picks a backend: from a profile (and the command's choice of Slurm), or from a run record.

A fourth backend is one new module beside local, machines and slurm, and one branch here (and in
tuitrain.rundir.kind.run_kind for the record it writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from tuitrain.backends.base import Backend, Settled
from tuitrain.launch.machines import has_machines
from tuitrain.rundir.kind import RunKind, run_kind
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields

if TYPE_CHECKING:
    from tuitrain.hardware import Hardware
    from tuitrain.slurm.script import JobOptions


def for_profile(data: Mapping[str, Any] | None, *, slurm: JobOptions | None = None, ssh_config: str | None = None,
                hardware: Hardware | None = None, python: str | None = None, local_cwd: str | None = None) -> Backend:
    """The backend that launches a profile (its raw data or with defaults): Slurm when the command submits it
    (`tuitrain submit`, the launch dialog's ctrl+b, with its job options and the nodes' `python`; then `data` may
    be None: the Slurm backend loads the profile its own way), the machines it lists over SSH (`local_cwd`: their
    default workdir, else the current folder), else this machine."""
    if slurm is not None:
        from tuitrain.backends.slurm import SlurmBackend

        return SlurmBackend(slurm, python)
    if data is None:
        raise ValueError("for_profile: the profile's data is needed unless it is submitted to Slurm")
    if has_machines(data):
        from tuitrain.backends.machines import MachinesBackend

        return MachinesBackend(ssh_config, local_cwd)
    from tuitrain.backends.local import LocalBackend

    return LocalBackend(hardware)


def for_run(record: RunRecord, *, ssh_config: str | None = None, hardware: Hardware | None = None) -> Backend:
    """The backend of a run that exists (to resume, stop or view it): the one that started it, with the options it
    started with (a resume is submitted with its parent's job options, started through its parent's ssh_config)."""
    kind = run_kind(record)
    if kind == "slurm":
        from tuitrain.backends.slurm import SlurmBackend

        return SlurmBackend(parent=record)
    if kind == "machines":
        from tuitrain.backends.machines import MachinesBackend

        return MachinesBackend(ssh_config or Fields(record).ssh_config)
    from tuitrain.backends.local import LocalBackend

    return LocalBackend(hardware)


def settle_runs(runs: Sequence[tuple[RunPaths, RunRecord]]) -> list[Settled]:
    """Every run as its backend says it stands (`Backend.settle`), in the order given; each backend asked once for all
    of its runs (one squeue for every Slurm run; no query for the others)."""
    settled: dict[int, Settled] = {}
    by_kind: dict[RunKind, list[int]] = {}
    for index, (_, record) in enumerate(runs):
        by_kind.setdefault(run_kind(record), []).append(index)
    for indexes in by_kind.values():
        answers = for_run(runs[indexes[0]][1]).settle([runs[i] for i in indexes])
        settled.update(zip(indexes, answers, strict=True))
    return [settled[i] for i in range(len(runs))]
