"""The accelerate config of one machine's part of a run, as a plain mapping (importing accelerate's config classes
loads torch): what `accelerate launch --config_file` reads. Tests prove that accelerate's own loader and
`accelerate launch` accept what is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuitrain.launch.accelerate_export import deepspeed_section, fsdp_section
from tuitrain.profile.implied import mixed_precision
from tuitrain.profile.settings import Settings


def distributed_type(profile: Settings) -> str:
    """accelerate's distributed_type for a profile. CPU ranks are MULTI_GPU with every GPU hidden:
    on a machine without GPUs, MULTI_CPU (and --cpu) start ONE process, MULTI_GPU starts real
    gloo ranks."""
    dist = profile["distributed"]
    if dist["strategy"] == "fsdp":
        return "FSDP"
    if dist["strategy"] == "deepspeed":
        return "DEEPSPEED"
    multi = dist["num_processes"] > 1 or dist["num_machines"] > 1
    return "MULTI_GPU" if multi else "NO"


def accelerate_config(profile: Settings, accelerator: str, gpu_ids: list[str] | str,
                      deepspeed_json: Path | None = None) -> dict[str, Any]:
    """The accelerate config for a profile on a device kind ("cuda", "mps", "cpu"; "auto" for a
    config written for wherever it will run). `gpu_ids`: "all", or the CUDA device numbers."""
    dist = profile["distributed"]
    kind = distributed_type(profile)
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": kind,
        "downcast_bf16": "yes" if dist["downcast_bf16"] else "no",
        "gpu_ids": gpu_ids if isinstance(gpu_ids, str) else (",".join(gpu_ids) or "all"),
        "machine_rank": dist["machine_rank"],
        "main_training_function": "main",
        "mixed_precision": mixed_precision(profile)[0],  # the one the Trainer trains in: [training] may say it
        "num_machines": dist["num_machines"],
        "num_processes": dist["num_processes"] * dist["num_machines"],
        "rdzv_backend": dist["rdzv_backend"],
        "same_network": bool(dist["same_network"]),
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": accelerator == "cpu" and kind != "MULTI_GPU",
    }
    for key in ("main_process_ip", "main_process_port"):
        if dist.get(key) is not None:
            config[key] = dist[key]
    if kind == "FSDP":
        config["fsdp_config"] = fsdp_section(dist["fsdp"] or {})
    if kind == "DEEPSPEED":
        ds = dist["deepspeed"] or {}
        config["deepspeed_config"] = deepspeed_section(ds, str(deepspeed_json) if deepspeed_json else None)
        if dist["num_machines"] > 1:
            # Without it accelerate hands several machines to DeepSpeed's own runner (pdsh over ssh
            # from machine 0); tuitrain starts every machine itself, as torchrun does.
            config["deepspeed_config"]["deepspeed_multinode_launcher"] = "standard"
        if ds.get("config_file"):
            # accelerate refuses mixed_precision next to a DeepSpeed JSON: the JSON says it
            del config["mixed_precision"]
    return config
