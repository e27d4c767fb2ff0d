"""How a run is carried: on this machine, on the machines a profile lists (SSH), or as a Slurm job; one interface
(`Backend`), chosen once (`for_profile`, `for_run`). See docs/architecture.md §4."""

from tuitrain.backends.base import Backend, Check, Preview, Resumed, Started
from tuitrain.backends.choose import for_profile, for_run, settle_runs

__all__ = ["Backend", "Check", "Preview", "Resumed", "Started", "for_profile", "for_run", "settle_runs"]
