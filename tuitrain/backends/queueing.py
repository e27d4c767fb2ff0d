"""Which backend can queue a run: the one rule `tuitrain run --queue` and the launch dialog's Queue ask."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from tuitrain.backends.base import Backend
from tuitrain.backends.local import LocalBackend
from tuitrain.runs.start.new_run import StartError


def profile_queues(data: Mapping[str, Any]) -> bool:
    """Whether a profile asks to be queued whenever it runs (`[run] queue = true`)."""
    run = data.get("run")
    return isinstance(run, Mapping) and run.get("queue") is True


def queueing_backend(backend: Backend, profile_path: Path | str | None) -> LocalBackend:
    """The backend that queues this profile's run on this machine, or StartError saying why it cannot: a run
    over several machines starts at once, and a Slurm job queues in Slurm."""
    if isinstance(backend, LocalBackend):
        return backend
    raise StartError(f"{profile_path}: a queued run waits on this machine; a profile that lists "
                     "[[distributed.machines]] starts at once (drop them to queue it here), and a Slurm job "
                     "queues in Slurm (tuitrain submit)")
