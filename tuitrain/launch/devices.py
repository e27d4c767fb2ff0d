"""Which devices one machine's ranks run on, and the environment that selects them: read from the machine's
hardware when the plan is made on it (`devices_here`), from the profile alone when it is made elsewhere
(`devices_elsewhere`: a listed machine planned at home)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuitrain.hardware import Hardware
from tuitrain.hardware.mapping import map_devices
from tuitrain.profile.memory_size import parse_memory_size
from tuitrain.profile.settings import Settings
from tuitrain.torch_build import RECORDED_GPUS_ENV, TorchBuild


@dataclass(frozen=True)
class Devices:
    accelerator: str  # "cuda", "mps" or "cpu"
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)

    @property
    def why(self) -> str:
        """How `auto` chose (the note 'accelerator auto → cuda: 1 NVIDIA GPU(s) found'), '' where it was asked."""
        return next((n for n in self.notes if n.startswith("accelerator auto → ")), "")


def choose_accelerator(profile: Settings, hardware: Hardware, torch: TorchBuild | None = None) -> tuple[str, list[str]]:
    """hardware.accelerator on this machine: `auto` becomes cuda, mps or cpu (with a note saying why). `torch`: the
    ranks' torch (None: not known); one without CUDA makes `auto` the CPU on this machine's own GPUs, unless the
    profile chose GPUs (then the plan refuses: launch.preflight.torch_problem)."""
    asked = profile["hardware"]["accelerator"]
    dist = profile["distributed"]
    if asked != "auto":
        return asked, []
    sharded = dist["strategy"] in ("fsdp", "deepspeed")
    if hardware.has_cuda and profile["hardware"]["gpus"] == []:
        chosen, why = "cpu", "hardware.gpus = [] hides every GPU"
    elif hardware.has_cuda and hardware.real_gpus and torch is not None and not torch.uses_gpu \
            and profile["hardware"]["gpus"] is None:
        chosen, why = "cpu", f"{len(hardware.gpus)} NVIDIA GPU(s) found, but {torch.words()} is installed"
    elif hardware.has_cuda:
        chosen, why = "cuda", f"{len(hardware.gpus)} NVIDIA GPU(s) found"
    elif hardware.mps and dist["num_processes"] == 1 and not sharded:
        chosen, why = "mps", "Apple MPS found and one process asked"
    else:
        chosen = "cpu"
        why = "no NVIDIA GPU found" + (" (MPS runs one process, and no FSDP or DeepSpeed)" if hardware.mps else "")
    return chosen, [f"accelerator auto → {chosen}: {why}"]


def devices_here(profile: Settings, hardware: Hardware, torch: TorchBuild | None = None) -> Devices:
    """This machine's devices for a profile with defaults (its hardware.gpus: this machine's selection). On GPUs that
    are not this machine's (a recorded table's) the plan's environment says so (RECORDED_GPUS_ENV): its ranks train
    on the CPU, and say it in their logs, instead of refusing the device they cannot have."""
    accelerator, notes = choose_accelerator(profile, hardware, torch)
    chosen = profile["hardware"]
    env: dict[str, str] = {}
    if accelerator == "cuda" and hardware.gpus and not hardware.real_gpus:
        env[RECORDED_GPUS_ENV] = "1"
    if accelerator == "cuda":
        # The raw selection (None: every GPU), so FASTEST_FIRST can order "all GPUs" itself.
        mapping = map_devices(hardware.gpus, chosen["gpus"], chosen["device_order"],
                              parse_memory_size(chosen["min_free_memory"]))
        env.update(mapping.env)
        notes += [*mapping.lines, *mapping.notes]
    elif accelerator == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # hide any GPU: the CPU run the Trainer docs describe
    elif accelerator == "mps" and chosen["mps_fallback"]:
        env["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"  # FSDP/DeepSpeed on MPS: refused by machine_problems
    return Devices(accelerator, env, notes)


def devices_elsewhere(profile: Settings) -> Devices:
    """A machine's devices from the profile alone (its hardware is not known where the plan is made).
    `hardware.accelerator` is the same everywhere; with `auto`, a machine whose GPUs are listed runs on them with
    CUDA, `gpus = []` hides every GPU (CPU ranks), and a machine with no GPUs listed is planned for CUDA on all of
    its GPUs (a note says so). Listed GPU indices are NVML's, so they go out under CUDA_DEVICE_ORDER=PCI_BUS_ID in
    the order given."""
    hardware = profile["hardware"]
    asked = hardware["accelerator"]
    gpus = hardware["gpus"]
    if asked == "cpu" or (asked == "auto" and gpus == []):
        why = "hardware.gpus = [] hides every GPU" if asked == "auto" else "accelerator cpu"
        return Devices("cpu", {"CUDA_VISIBLE_DEVICES": ""}, [f"CPU ranks ({why})"])
    if asked == "mps":
        return Devices("mps", {"PYTORCH_ENABLE_MPS_FALLBACK": "1"} if hardware["mps_fallback"] else {})
    if isinstance(gpus, list) and gpus:  # a count (any N free GPUs) is chosen on the machine itself
        names = ", ".join(str(g) for g in gpus)
        return Devices("cuda", {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus)},
                       [f"GPUs {names} (NVML numbers, as nvidia-smi shows them) → cuda:0…cuda:{len(gpus) - 1}"])
    notes = ["every GPU of the machine"]
    if asked == "auto":
        notes = [("accelerator auto → cuda, every GPU of the machine (its GPUs are not known here: list them with "
                  "gpus = [...] or set hardware.accelerator)")]
    return Devices("cuda", {"CUDA_DEVICE_ORDER": hardware["device_order"]}, notes)
