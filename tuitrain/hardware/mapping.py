"""Which physical GPU becomes cuda:N: CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES, worked out.

Pure functions over `GpuInfo` records. How CUDA numbers GPUs:

* ``CUDA_DEVICE_ORDER=PCI_BUS_ID``: by PCI bus id, the numbering nvidia-smi and NVML show.
* ``CUDA_DEVICE_ORDER=FASTEST_FIRST`` (CUDA's default): fastest first, by a heuristic CUDA does
  not document. We predict it (compute capability, then CUDA cores × max SM clock, then PCI bus
  id), and mark every number that rests on the prediction.
* Integer entries in ``CUDA_VISIBLE_DEVICES`` are read in the numbering of CUDA_DEVICE_ORDER;
  UUID entries name a physical GPU whatever the order. The visible GPUs become cuda:0, cuda:1, …
  **in the order listed** ("2,0" makes physical 2 cuda:0), and an empty value hides every GPU.

What we emit (the choice, so the plan's "physical GPU 2 → cuda:0" lines are facts, not guesses):

* PCI_BUS_ID: NVML indices, in the order the user listed them (what nvidia-smi shows and the
  Trainer docs use: ``CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,0``).
* FASTEST_FIRST: GPU UUIDs, in the order the user listed them; with no selection, every GPU in
  the predicted fastest-first order. An integer here would select whichever GPU CUDA's heuristic
  puts at that place, and a wrong prediction would silently train on the wrong card; a UUID cannot
  be misread. Where a GPU's UUID is unknown we fall back to its predicted index and say so.
* A MIG instance is always named by its MIG UUID (CUDA accepts nothing else for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from tuitrain.hardware.devices import GpuInfo, MigDevice
from tuitrain.hardware.gpu_choice import chosen_now
from tuitrain.hardware.na import NaType

PCI_BUS_ID = "PCI_BUS_ID"
FASTEST_FIRST = "FASTEST_FIRST"
DEVICE_ORDERS = (PCI_BUS_ID, FASTEST_FIRST)


@dataclass(frozen=True)
class Assignment:
    """One visible device: what the user wrote, the physical GPU it is, the cuda:N it becomes."""

    cuda_index: int
    token: str  # as selected: "2", "GPU-8f0c…", "MIG-…"
    physical: int | None  # NVML index; None when not found on this machine
    mig: MigDevice | None = None
    visible_as: str = ""  # the entry written into CUDA_VISIBLE_DEVICES

    @property
    def line(self) -> str:
        if self.physical is None:
            return f"GPU {self.token} (not found on this machine) → cuda:{self.cuda_index}"
        if self.mig is not None:
            return f"MIG instance {self.mig.uuid} of physical GPU {self.physical} → cuda:{self.cuda_index}"
        return f"physical GPU {self.physical} → cuda:{self.cuda_index}"


@dataclass(frozen=True)
class CudaMapping:
    device_order: str
    visible_devices: str
    assignments: tuple[Assignment, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def lines(self) -> tuple[str, ...]:
        if not self.assignments:
            return ("no GPU visible (CUDA_VISIBLE_DEVICES is empty)",)
        return tuple(a.line for a in self.assignments)

    @property
    def env(self) -> dict[str, str]:
        return {"CUDA_DEVICE_ORDER": self.device_order, "CUDA_VISIBLE_DEVICES": self.visible_devices}

    @property
    def physical(self) -> tuple[int | None, ...]:
        """The NVML index behind cuda:0, cuda:1, …"""
        return tuple(a.physical for a in self.assignments)


# ---------------------------------------------------------------------------- numbering

def _pci_key(gpu: GpuInfo) -> tuple[int, str, int]:
    bus = gpu.pci_bus_id
    return (0, bus.lower(), gpu.index) if bus else (1, "", gpu.index)


def pci_order(devices: Iterable[GpuInfo]) -> list[GpuInfo]:
    """The GPUs as CUDA_DEVICE_ORDER=PCI_BUS_ID numbers them (= NVML / nvidia-smi order)."""
    return sorted(devices, key=_pci_key)


def fastest_first_order(devices: Iterable[GpuInfo]) -> list[GpuInfo]:
    """The GPUs as we predict CUDA's FASTEST_FIRST numbers them: compute capability, then
    CUDA cores × max SM clock, both descending; ties by PCI bus id."""

    def key(gpu: GpuInfo) -> tuple[int, int, float, tuple[int, str, int]]:
        cc = gpu.compute_capability
        if isinstance(cc, NaType) or not cc:
            cc = (0, 0)
        speed = gpu.speed_estimate or 0.0
        return (-cc[0], -cc[1], -speed, _pci_key(gpu))

    return sorted(devices, key=key)


def enumeration(devices: Iterable[GpuInfo], order: str) -> list[GpuInfo]:
    """The GPUs in the numbering of `order` (with CUDA_VISIBLE_DEVICES unset)."""
    _check_order(order)
    return pci_order(devices) if order == PCI_BUS_ID else fastest_first_order(devices)


def cuda_ordinals(devices: Sequence[GpuInfo]) -> dict[int, dict[str, int]]:
    """For each NVML index, the CUDA index it gets under each device order, every GPU visible.
    The FASTEST_FIRST numbers are our prediction of CUDA's heuristic."""
    out: dict[int, dict[str, int]] = {gpu.index: {} for gpu in devices}
    for order in DEVICE_ORDERS:
        for cuda_index, gpu in enumerate(enumeration(devices, order)):
            out[gpu.index][order] = cuda_index
    return out


def _check_order(order: str) -> None:
    if order not in DEVICE_ORDERS:
        raise ValueError(f"device order {order!r} is not one of {', '.join(DEVICE_ORDERS)}")


# ---------------------------------------------------------------------------- selection

def resolve(token: int | str, devices: Sequence[GpuInfo]) -> tuple[GpuInfo | None, MigDevice | None]:
    """The GPU (and MIG instance) a selection entry names: an NVML index, a GPU UUID or a unique
    prefix of one (as CUDA accepts), or a MIG UUID. (None, None) when none matches."""
    word = str(token).strip()
    if word.isdecimal():
        index = int(word)
        return next((g for g in devices if g.index == index), None), None
    for gpu in devices:
        if gpu.uuid and gpu.uuid == word:
            return gpu, None
        for mig in gpu.mig_devices:
            if mig.uuid and mig.uuid == word:
                return gpu, mig
    prefixed = [g for g in devices if g.uuid and len(word) >= 8 and g.uuid.startswith(word)]
    if len(prefixed) == 1:
        return prefixed[0], None
    return None, None


def map_devices(devices: Sequence[GpuInfo], selection: Sequence[int | str] | int | None, order: str,
                min_free: int | None = None) -> CudaMapping:
    """CUDA_DEVICE_ORDER / CUDA_VISIBLE_DEVICES for `selection` (None: every GPU; []: none; an int N: any N free
    GPUs, `gpu_choice.chosen_now`, with `min_free` bytes free each where the profile asks) under `order`, and which
    physical GPU becomes which cuda:N. The selection's order is kept."""
    _check_order(order)
    notes: list[str] = []
    if isinstance(selection, int):  # a count (validated: never a bool)
        picked, note = chosen_now(devices, selection, min_free)
        chosen = map_devices(devices, [str(i) for i in picked], order)
        return CudaMapping(order, chosen.visible_devices, chosen.assignments, (note, *chosen.notes))
    if selection is not None and not selection:
        return CudaMapping(order, "", (), ("every GPU hidden (CUDA_VISIBLE_DEVICES=)",))
    if selection is None:
        if not devices:
            return CudaMapping(order, "", (), ("no NVIDIA GPU found: CUDA_VISIBLE_DEVICES= hides any",))
        tokens: list[str] = [str(g.index) for g in enumeration(devices, order)]
        if order == FASTEST_FIRST:
            notes.append("every GPU, fastest first by our prediction of CUDA's heuristic "
                         "(compute capability, then cores × clock); listed by UUID so this order is the one used")
    else:
        tokens = [str(t).strip() for t in selection]
    if not devices:
        notes.append("GPUs not verified: NVML found no NVIDIA GPU on this machine")

    predicted = {g.index: i for i, g in enumerate(fastest_first_order(devices))}
    pci_number = {g.index: i for i, g in enumerate(pci_order(devices))}
    assignments: list[Assignment] = []
    fell_back: list[int] = []
    for cuda_index, token in enumerate(tokens):
        gpu, mig = resolve(token, devices)
        if gpu is None:
            visible = token
        elif mig is not None:
            visible = str(mig.uuid)
        elif order == PCI_BUS_ID:
            visible = str(pci_number[gpu.index])
        elif gpu.uuid:
            visible = str(gpu.uuid)
        else:
            visible = str(predicted[gpu.index])
            fell_back.append(gpu.index)
        assignments.append(Assignment(cuda_index, token, gpu.index if gpu else None, mig, visible))
    if fell_back:
        notes.append(f"GPU(s) {', '.join(map(str, fell_back))} have no readable UUID: listed by their predicted "
                     "FASTEST_FIRST index; set hardware.device_order = \"PCI_BUS_ID\" to be sure of the card")
    if order == FASTEST_FIRST and devices and selection is not None:
        notes.append("listed by UUID: under FASTEST_FIRST an index would follow CUDA's undocumented speed "
                     "heuristic; cuda:N follows the order listed")
    return CudaMapping(order, ",".join(a.visible_as for a in assignments), tuple(assignments), tuple(notes))


def visible_gpus(env: Mapping[str, str], devices: Sequence[GpuInfo]) -> list[GpuInfo]:
    """The physical GPUs a process started with `env` sees, in cuda:N order: the inverse of
    `map_devices` (CUDA_VISIBLE_DEVICES unset means every GPU; set but empty means none)."""
    order = env.get("CUDA_DEVICE_ORDER", FASTEST_FIRST)
    if order not in DEVICE_ORDERS:
        order = FASTEST_FIRST
    numbered = enumeration(devices, order)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return numbered
    out: list[GpuInfo] = []
    for token in (t.strip() for t in visible.split(",")):
        if token.isdecimal():
            gpu = numbered[int(token)] if int(token) < len(numbered) else None
        else:
            gpu, _mig = resolve(token, devices)
        if gpu is None:
            break  # CUDA stops at the first entry it cannot match
        if gpu not in out:
            out.append(gpu)
    return out


def describe_ordinals(devices: Sequence[GpuInfo]) -> list[str]:
    """Lines like "physical GPU 2 (NVIDIA GeForce RTX 4090): cuda:2 under PCI_BUS_ID, cuda:0 under
    FASTEST_FIRST (predicted)" for every GPU, PCI order."""
    ordinals = cuda_ordinals(devices)
    return [f"physical GPU {g.index} ({g.name}): cuda:{ordinals[g.index][PCI_BUS_ID]} under PCI_BUS_ID, "
            f"cuda:{ordinals[g.index][FASTEST_FIRST]} under FASTEST_FIRST (predicted)"
            for g in pci_order(devices)]


__all__ = [
    "Assignment", "CudaMapping", "DEVICE_ORDERS", "FASTEST_FIRST", "PCI_BUS_ID", "cuda_ordinals", "visible_gpus",
    "describe_ordinals", "enumeration", "fastest_first_order", "map_devices", "pci_order", "resolve",
]
