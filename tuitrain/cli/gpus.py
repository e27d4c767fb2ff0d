"""`tuitrain gpus [--json] [--watch] [--profile P]`: the GPUs in PCI order, their processes (and the run and
rank owning each), the CUDA index each gets under each device order, and the host's CPU and RAM.

No driver is a normal state: "no NVIDIA GPU (NVML: driver not found)" and exit 0.
``TUITRAIN_NVML_TABLE=path`` answers NVML from a recorded device table instead (tests, demos).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

from tuitrain.cli.errors import CliError
from tuitrain.cli.output import print_json, table
from tuitrain.hardware.devices import GpuInfo
from tuitrain.hardware.host import HostInfo
from tuitrain.hardware.mapping import FASTEST_FIRST, PCI_BUS_ID, cuda_ordinals, pci_order
from tuitrain.hardware.mps import mps_available
from tuitrain.hardware.na import NA
from tuitrain.hardware.processes import sm_share, use_notes
from tuitrain.hardware.recorded import library_from_env
from tuitrain.hardware.report import to_json
from tuitrain.hardware.sampler import Sampler, Snapshot
from tuitrain.humanize import gib, gpu_memory, percent
from tuitrain.runs.view.owners import OwnerIndex

WATCH_INTERVAL = 1.0


def host_line(host: HostInfo, mps: bool) -> str:
    cpu = f"{host.cpu_count} CPU core(s)"
    if host.cpu_percent is not NA:
        cpu += f", {host.cpu_percent:.0f}% busy"
    if host.load_average is not NA:
        cpu += ", load " + " ".join(f"{x:.2f}" for x in host.load_average)
    line = f"host: {cpu}; RAM {gib(host.memory_used)} / {gib(host.memory_total)} GiB used"
    return line + ("; Apple MPS available" if mps else "")


def gpu_rows(gpus: tuple[GpuInfo, ...]) -> list[list[str]]:
    ordinals = cuda_ordinals(gpus)
    rows = []
    for gpu in pci_order(gpus):
        cuda = ordinals[gpu.index]
        power = f"{gpu.power_draw:.0f} / {gpu.power_limit:.0f} W" if gpu.power_draw is not NA or gpu.power_limit is not NA else "N/A"
        mig = " [MIG]" if gpu.mig_enabled else ""
        rows.append([
            str(gpu.index), f"cuda:{cuda[PCI_BUS_ID]}", f"cuda:{cuda[FASTEST_FIRST]}", f"{gpu.name}{mig}" + (" LOST" if gpu.lost else ""),
            str(gpu.pci_bus_id), str(gpu.compute_capability_text),
            gpu_memory(gpu.memory_used, gpu.memory_total, gpu.lost, sep=" / "), percent(gpu.utilization),
            f"{gpu.temperature}°C" if gpu.temperature is not NA else "N/A", power, str(gpu.uuid),
        ])
    return rows


GPU_HEADERS = ["GPU", "PCI_BUS_ID", "FASTEST_FIRST*", "name", "bus id", "cc", "memory", "util", "temp", "power", "uuid"]


def process_rows(gpus: tuple[GpuInfo, ...]) -> list[list[str]]:
    rows = []
    for gpu in pci_order(gpus):
        for mig in gpu.mig_devices:  # a MIG-enabled GPU's instances first, as the app's GPUs screen lists them
            rows.append([str(gpu.index), "-", "-", f"└ MIG {mig.profile}", gpu_memory(mig.memory_used, mig.memory_total),
                         "-", "-", "instance", str(mig.uuid)])
        for proc in sorted(gpu.processes, key=lambda p: p.pid):
            rows.append([str(gpu.index), str(proc.pid), str(proc.user), str(proc.command),
                         gib(proc.used_memory, unit=True), gib(proc.peak_memory, unit=True), sm_share(proc), proc.kind,
                         proc.owner.describe() if proc.owner else "-"])
    return rows


PROCESS_HEADERS = ["GPU", "pid", "user", "command", "GPU memory", "peak", "SM", "kind", "run / rank"]


def render(snapshot: Snapshot, mps: bool) -> str:
    discovery = snapshot.discovery
    lines = []
    if not discovery.gpus:
        lines.append(discovery.status_line)
    else:
        lines.append(f"{discovery.status_line}; listed in PCI bus order (= nvidia-smi); "
                     "cuda:N is the index each GPU gets under each CUDA_DEVICE_ORDER")
        lines.append(table(gpu_rows(discovery.gpus), GPU_HEADERS))
        procs = process_rows(discovery.gpus)
        lines.append("")
        lines.append(table(procs, PROCESS_HEADERS) if procs else "no process on any GPU")
        lines += use_notes(discovery.gpus)
    if snapshot.ranks:
        lines.append("")
        for usage in snapshot.ranks:
            lines.append(f"{usage.describe()}; CPU {percent(usage.cpu_percent)}, RSS {gib(usage.rss, unit=True)}")
    lines.append(host_line(snapshot.host, mps))
    if discovery.gpus:
        lines.append("* FASTEST_FIRST is CUDA's default; its order is our prediction (CUDA does not document the "
                     "heuristic), so tuitrain lists GPUs by UUID under it")
    return "\n".join(lines)


CPU_WINDOW = 0.1  # seconds between the two looks a CPU percentage is made of (the host's, each rank's)


def snapshot_once(nvml: Any, runs_root: Any, window: float = CPU_WINDOW) -> Snapshot:
    """One look at the machine, taken as `--watch` and the app take theirs: by the `Sampler`, so the text and
    the JSON carry the same figures (each GPU process's owner, the live ranks with their CPU% and RSS, the
    host's CPU%). A CPU percentage is the difference of two looks: while a run's ranks live, the sampler looks
    twice, `window` apart; with none, once (`tuitrain gpus` stays quick, the host's CPU% unknown: N/A, null)."""
    owners = OwnerIndex(runs_root).get if runs_root is not None else None
    with Sampler(nvml, owners=owners) as sampler:
        started = time.monotonic()
        first = sampler.sample()
        if not first.ranks:
            return first
        time.sleep(max(0.0, window - (time.monotonic() - started)))
        return sampler.sample()


def _watch(args: argparse.Namespace, nvml: Any, mps: bool) -> int:
    stop = threading.Event()

    def show(snapshot: Snapshot) -> None:
        if args.json:
            sys.stdout.write(json.dumps(to_json(snapshot, mps), default=str) + "\n")
        else:
            sys.stdout.write("\x1b[H\x1b[2J" if sys.stdout.isatty() else "\n")
            sys.stdout.write(time.strftime("%H:%M:%S ") + render(snapshot, mps) + "\n")
        sys.stdout.flush()

    with Sampler(nvml, owners=OwnerIndex(args.runs_root).get) as sampler:
        try:
            sampler.run(WATCH_INTERVAL, stop, show)
        except KeyboardInterrupt:
            pass
    return 0


REMOTE_TIMEOUT = 30.0


def machines_gpus(args: argparse.Namespace) -> int:
    """`tuitrain gpus --profile P`: each machine of a multi-machine profile samples its own GPUs with its own
    tuitrain (over ssh, in parallel) and sends back what `tuitrain gpus` shows there. A machine that cannot be
    reached gets its one-line reason."""
    from concurrent.futures import ThreadPoolExecutor

    from tuitrain.backends import for_profile
    from tuitrain.backends.machines import plan_profile_machines
    from tuitrain.profile import load_profile, resolve_profile_path
    from tuitrain.remote.ssh import SshOptions, run

    if getattr(args, "watch", False):
        raise CliError("--watch shows this machine only; for every machine of a profile, run `tuitrain gpus "
                       "--profile P` again (or `watch -n 2 tuitrain gpus --profile P`)")
    profile = load_profile(resolve_profile_path(args.profile))
    if for_profile(profile.data).kind != "machines":
        raise CliError(f"{profile.path}: no [[distributed.machines]]; `tuitrain gpus` without --profile shows this "
                       "machine's GPUs")
    plan = plan_profile_machines(profile, args.runs_root)
    config = os.path.abspath(os.path.expanduser(args.ssh_config)) if args.ssh_config else None
    options = SshOptions(config=config)
    asked = ["--json"] if args.json else []

    def sample(machine: Any) -> Any:
        return run(machine.host, [machine.python, "-m", "tuitrain", "gpus", *asked], REMOTE_TIMEOUT, options)

    with ThreadPoolExecutor(max_workers=min(16, len(plan.machines)) or 1) as pool:
        results = list(pool.map(sample, plan.machines))
    from tuitrain.cli.workstations import print_answers

    answers = [(f"machine {machine.machine_rank}: {machine.host}", machine.host,
                None if result.ok else str(result.problem) if result.problem else f"{machine.host}: exit {result.returncode}",
                result.stdout) for machine, result in zip(plan.machines, results, strict=True)]
    return print_answers(answers, args.json)


def all_hosts_gpus(args: argparse.Namespace, nvml: Any, mps: bool) -> int:
    """`tuitrain gpus --all-hosts`: this machine's GPUs, then each workstation's of the settings, each sampled
    there by its own tuitrain (all at once); a box that does not answer is one line naming why."""
    from tuitrain.cli.workstations import cmd_all_hosts

    snapshot = snapshot_once(nvml, getattr(args, "runs_root", None))
    return cmd_all_hosts(args, ["gpus"], lambda: json.dumps(to_json(snapshot, mps), default=str) if args.json
                         else render(snapshot, mps))


def cmd_gpus(args: argparse.Namespace) -> int:
    if getattr(args, "profile", None):
        return machines_gpus(args)
    nvml = library_from_env(os.environ)
    mps = mps_available()
    if getattr(args, "all_hosts", False):
        if getattr(args, "watch", False):
            raise CliError("--watch shows this machine only; for every workstation run `tuitrain gpus --all-hosts` "
                           "again, or watch them in the app's GPUs screen")
        return all_hosts_gpus(args, nvml, mps)
    if getattr(args, "watch", False):
        return _watch(args, nvml, mps)
    snapshot = snapshot_once(nvml, getattr(args, "runs_root", None))
    if args.json:
        print_json(to_json(snapshot, mps))
    else:
        print(render(snapshot, mps))
    return 0
