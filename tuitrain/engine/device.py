"""The device a rank trains on is the one its run says (run.json's `accelerator`): a CUDA run whose rank sees no CUDA
GPU fails at its start in one line, naming the torch installed and how to get its CUDA build (the words validate and
plan say, `tuitrain.torch_build.cpu_torch_refusal`), rather than train on the CPU as torch's Trainer would, with a
warning in the log. Where the plan's GPUs were a recorded table's (its environment says so, or this machine answers
NVML from one), the rank trains on the CPU and says it: no torch on this machine reaches them."""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

from tuitrain.engine.errors import EngineError
from tuitrain.torch_build import NVML_TABLE_ENV, RECORDED_GPUS_ENV, TorchBuild, cpu_torch_refusal, driver_version


def check_device(accelerator: str | None, torch: Any, environ: Mapping[str, str] = os.environ) -> str:
    """What this rank trains on, in words for its log ('cuda:0, NVIDIA H100 80GB HBM3'; 'the CPU'). EngineError
    where the run asks for CUDA and `torch` (the imported module) has no GPU to give."""
    if accelerator != "cuda":
        return "the CPU" if accelerator in (None, "cpu") else str(accelerator)
    if torch.cuda.is_available():
        index = int(environ.get("LOCAL_RANK", "0"))
        return f"cuda:{index}, {torch.cuda.get_device_name(index)}"
    if environ.get(RECORDED_GPUS_ENV) or environ.get(NVML_TABLE_ENV):  # planned there, or this machine answers so
        return ("the CPU: the run's GPUs are a recorded device table's (TUITRAIN_NVML_TABLE), which no torch here "
                "reaches")
    build = TorchBuild(str(torch.__version__), getattr(torch.version, "cuda", None), getattr(torch.version, "hip", None))
    if not build.uses_gpu:
        message, fix = cpu_torch_refusal(build, sys.executable, driver_version())
        raise EngineError(f"hardware.accelerator {message}; {fix}")
    raise EngineError(f"hardware.accelerator asks for CUDA, but {build.words()} sees no GPU here "
                      f"(CUDA_VISIBLE_DEVICES={environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}): its ranks would "
                      "train on the CPU; check the driver with nvidia-smi and the GPUs the plan chose (tuitrain plan)")
