"""How many CPU threads each process of a run gets (OMP_NUM_THREADS): one rule for every plan.

`accelerate launch` picks it by launch type: physical cores / processes for `--cpu` (MULTI_CPU,
which starts one process here), but 1 for MULTI_GPU, the type tuitrain uses for CPU ranks, and for
a single GPU process. A plain `python train.py` gets every physical core. tuitrain sets it itself, so
that a run gets what the same training gets as a plain script (one process: every core; several: the
cores shared out, never oversubscribed), and `plan` can say what is set and why.
"""

from __future__ import annotations

from tuitrain.profile.settings import Settings

THREADS_KEY = "hardware.cpu_threads_per_process"


def cpu_threads(profile: Settings, cores: int, processes_here: int) -> tuple[dict[str, str], str]:
    """(environment, plan note) for the processes of one machine. `cores`: that machine's physical cores
    (0: not known where the plan is made: launch.planner.arrival_env applies this rule on that machine)."""
    asked = profile["hardware"].get("cpu_threads_per_process")
    if asked:
        return {"OMP_NUM_THREADS": str(asked)}, f"OMP_NUM_THREADS={asked}: {THREADS_KEY} = {asked}"
    if cores <= 0:
        return {}, (f"OMP_NUM_THREADS: set by the machine's tuitrain agent to its physical cores / its {processes_here} "
                    f"process(es); set {THREADS_KEY} to fix it")
    threads = max(1, cores // max(1, processes_here))
    share = ("every physical core, as a plain `python` run of the script gets" if processes_here == 1 else
             f"{cores} physical cores shared by {processes_here} processes, none oversubscribed")
    return {"OMP_NUM_THREADS": str(threads)}, f"OMP_NUM_THREADS={threads}: {share}; set {THREADS_KEY} to change it"
