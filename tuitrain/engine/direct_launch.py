"""`python -m tuitrain.engine.direct_launch ACCELERATE-LAUNCH-ARGUMENTS`: a run of one process on one machine, started
as its own rank.

`accelerate launch` with one process is a second Python that imports torch and accelerate, builds the rank's
environment and starts the rank as its child (its simple launcher): seconds of a short run's wall time, for nothing
the rank needs. Here the rank's own interpreter does what that launcher does, with accelerate's own functions:
`launch_command_parser` and `_validate_launch_command` read the same arguments and the same accelerate.yaml,
`prepare_simple_launcher_cmd_env` builds the environment, and the program it names (`-m tuitrain.engine RUN_DIR`, or
a [script]) then runs in this process, as `python` would run it. The pid that the supervisor started is the rank's.

Where accelerate would not use its simple launcher (the config asks for several processes, FSDP, DeepSpeed, ...),
or its environment changes a variable that this process has already read (CUDA's visible devices, an Intel OpenMP
setting once that runtime is loaded), this process becomes `accelerate launch` itself, same pid, same arguments
(`os.execv`): the launch is then what it always was. So is it where these accelerate functions are missing.

Run by the supervisor (the planner picks it: tuitrain.launch.planner.launch_module); the TUI and CLI never import it.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any, Mapping, NoReturn

ACCELERATE_LAUNCH = "accelerate.commands.launch"
# variables of accelerate's environment this process may take after torch is loaded: read later (accelerate's own,
# at Accelerator()), applied here (OMP_NUM_THREADS: torch.set_num_threads), or read by no runtime loaded here (KMP_*:
# Intel OpenMP's, when torch is linked against GNU OpenMP)
READ_LATER_PREFIXES = ("ACCELERATE_", "MASTER_")
INTEL_OPENMP = ("KMP_AFFINITY", "KMP_BLOCKTIME")


def simple_launch(args: Any, defaults: Any) -> bool:
    """Whether `accelerate launch` would start these arguments with its simple launcher (one process, no torchrun, no
    DeepSpeed launcher): the branches of accelerate.commands.launch.launch_command, in its order."""
    if args.use_deepspeed and not args.cpu:
        return False
    if (args.use_fsdp or args.use_megatron_lm or args.multi_gpu or args.tpu) and not args.cpu:
        return False
    if defaults is not None and str(getattr(defaults, "compute_environment", "")).endswith("AMAZON_SAGEMAKER"):
        return False
    if args.mpirun_hostfile is not None or args.no_python:
        return False
    return int(args.num_processes or 1) == 1 and int(args.num_machines or 1) == 1


def intel_openmp_loaded() -> bool:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any("libiomp" in line for line in maps)
    except OSError:
        return False


def changed(env: Mapping[str, str], before: Mapping[str, str]) -> dict[str, str]:
    """What accelerate's environment sets that this process's does not have (it never removes a variable)."""
    return {key: value for key, value in env.items() if before.get(key) != value}


def late_problem(changes: Mapping[str, str]) -> str | None:
    """A variable among `changes` that this process read when it started or loaded torch: then only a fresh
    interpreter gets accelerate's environment right."""
    for key in changes:
        if key.startswith(READ_LATER_PREFIXES) or key == "OMP_NUM_THREADS":
            continue
        if key in INTEL_OPENMP and not intel_openmp_loaded():
            continue
        return key
    return None


def become_accelerate_launch(argv: list[str], why: str) -> NoReturn:
    print(f"[tuitrain] one process, started through accelerate launch: {why}", file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, "-m", ACCELERATE_LAUNCH, *argv])


def apply(changes: Mapping[str, str]) -> None:
    os.environ.update(changes)
    threads = changes.get("OMP_NUM_THREADS")
    if threads:  # OpenMP read the variable when torch loaded: tell torch the count accelerate chose
        import torch

        torch.set_num_threads(max(1, int(threads)))


def run_program(command: list[str]) -> None:
    """Run `command` (accelerate's: [python, "-m", module, args...] or [python, script, args...]) in this process,
    with the sys.argv and sys.path[0] that `python` would give it."""
    if command[1] == "-m":
        sys.argv = [command[2], *command[3:]]
        runpy.run_module(command[2], run_name="__main__", alter_sys=True)
        return
    script = command[1]
    sys.argv = [script, *command[2:]]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    runpy.run_path(script, run_name="__main__")


def main(argv: list[str]) -> None:
    try:
        from accelerate.commands.launch import _validate_launch_command, launch_command_parser
        from accelerate.utils.launch import prepare_simple_launcher_cmd_env
    except ImportError as exc:
        become_accelerate_launch(argv, f"this accelerate has no {exc.name or 'launch functions'} to start it directly")
    args = launch_command_parser().parse_args(argv)
    args, defaults, _ = _validate_launch_command(args)
    if not simple_launch(args, defaults):
        become_accelerate_launch(argv, "accelerate.yaml or the arguments ask for more than one Python process")
    command, env = prepare_simple_launcher_cmd_env(args)
    changes = changed(env, os.environ)
    late = late_problem(changes)
    if late is not None:
        become_accelerate_launch(argv, f"accelerate sets {late}, which this process has already read")
    apply(changes)
    run_program(command)


if __name__ == "__main__":
    main(sys.argv[1:])
