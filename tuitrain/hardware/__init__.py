"""What this machine has to train on: NVIDIA GPUs (through NVML), Apple MPS, the CPU.

Modules, one job each: `na` (the N/A value), `nvml` (one session, the gate every call passes),
`recorded` (a recorded device table standing in for pynvml), `devices` (GPUs as data),
`host` (psutil: host and per-process figures), `mps`, `probe` (`detect_hardware`), `mapping`
(CUDA_DEVICE_ORDER / CUDA_VISIBLE_DEVICES → cuda:N), `sampler` (live figures in rings; who owns
a process is told to it: tuitrain/runs/view/owners.py), `preflight` (checks before a launch). Never imports torch.
"""

from tuitrain.hardware.devices import GpuInfo, GpuProcess, MigDevice
from tuitrain.hardware.na import NA
from tuitrain.hardware.probe import Hardware, detect_hardware

__all__ = ["NA", "GpuInfo", "GpuProcess", "Hardware", "MigDevice", "detect_hardware"]
