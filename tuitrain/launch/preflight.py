"""Machine checks before a launch: what is installed, which port is taken, what the installed
accelerate can do. Kept apart from planning so that planning stays pure: `probe_machine` looks
at this machine once (no imports of the packages it asks about: importlib.util.find_spec), and
`machine_problems` turns the facts into Problems that each name the profile key to change.

`tuitrain profile export-accelerate` skips all of this (a config for a cluster is written on a
laptop that has none of it).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from tuitrain.installed import distribution_version
from tuitrain.launch.model_source import ModelConfig, read_model_config
from tuitrain.profile import Problem
from tuitrain.profile.rules.machines import machines_port_problem
from tuitrain.profile.rules.strategies import cpu_strategy_problem, layerwise_problem, low_rank_optimizer, mps_strategy_problem
from tuitrain.profile.settings import Settings
from tuitrain.torch_build import TorchBuild, cpu_torch_refusal, cuda_install_command, read_torch_build

# strategy -> (module, pip name, what the install needs)
STRATEGY_PACKAGES = {"deepspeed": ("deepspeed", "deepspeed", "it compiles CUDA ops at first use: a CUDA toolkit")}


@dataclass(frozen=True)
class MachineFacts:
    """What the checks need to know about this machine, gathered by `probe_machine`."""

    modules: Mapping[str, bool] = field(default_factory=dict)  # importable top-level module -> found
    busy_ports: frozenset[int] = frozenset()
    accelerate_version: str | None = None
    python: str = sys.executable
    model: ModelConfig | None = None  # the profile's model config, for the memory estimate (None: not read)
    torch: TorchBuild | None = None  # the ranks' torch, where a CUDA run asks (None: not looked at, or none installed)


def module_found(name: str) -> bool:
    """Whether `name` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def port_in_use(port: int) -> bool:
    """Something listens on the port here, or it cannot be bound as torch's store binds it: on every
    address, with SO_REUSEADDR, so the previous run's connections still in TIME_WAIT (a requeued Slurm job
    derives the same port) do not count."""
    import errno
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.2)
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return True
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as exc:
            return exc.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


def _world(settings: Settings) -> int:
    dist = settings["distributed"]
    return int(dist["num_processes"]) * int(dist["num_machines"])


def probe_machine(settings: Settings, base_dir: Path | None = None) -> MachineFacts:
    """Look at this machine for what `settings` (a profile with defaults) will need; its relative paths start
    from `base_dir` (None: here)."""
    dist = settings["distributed"]
    wanted = set()
    if dist["strategy"] in STRATEGY_PACKAGES:
        wanted.add(STRATEGY_PACKAGES[dist["strategy"]][0])
    found = low_rank_optimizer(settings["training"].get("optim"))
    if found:
        wanted.add(found[0])
    busy: set[int] = set()
    port = dist["main_process_port"]
    hosts_rendezvous = int(dist["num_machines"]) == 1 or int(dist["machine_rank"]) == 0
    if port is not None and _world(settings) > 1 and hosts_rendezvous and port_in_use(int(port)):
        busy.add(int(port))
    version: str | None = None
    if dist["strategy"] == "fsdp":  # named in the FSDP-on-CPU refusal
        version = distribution_version("accelerate")
    torch = read_torch_build() if settings["hardware"]["accelerator"] in ("cuda", "auto") else None
    return MachineFacts(modules={m: module_found(m) for m in sorted(wanted)}, busy_ports=frozenset(busy),
                        accelerate_version=version, model=read_model_config(settings, base_dir), torch=torch)


def torch_problem(file: str, settings: Settings, accelerator: str, facts: MachineFacts, real_gpus: bool,
                  driver: str | None) -> Problem | None:
    """A CUDA run on this machine's own GPUs (`real_gpus`: read from its driver) with a torch that has no CUDA:
    refused (its ranks would train on the CPU while the run said `cuda`). Where `auto` chose the CPU for that reason
    (launch.devices.choose_accelerator), a warning says so and how to get the GPUs. `driver`: this machine's NVIDIA
    driver's version, for the build to install. GPUs of a recorded table are no machine's here: no torch reaches
    them, and the ranks train on the CPU, as the plan's environment says (torch_build.RECORDED_GPUS_ENV)."""
    torch = facts.torch
    if torch is None or torch.uses_gpu or not real_gpus:
        return None
    message, fix = cpu_torch_refusal(torch, facts.python, driver)
    hw = settings["hardware"]
    if accelerator == "cuda":
        key = "hardware.accelerator" if hw["accelerator"] == "cuda" else "hardware.gpus"
        return Problem(file, key, message if key == "hardware.accelerator" else
                       f"chooses GPUs (so accelerator \"auto\" is CUDA), but {message.removeprefix('asks for CUDA, but ')}",
                       fix)
    if hw["accelerator"] == "auto" and accelerator == "cpu" and hw["gpus"] is None:
        return Problem(file, "hardware.accelerator", f"\"auto\" trains on the CPU: this machine has NVIDIA GPUs, but "
                       f"{facts.python} has {torch.words()}", "install its CUDA build to train on the GPUs: "
                       f"{cuda_install_command(facts.python, torch, driver)}", "warning")
    return None


def machine_problems(settings: Settings, accelerator: str, facts: MachineFacts, file: str,
                     deepspeed_json: Path | None = None, cpu_count: int | None = None) -> list[Problem]:
    """Refusals and warnings that depend on this machine, each naming the key to change."""
    dist = settings["distributed"]
    strategy = dist["strategy"]
    training = settings["training"]
    out: list[Problem] = []
    pip = f"{facts.python} -m pip install"

    if strategy in STRATEGY_PACKAGES:
        module, package, needs = STRATEGY_PACKAGES[strategy]
        if not facts.modules.get(module, False):
            out.append(Problem(file, "distributed.strategy", f'"{strategy}" needs the {package} package, '
                               "which is not installed here",
                               f"install it: {pip} {package} ({needs}), or choose another distributed.strategy"))
    # the strategy on the device the plan chose: the words validation uses for the one a profile names
    on_device = (cpu_strategy_problem(file, strategy, facts.accelerate_version) if accelerator == "cpu"
                 else mps_strategy_problem(file, strategy) if accelerator == "mps" else None)
    if on_device is not None:
        out.append(on_device)
    if strategy == "deepspeed" and deepspeed_json is not None and not deepspeed_json.is_file():
        what = "is a folder" if deepspeed_json.is_dir() else "no such file"
        out.append(Problem(file, "distributed.deepspeed.config_file", f"{what}: {deepspeed_json}",
                           "relative paths start from the profile's folder"))

    found = low_rank_optimizer(training.get("optim"))
    if found and not facts.modules.get(found[0], False):
        out.append(Problem(file, "training.optim", f"{training['optim']!r} needs the {found[1]} package, "
                           "which is not installed here",
                           f"install it: {pip} {found[1]}, or choose another training.optim"))
    # Validation refuses this for the num_processes a profile writes, and such a profile is never
    # planned (load_profile raises); here it is caught for an unset one the planner filled in.
    layerwise = layerwise_problem(file, training.get("optim"), int(dist["num_processes"]), int(dist["num_machines"]))
    if layerwise is not None:
        out.append(layerwise)

    port = dist["main_process_port"]
    if port is not None and int(port) in facts.busy_ports:
        out.append(Problem(file, "distributed.main_process_port",
                           f"port {port} is already in use on this machine (the ranks' rendezvous would fail or "
                           "land elsewhere)", "pick another port, or remove main_process_port (a free one is "
                           "picked at launch)"))
    no_port = machines_port_problem(file, int(dist["num_machines"]), port, "error")
    if no_port is not None:
        out.append(no_port)
    if accelerator == "cpu" and cpu_count and int(dist["num_processes"]) > cpu_count:
        out.append(Problem(file, "distributed.num_processes",
                           f"{dist['num_processes']} CPU processes on {cpu_count} core(s): they will slow each "
                           "other down", f"set distributed.num_processes = {cpu_count} or fewer", "warning"))
    return out
