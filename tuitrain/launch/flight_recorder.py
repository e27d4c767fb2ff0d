"""PyTorch's NCCL flight recorder, on for every tuitrain run on CUDA GPUs: each rank keeps its last
collectives in a ring buffer and writes them when NCCL's watchdog times out, into the run's logs/ folder, where
`tuitrain stacks` and the hang digest find them. Torch 2.9 renamed the variables (TORCH_FR_*) and kept the old
names as aliases: both are set, for the torch versions tuitrain supports. A user who set the buffer size in their
own environment (0 turns it off) keeps theirs."""

from __future__ import annotations

from typing import Mapping

TRACE_BUFFER_SIZE = "2000"  # collectives each rank keeps; PyTorch's own suggestion for debugging a hang
TRACE_FILE_PREFIX = "logs/nccl-trace-rank-"  # in the run directory; the rank's number follows
BUFFER_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FILE_VARIABLES = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")


def flight_recorder_env(folder: str, accelerator: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that turn the recorder on for ranks on `accelerator` whose run directory is `folder` (as they
    see it); nothing off CUDA, or when `environ` already sets a buffer size."""
    if accelerator != "cuda" or any(name in environ for name in BUFFER_VARIABLES):
        return {}
    trace_file = f"{folder.rstrip('/')}/{TRACE_FILE_PREFIX}"
    return {**{name: TRACE_BUFFER_SIZE for name in BUFFER_VARIABLES}, "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            **{name: trace_file for name in FILE_VARIABLES}}
