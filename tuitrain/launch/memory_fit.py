"""Does the estimate fit: `memory_check` compares tuitrain.launch.memory's estimate with the GPUs a run takes, says
it in a plan's lines, warns where the high end of the estimate is above a GPU's free memory, refuses only where even
its low end is well above it, and names the changes that would fit (a smaller batch with accumulation, gradient
checkpointing, sharding, an 8-bit optimizer, offload, LoRA), each with its own estimate. Pure: data in, data out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tuitrain.launch.memory import ADAMW, GIB, OPTIMIZERS, MemoryEstimate, MemorySetup, estimate_memory
from tuitrain.launch.model_size import ModelShape, Unknown
from tuitrain.profile import Problem

WIDE = 1.25  # a refusal: even the low end of the estimate is this much above a GPU's free memory


@dataclass(frozen=True)
class GpuRoom:
    """One GPU the run would take: its words ("GPU 1 (NVIDIA H100 80GB HBM3)"), free and total memory (None: unknown)."""

    name: str
    free: int | None
    total: int | None


@dataclass(frozen=True)
class MemoryCheck:
    """What a plan says of memory: the estimate (None: unknown, `why`), its lines, and the problem it raises."""

    estimate: MemoryEstimate | None
    why: str | None = None
    lines: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    gpus: tuple[GpuRoom, ...] = ()
    fits: list[str] = field(default_factory=list)  # changes that would fit, as the problem's fix names them
    waits: bool = False  # it would fit once others free the GPU: a queued run waits for that, and is not refused

    def to_dict(self) -> dict[str, Any]:
        verdict = next((p.severity for p in self.problems), "fits" if self.estimate and self.gpus else None)
        return {"estimate": self.estimate.to_dict() if self.estimate else None, "unknown": self.why,
                "gpus": [{"gpu": g.name, "free": g.free, "total": g.total} for g in self.gpus],
                "verdict": verdict, "would_fit": self.fits, "lines": self.lines}


def gib(num_bytes: float) -> str:
    """GiB as the estimate says them: one decimal, whole from 100."""
    value = num_bytes / GIB
    return f"{value:.0f}" if value >= 99.95 else f"{value:.1f}"


def summary(estimate: MemoryEstimate) -> str:
    """≈ 41 GiB a GPU ± 4 (weights 13, gradients 13, optimizer 26, activations 2, ...): the parts of 0.05 GiB or more."""
    parts = [("weights", estimate.weights), ("gradients", estimate.gradients), ("optimizer", estimate.optimizer),
             ("activations", estimate.activations), ("logits", estimate.logits), ("buffers", estimate.buffers),
             ("CUDA and allocator", estimate.runtime)]
    shown = ", ".join(f"{name} {gib(value)}" for name, value in parts if value >= GIB // 20)
    return f"≈ {gib(estimate.needed)} GiB a GPU ± {gib(estimate.margin)} ({shown})"


def room_words(gpu: GpuRoom) -> str:
    if gpu.free is None:
        return f"{gpu.name}: free memory unknown" + (f" ({gib(gpu.total)} GiB in all)" if gpu.total else "")
    return f"{gpu.name} has {gib(gpu.free)} GiB free" + (f" of {gib(gpu.total)}" if gpu.total else "")


def tightest(gpus: Sequence[GpuRoom]) -> GpuRoom | None:
    """The GPU with the least room (free memory, else its total where free is unknown); None when none is known."""
    known = [g for g in gpus if g.free is not None or g.total is not None]
    return min(known, key=lambda g: g.free if g.free is not None else g.total or 0) if known else None


def _fits(estimate: MemoryEstimate, room: int) -> bool:
    return estimate.needed + estimate.margin <= room


Change = tuple[str, str, MemorySetup]  # (profile key, words, the setup it gives)


def changes(shape: ModelShape, setup: MemorySetup) -> list[Change]:
    """The changes that lower the estimate, least intrusive first (the batch sizes from the largest)."""
    out: list[Change] = []
    batch = setup.batch // 2
    while batch >= 1:
        factor = setup.batch // batch
        out.append(("training.per_device_train_batch_size",
                    (f"training.per_device_train_batch_size = {batch} with gradient_accumulation_steps = "
                     f"{setup.accumulation * factor} (the same effective batch)"),
                    replace(setup, batch=batch, accumulation=setup.accumulation * factor)))
        batch //= 2
    if not setup.checkpointing:
        out.append(("training.gradient_checkpointing", "training.gradient_checkpointing = true",
                    replace(setup, checkpointing=True)))
    sharded = (setup.strategy == "fsdp" and setup.fsdp_sharding == "full_shard") or \
        (setup.strategy == "deepspeed" and setup.zero_stage == 3)
    if setup.world > 1 and not sharded:
        if setup.strategy == "deepspeed":
            out.append(("distributed.deepspeed.zero_stage", "distributed.deepspeed.zero_stage = 3 (ZeRO-3)",
                        replace(setup, zero_stage=3)))
        else:
            out.append(("distributed.strategy", 'distributed.strategy = "fsdp" (full_shard, as ZeRO-3 shards)',
                        replace(setup, strategy="fsdp", fsdp_sharding="full_shard")))
    adamw = OPTIMIZERS.get(setup.optimizer, ADAMW) == ADAMW
    if adamw and setup.lora_r is None:
        out.append(("training.optim", 'training.optim = "adamw_bnb_8bit" (8-bit optimizer state)',
                    replace(setup, optimizer="adamw_bnb_8bit")))
    if setup.strategy != "fsdp" and not setup.offload_optimizer and adamw and setup.lora_r is None:
        stage = setup.zero_stage if setup.strategy == "deepspeed" else 2
        out.append(("distributed.strategy", ('distributed.strategy = "deepspeed" with offload_optimizer_device = '
                                             f'"cpu" (ZeRO-{stage}, optimizer state in CPU memory)'),
                    replace(setup, strategy="deepspeed", zero_stage=stage, offload_optimizer=True)))
    if setup.lora_r is None:
        out.append(("model.lora", "[model.lora] (r = 8 on peft's default layers: only the adapters train)",
                    replace(setup, lora_r=8, lora_targets=())))
    elif not setup.quantize:
        out.append(("model.lora.quantize", 'model.lora.quantize = "nf4" (QLoRA: a 4-bit base)',
                    replace(setup, quantize="nf4")))
    return out


def would_fit(shape: ModelShape, setup: MemorySetup, room: int, most: int = 3) -> list[tuple[str, str, MemoryEstimate]]:
    """Up to `most` changes after which the estimate fits in `room` bytes, with their estimates: single changes
    (of a key, the first that fits: the largest batch), else pairs of changes to two keys."""
    found: list[tuple[str, str, MemoryEstimate]] = []
    for key, words, changed in changes(shape, setup):
        if len(found) < most and all(k != key for k, _, _ in found):
            estimate = estimate_memory(shape, changed)
            if _fits(estimate, room):
                found.append((key, words, estimate))
    if found:
        return found
    tried: set[frozenset[str]] = set()
    for key, words, changed in changes(shape, setup):
        for second, more, both in changes(shape, changed):
            pair = frozenset((key, second))
            if second == key or pair in tried or len(found) >= most:
                continue
            estimate = estimate_memory(shape, both)
            if _fits(estimate, room):
                tried.add(pair)
                found.append((key, f"{words} and {more}", estimate))
    return found


def memory_check(shape: ModelShape | Unknown, setup: MemorySetup, gpus: Sequence[GpuRoom], file: str,
                 where: str = "") -> MemoryCheck:
    """The estimate for `setup`, its lines for a plan, and a warning (it may not fit) or a refusal (it cannot, by a
    wide margin) against the tightest of `gpus` (none: the estimate alone). `where`: whose config it read."""
    if isinstance(shape, Unknown):
        return MemoryCheck(None, shape.why, [f"GPU memory: not estimated: {shape.why}"])
    estimate = estimate_memory(shape, setup)
    least = tightest(gpus)
    against = ""
    if least is not None:
        against = "; " + (room_words(least) if len(gpus) == 1 else f"the tightest of {len(gpus)} GPUs, "
                          + room_words(least))
    source = f" (from {where})" if where else ""
    lines = [f"GPU memory: {summary(estimate)}{against}",
             f"GPU memory model{source}: " + "; ".join(estimate.words)
             + f"; error ± {gib(estimate.margin)} GiB (parameter counts exact, activations ± 30 %)"]
    if least is None:
        return MemoryCheck(estimate, None, lines, gpus=tuple(gpus))
    room = least.free if least.free is not None else least.total or 0
    low, high = estimate.needed - estimate.margin, estimate.needed + estimate.margin
    if high <= room:
        return MemoryCheck(estimate, None, lines, gpus=tuple(gpus))
    fits = would_fit(shape, setup, room)
    fix = ("would fit: " + "; ".join(f"{words} (≈ {gib(e.needed)} GiB)" for _, words, e in fits) if fits
           else "no change of these fits, not even two together: a smaller batch, gradient checkpointing, sharding, "
                "an 8-bit optimizer, LoRA; choose GPUs with more memory")
    waits = least.free is not None and bool(least.total) and estimate.needed <= (least.total or 0) \
        and least.free < (least.total or 0)
    if waits:
        fix += (f"; or wait for room: hardware.min_free_memory = \"{int(estimate.needed / GIB + 1)}GiB\" and "
                "`tuitrain run --queue` start it when a GPU has that much free")
    key = fits[0][0] if fits else "training.per_device_train_batch_size"
    if low > WIDE * room:
        message = f"does not fit: {summary(estimate)}; {room_words(least)} (even the low end, {gib(low)} GiB, is well above it)"
        severity = "error"
    else:
        message = f"may not fit: {summary(estimate)}; {room_words(least)}"
        severity = "warning"
    return MemoryCheck(estimate, None, lines, [Problem(file, key, message, fix, severity)],  # type: ignore[arg-type]
                       tuple(gpus), [words for _, words, _ in fits], waits)
