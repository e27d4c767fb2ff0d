"""What a test needs of the machine's GPUs, said by a marker and checked once per test process.

- `gpu`: a CUDA GPU that torch can use (the GPU lane, tests/test_gpu_lane.py). Elsewhere (CI, these
  2-core machines) every such test skips with the same one line, folded into one line of the summary.
- `no_nvidia_driver`: a machine where NVML finds no driver (the tests of that normal state). On a GPU
  machine they skip; the GPU lane checks the same commands against the real driver there.

Tests that use a recorded NVML table need neither: a table answers the same anywhere.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest

from tuitrain.hardware.devices import Discovery, discover, no_identity


@functools.cache
def real_nvml() -> Discovery:
    """What the real NVML says on this machine (never a recorded table)."""
    return discover(None, no_identity)


@functools.cache
def cuda_missing() -> str | None:
    """Why the GPU lane cannot run here, in one line; None where it can."""
    found = real_nvml()
    if not found.gpus:
        return f"the GPU lane needs a CUDA GPU: {found.status_line}"
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=300)
    if not probe.stdout.strip().endswith("True"):
        from tuitrain.torch_build import cuda_install_command, driver_version, read_torch_build

        return (f"the GPU lane needs a CUDA build of torch ({probe.stdout.strip() or probe.stderr.strip()[-200:]}): "
                f"{cuda_install_command(sys.executable, read_torch_build(), driver_version())}")
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (the GPU lane); skips in one line elsewhere")
    config.addinivalue_line("markers", "no_nvidia_driver: needs a machine where NVML finds no driver")


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Raised here, not added as skip markers, so the summary folds every skip of a kind into one line.
    if item.get_closest_marker("gpu") is not None:
        reason = cuda_missing()
        if reason:
            pytest.skip(reason)
    if item.get_closest_marker("no_nvidia_driver") is not None:
        found = real_nvml()
        if found.available:
            pytest.skip(f"needs a machine without an NVIDIA driver; this one has {found.status_line}")
