"""The strategy menu as data, for an editor to render: pick a strategy, show only its fields.

`STRATEGY_FIELDS[strategy]` lists the fields that strategy uses, each with its dotted profile
key, kind, choices, default and a one-line help; `fields_for(strategy)` is the same as a call.
Everything comes from the profile schema (tuitrain/profile/schema.py), which validation also
uses, so the editor and the checks cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuitrain.profile.schema import DEEPSPEED_KEYS, FSDP_KEYS, SCHEMA, STRATEGIES, KeySpec

STRATEGY_HELP = {
    "single": "one process on one device: a GPU, Apple MPS or the CPU",
    "ddp": "one model copy per process, gradients averaged: several GPUs, or several CPU processes (gloo)",
    "fsdp": "parameters, gradients and optimizer state sharded across GPUs (PyTorch FSDP)",
    "deepspeed": "DeepSpeed ZeRO: sharded optimizer state, gradients and parameters, with CPU/NVMe offload",
}


@dataclass(frozen=True)
class StrategyField:
    """One field of the strategy editor.

    key: the dotted profile key ("distributed.fsdp.sharding_strategy"); kind: "str", "int",
    "float", "bool", "list[str]", "gpus"; choices: the allowed values (None: free); default:
    the value when absent (None: absent means unset, see help); help: one line.
    """

    key: str
    kind: str
    choices: tuple[Any, ...] | None
    default: Any
    help: str

    @property
    def name(self) -> str:
        return self.key.rsplit(".", 1)[-1]

    @property
    def section(self) -> str:
        return self.key.rsplit(".", 1)[0]


def _field(key: str, spec: KeySpec) -> StrategyField:
    return StrategyField(key, spec.kind, spec.choices, spec.default, spec.doc)


def _dist(*names: str) -> list[StrategyField]:
    return [_field(f"distributed.{n}", SCHEMA["distributed"][n]) for n in names]  # type: ignore[arg-type]


_PRECISION = _field("hardware.mixed_precision", SCHEMA["hardware"]["mixed_precision"])  # type: ignore[arg-type]
_GPUS = _field("hardware.gpus", SCHEMA["hardware"]["gpus"])  # type: ignore[arg-type]
_MULTI = _dist("num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port",
               "rdzv_backend", "same_network")

# "single" is one process on one machine: accelerate's distributed_type NO takes no process count
# and no rendezvous, so of [distributed] it uses nothing but the strategy; what it does use (mixed
# precision, the GPU) lives in [hardware]. distributed.downcast_bf16 is in no strategy: accelerate
# reads it for TPUs only (XLA_DOWNCAST_BF16 under bf16, accelerate.utils.launch.prepare_tpu), and
# tuitrain launches on CUDA GPUs, Apple MPS or the CPU; it stays in the schema for accelerate
# configs imported and written back.
STRATEGY_FIELDS: dict[str, tuple[StrategyField, ...]] = {
    "single": (_PRECISION, _GPUS),
    "ddp": (*_MULTI, _PRECISION, _GPUS),
    "fsdp": (*_MULTI, _PRECISION, _GPUS, *(_field(f"distributed.fsdp.{k}", s) for k, s in FSDP_KEYS.items())),
    "deepspeed": (*_MULTI, _PRECISION, _GPUS,
                  *(_field(f"distributed.deepspeed.{k}", s) for k, s in DEEPSPEED_KEYS.items())),
}
STRATEGY_FIELD = StrategyField("distributed.strategy", "str", STRATEGIES, "single",
                               "how the training is spread over devices")


def fields_for(strategy: str) -> tuple[StrategyField, ...]:
    """The fields an editor shows once `strategy` is picked (KeyError for an unknown one)."""
    return STRATEGY_FIELDS[strategy]
