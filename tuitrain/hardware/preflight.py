"""Hardware checks before every launch: pure, `check(profile_settings, hardware) -> [Problem]`.

Each problem names the profile key to change and how. The checks: the accelerator asked for is
there; the selected GPUs exist, answer (not lost) and are not MIG cards selected whole; none is
already taken: a compute process of anyone on it, near-full of memory or busy computing (one rule,
`gpu_choice.busy_reasons`, which the editor's GPU picker shows too: a warning naming who holds it);
``num_processes`` fits the selected GPUs (and MPS runs one process); bf16 needs compute
capability 8.0; fp16 does not run on the CPU and bf16 there is slow without native support.
"""

from __future__ import annotations

from typing import Any, Sequence

from tuitrain.hardware.devices import GpuInfo, MigDevice
from tuitrain.hardware.gpu_choice import BUSY_UTILIZATION, NEAR_FULL, busy_reasons, chosen_now, unfit_reasons
from tuitrain.hardware.mapping import resolve
from tuitrain.hardware.na import NA
from tuitrain.hardware.probe import Hardware
from tuitrain.profile import Problem
from tuitrain.profile.settings import HardwareSettings, Settings

__all__ = ["BUSY_UTILIZATION", "NEAR_FULL", "busy_reasons", "check", "resolve_accelerator", "selected_devices"]

BF16_MIN_CC = (8, 0)


def resolve_accelerator(asked: str, hardware: Hardware, num_processes: int,
                        gpus: Sequence[Any] | int | None = None) -> tuple[str, str]:
    """`auto` → cuda, then mps (one process), then cpu; (choice, why). Others pass through.
    `gpus`: the profile's hardware.gpus (an empty list hides every GPU, so auto skips CUDA)."""
    if asked != "auto":
        return asked, f"asked for {asked}"
    if hardware.has_cuda and gpus == []:
        return "cpu", "hardware.gpus = [] hides every GPU"
    if hardware.has_cuda:
        return "cuda", f"{len(hardware.gpus)} NVIDIA GPU(s) found"
    if hardware.mps and num_processes == 1:
        return "mps", "Apple MPS found and one process asked"
    why = hardware.status_line + ("; MPS runs one process only" if hardware.mps else "")
    return "cpu", why


def _gib(num_bytes: Any) -> str:
    return f"{num_bytes / 2**30:.1f} GiB" if num_bytes is not NA else "N/A"


def _gpu_name(gpu: GpuInfo) -> str:
    return f"GPU {gpu.index} ({gpu.name})"


def _precision_asks(settings: Settings) -> list[tuple[str, str]]:
    """[(precision, key that asked)] from hardware.mixed_precision and training.bf16/fp16."""
    asks = []
    mixed = settings["hardware"]["mixed_precision"] or "no"
    if mixed in ("fp16", "bf16"):
        asks.append((mixed, "hardware.mixed_precision"))
    training = settings["training"]
    for name in ("bf16", "fp16"):
        if training.get(name) is True and all(p != name for p, _ in asks):
            asks.append((name, f"training.{name}"))
    return asks


def _precision_fix(key: str, value: str) -> str:
    if key.startswith("training."):
        return f"set {key} = false" + (f' (or hardware.mixed_precision = "{value}")' if value != "no" else "")
    return f'set {key} = "{value}"'


def _taken(file: str, gpu: GpuInfo, room: list[str], reasons: list[str], near_full: float, busy: int,
           sharing: bool) -> Problem | None:
    """A warning, not a refusal: a plain `run` is "now", as `python train.py` is under the driver's default compute
    mode (which lets processes share a GPU); the way to wait for a GPU is the queue (`--queue`), as Slurm and
    gflow users wait for theirs. `sharing`: the profile sets hardware.min_free_memory, and `reasons` are of
    memory (`gpu_choice.unfit_reasons`)."""
    if not reasons or gpu.lost:
        return None
    if sharing:
        return Problem(file, "hardware.gpus", f"{_gpu_name(gpu)}: {reasons[0]}",
                       "queue the run to start once that much is free (`tuitrain run PROFILE --queue`), lower "
                       "hardware.min_free_memory, or select GPUs with room in hardware.gpus"
                       + (f" ({', '.join(room)})" if room else ""), "warning")
    state = [f"{r} ({_gib(gpu.memory_used)} of {_gib(gpu.memory_total)})" if r.endswith("full") else r
             for r in reasons if not r.startswith("held by")]
    held = [r for r in reasons if r.startswith("held by")]
    if state:
        message = f"{_gpu_name(gpu)} is {' and '.join(state)}" + (f", {held[0]}" if held else
                                                                   ", by processes NVML does not list (another "
                                                                   "container, or no permission)")
    else:
        message = f"{_gpu_name(gpu)} is {held[0]}"
    wait = "or queue the run to start once it is free (`tuitrain run PROFILE --queue`)"
    fix = (f"select GPUs with room in hardware.gpus ({', '.join(room)}: no process computing, below "
           f"{near_full:.0%} full and {busy}% busy), {wait}" if room else
           f"{wait[3:]}; to share it on purpose, set hardware.min_free_memory")
    return Problem(file, "hardware.gpus", message, fix, "warning")


def _selection(file: str, selection: Sequence[Any] | None, hardware: Hardware
               ) -> tuple[list[GpuInfo], list[Any], list[Problem]]:
    """(selected GPUs, selected MIG instances, problems): unknown GPUs, MIG cards selected whole,
    several MIG instances, lost GPUs."""
    tokens = [str(g.index) for g in hardware.gpus] if selection is None else [str(t) for t in selection]
    problems: list[Problem] = []
    selected: list[GpuInfo] = []
    migs: list[Any] = []
    missing: list[str] = []
    for token in tokens:
        gpu, mig = resolve(token, hardware.gpus)
        if gpu is None:
            missing.append(token)
            continue
        selected.append(gpu)
        if mig is not None:
            migs.append(mig)
        elif gpu.mig_enabled and selection is not None:
            example = gpu.mig_devices[0].uuid if gpu.mig_devices else "MIG-…"
            problems.append(Problem(file, "hardware.gpus",
                                    f"{_gpu_name(gpu)} has MIG enabled: CUDA sees its MIG instances, not the whole card",
                                    f'select one MIG instance by its UUID in hardware.gpus, e.g. "{example}" '
                                    "(`tuitrain gpus` lists them)", "warning"))
    if missing:
        have = ", ".join(f"{g.index} ({g.name})" for g in hardware.gpus)
        problems.append(Problem(file, "hardware.gpus", f"GPU(s) {', '.join(missing)} not found on this machine "
                                f"(it has: {have})", "pick GPUs from `tuitrain gpus` by index or UUID, "
                                "or remove hardware.gpus to use all"))
    if len(migs) > 1:
        problems.append(Problem(file, "hardware.gpus", f"{len(migs)} MIG instances selected, but CUDA shows a "
                                "process only one MIG instance", "select one MIG instance per run "
                                "(and distributed.num_processes = 1)"))
    for gpu in selected:
        if gpu.lost:
            problems.append(Problem(file, "hardware.gpus", f"{_gpu_name(gpu)} stopped answering (NVML: GPU is lost)",
                                    "select other GPUs in hardware.gpus; the card needs a reset (nvidia-smi -r) "
                                    "or a reboot"))
    return selected, migs, problems


def _process_count(file: str, processes: int, listed: int, selected: list[GpuInfo], migs: list[Any],
                   complete: bool) -> list[Problem]:
    """One process per selected GPU: more is an error, fewer leaves GPUs idle (a note)."""
    usable = 1 if migs else len(selected)
    if listed and processes > listed:
        return [Problem(file, "distributed.num_processes",
                        f"{processes} processes but {listed} GPU(s) selected (one process per GPU)",
                        f"set distributed.num_processes = {listed}, or select more GPUs in hardware.gpus")]
    if complete and processes < usable:
        idle = ", ".join(str(g.index) for g in selected[processes:])
        return [Problem(file, "distributed.num_processes",
                        f"{usable} GPUs selected but {processes} process(es): physical GPU(s) {idle} stay idle",
                        f"set distributed.num_processes = {usable}, or select fewer GPUs", "note")]
    return []


def _bf16(file: str, key: str, selected: list[GpuInfo], hardware: Hardware) -> list[Problem]:
    old = [g for g in selected if g.compute_capability and tuple(g.compute_capability) < BF16_MIN_CC]
    unknown = [g for g in selected if not g.compute_capability]
    if old:
        able = [str(g.index) for g in hardware.gpus
                if g.compute_capability and tuple(g.compute_capability) >= BF16_MIN_CC]
        names = ", ".join(f"{_gpu_name(g)} has {g.compute_capability_text}" for g in old)
        fix = _precision_fix(key, "fp16") + (f", or select GPUs with 8.0 or newer in hardware.gpus: {', '.join(able)}"
                                             if able else "")
        return [Problem(file, key, f"bf16 needs compute capability 8.0 (Ampere) or newer; {names}", fix)]
    if unknown:
        return [Problem(file, key, "bf16 needs compute capability 8.0 or newer; NVML does not say what "
                        f"{', '.join(_gpu_name(g) for g in unknown)} has", None, "warning")]
    return []


def _selection_tokens(settings: Settings, hardware: Hardware) -> Sequence[Any] | None:
    """hardware.gpus as entries to resolve: as listed, any N chosen now (`gpus = N`), or None for every GPU."""
    given = settings["hardware"]["gpus"]
    if isinstance(given, int) and not isinstance(given, bool):
        return [str(i) for i in chosen_now(hardware.gpus, given, _min_free(settings))[0]]
    return given if isinstance(given, list) else None


def selected_devices(settings: Settings, hardware: Hardware) -> list[tuple[GpuInfo, MigDevice | None]]:
    """The GPUs (and MIG instances) a CUDA run of `settings` takes here, one per process, in order: what the
    memory estimate compares itself with (tuitrain.launch.memory)."""
    tokens = [str(g.index) for g in hardware.gpus] if (chosen := _selection_tokens(settings, hardware)) is None \
        else [str(t) for t in chosen]
    found = [resolve(token, hardware.gpus) for token in tokens]
    processes = int(settings["distributed"]["num_processes"] or 1)
    return [(gpu, mig) for gpu, mig in found if gpu is not None and not gpu.lost][:processes]


def _cuda_checks(file: str, settings: Settings, hardware: Hardware, near_full: float,
                 busy: int = BUSY_UTILIZATION) -> list[Problem]:
    given = settings["hardware"]["gpus"]
    selection: Sequence[Any] | None = None if isinstance(given, int) else given
    processes = int(settings["distributed"]["num_processes"] or 1)
    if not hardware.gpus:
        return [Problem(file, "hardware.accelerator", f"asks for CUDA GPUs, but this machine has none "
                        f"({hardware.status_line})",
                        'set hardware.accelerator = "cpu" (or "auto"), or run on a machine with a GPU')]
    if given is not None and not given:
        return [Problem(file, "hardware.gpus", "is empty, which hides every GPU, but the accelerator is CUDA",
                        'list GPUs in hardware.gpus (or remove it to use all), or set hardware.accelerator = "cpu"')]
    if isinstance(given, int) and not isinstance(given, bool):
        if given > len(hardware.gpus):
            return [Problem(file, "hardware.gpus", f"asks for any {given} GPUs, but this machine has "
                            f"{len(hardware.gpus)}", f"set gpus = {len(hardware.gpus)} or fewer "
                            "(`tuitrain gpus` lists them)")]
        selection = _selection_tokens(settings, hardware)
    selected, migs, problems = _selection(file, selection, hardware)
    listed_by_hand = isinstance(given, list)
    too_much = _more_than_any(file, settings, selected if listed_by_hand else hardware.gpus)
    if too_much is not None:
        return [too_much]
    listed = len(hardware.gpus) if selection is None else len(selection)
    problems += _process_count(file, processes, listed, selected, migs, complete=len(selected) == listed)
    chosen = {g.index for g in selected}
    min_free = _min_free(settings)

    def reasons(gpu: GpuInfo) -> list[str]:  # the queue's rule (gpu_choice.unfit_reasons), with this check's limits
        return busy_reasons(gpu, near_full, busy) if min_free is None else unfit_reasons(gpu, min_free=min_free)

    room = [str(g.index) for g in hardware.gpus if g.index not in chosen and not g.lost
            and g.memory_fraction is not NA and not reasons(g)]
    for gpu in {g.index: g for g in selected}.values():
        problem = _taken(file, gpu, room, reasons(gpu), near_full, busy, min_free is not None)
        if problem:
            problems.append(problem)
    for precision, key in _precision_asks(settings):
        if precision == "bf16":
            problems += _bf16(file, key, selected, hardware)
    return problems


def _min_free(settings: Settings) -> int | None:
    from tuitrain.profile.memory_size import parse_memory_size

    return parse_memory_size(settings["hardware"]["min_free_memory"])


def _more_than_any(file: str, settings: Settings, candidates: Sequence[GpuInfo]) -> Problem | None:
    """hardware.min_free_memory above what any GPU it may run on has in all: a run that would wait for ever."""
    wanted = _min_free(settings)
    sized = [g for g in candidates if g.memory_total is not NA]
    if wanted is None or not sized:
        return None
    largest = max(sized, key=lambda g: g.memory_total)
    if wanted <= largest.memory_total:
        return None
    text = settings["hardware"]["min_free_memory"]
    return Problem(file, "hardware.min_free_memory", f"{text} is more than any GPU it may run on has: the largest, "
                   f"{_gpu_name(largest)}, has {_gib(largest.memory_total)} in all",
                   f"set it to at most {_gib(largest.memory_total)}, or remove it")


def _listed_gpus_absent(file: str, hw: HardwareSettings, hardware: Hardware, accelerator: str) -> Problem | None:
    """`auto` with GPUs listed lands on the CPU (or MPS) when there are none: a run the profile did not
    ask for, on a machine other than the one it was written for. Refused, naming hardware.gpus."""
    gpus = hw["gpus"]
    if (hw["accelerator"] or "auto") != "auto" or accelerator == "cuda" or not isinstance(gpus, list) or not gpus:
        return None
    listed = ", ".join(str(g) for g in gpus)
    return Problem(file, "hardware.gpus", f"lists GPU(s) {listed}, but this machine has none "
                   f"({hardware.status_line}); accelerator \"auto\" would run on the {accelerator.upper()} instead",
                   'remove hardware.gpus to run on what this machine has, or set hardware.accelerator = "cpu" '
                   "for a CPU run, or run on the machine with these GPUs")


def check(profile_settings: Settings, hardware: Hardware, file: str = "profile",
          accelerator: str | None = None, near_full: float = NEAR_FULL,
          busy: int = BUSY_UTILIZATION) -> list[Problem]:
    """Every hardware problem of a launch. `profile_settings`: the profile with defaults
    (tuitrain.profile.settings_with_defaults); `accelerator`: the planner's choice (None: decided
    here the way the planner does, `resolve_accelerator`)."""
    hw = profile_settings["hardware"]
    processes = int(profile_settings["distributed"]["num_processes"] or 1)
    if accelerator is None:
        accelerator, _ = resolve_accelerator(hw["accelerator"] or "auto", hardware, processes, hw["gpus"])
    problems: list[Problem] = []
    listed = _listed_gpus_absent(file, hw, hardware, accelerator)
    if listed is not None:
        problems.append(listed)
    if accelerator == "cuda":
        problems += _cuda_checks(file, profile_settings, hardware, near_full, busy)
    elif accelerator == "mps":
        if not hardware.mps:
            problems.append(Problem(file, "hardware.accelerator", "asks for Apple MPS, which this machine does not have",
                                    'set hardware.accelerator = "cpu" (or "auto")'))
        if processes > 1:
            problems.append(Problem(file, "distributed.num_processes",
                                    f"{processes} processes, but MPS runs one process only (no process group on MPS)",
                                    'set distributed.num_processes = 1, or hardware.accelerator = "cpu" for CPU ranks'))
    elif accelerator == "cpu":
        for precision, key in _precision_asks(profile_settings):
            if precision == "fp16":
                problems.append(Problem(file, key, "fp16 mixed precision does not run on the CPU",
                                        _precision_fix(key, "no") + ' (or "bf16")'))
            elif hardware.cpu_bf16 is not True:
                problems.append(Problem(file, key, "bf16 on this CPU runs without native bf16 support "
                                        "(no AVX512-BF16 or AMX): slower than fp32", _precision_fix(key, "no"),
                                        "warning"))
    return problems
