"""What this machine has to train on: NVIDIA GPUs (through NVML), Apple MPS, the CPU."""

from tuitrain.hardware.probe import GpuInfo, Hardware, detect_hardware

__all__ = ["GpuInfo", "Hardware", "detect_hardware"]
