"""Which torch the ranks get and whether it can use this machine's NVIDIA GPUs, read without importing torch.

The installed torch's build is in its own `torch/version.py` (`__version__ = '2.13.0+cpu'`, `cuda = None` on a CPU
build, `cuda = '13.0'` on a CUDA one), read as text from the first `torch` folder on sys.path, where an import
would find it (`read_torch_build`). The NVIDIA driver is seen as `tuitrain gpus` sees it: NVML's library
(libnvidia-ml.so.1) loads, or nvidia-smi is on the PATH (`driver_present`). The command that installs torch's
CUDA build for the driver (`cuda_install_command`) is the one fix every refusal of a CPU torch names: validate,
plan, the rank. Standard library only: `scripts/bootstrap.sh` runs this module before tuitrain is installed
(`python -m tuitrain.torch_build pip-args`: what pip installs torch with; `check`: a line when the torch installed
cannot use the GPUs this machine has).
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

PINNED = "2.13.0"  # the torch scripts/bootstrap.sh installs (TORCH_SPEC overrides it)
INDEX = "https://download.pytorch.org/whl/{}"  # torch's own index of each build (cpu, cu126, cu130, ...)
# The CUDA builds of PINNED (cu126, cu129, cu130, cu132), newest first as chosen here, each with the oldest driver
# (major version) it runs on under CUDA's minor version compatibility on Linux: 13.x needs 580, 12.x 525.
CUDA_BUILDS = (("cu130", 580), ("cu126", 525))
OLDEST_DRIVER = CUDA_BUILDS[-1][1]
# In a plan's environment: its GPUs are a recorded table's (a machine without them rehearses a CUDA run), so its
# ranks train on the CPU and say so, instead of refusing a device no torch here can reach (tuitrain.engine.device).
RECORDED_GPUS_ENV = "TUITRAIN_RECORDED_GPUS"
NVML_TABLE_ENV = "TUITRAIN_NVML_TABLE"  # a machine that answers NVML from a recorded table (tuitrain.hardware.recorded)


@dataclass(frozen=True)
class TorchBuild:
    """The installed torch as its version.py says: `cuda` / `hip` None where it is not built for them."""

    version: str  # "2.13.0+cpu"
    cuda: str | None = None  # "13.0"
    hip: str | None = None  # ROCm; torch.cuda runs on it too

    @property
    def uses_gpu(self) -> bool:
        return self.cuda is not None or self.hip is not None

    @property
    def public(self) -> str:
        """The version without its build label: '2.13.0' of '2.13.0+cpu'."""
        return self.version.partition("+")[0]

    def words(self) -> str:
        """'torch 2.13.0+cpu, a CPU-only build' / 'torch 2.13.0+cu130, built for CUDA 13.0'."""
        if self.cuda is not None:
            return f"torch {self.version}, built for CUDA {self.cuda}"
        if self.hip is not None:
            return f"torch {self.version}, built for ROCm {self.hip}"
        return f"torch {self.version}, a CPU-only build"


_ASSIGNED = r"^{name}\s*(?::[^=\n]*)?=\s*(?:None|['\"]([^'\"]*)['\"])"


def parse_version_file(text: str) -> TorchBuild | None:
    """torch/version.py's `__version__`, `cuda` and `hip` (None where the file is not torch's)."""
    def value(name: str) -> str | None:
        found = re.search(_ASSIGNED.format(name=re.escape(name)), text, re.MULTILINE)
        return found.group(1) if found and found.group(1) else None

    version = value("__version__")
    return TorchBuild(version, value("cuda"), value("hip")) if version else None


def read_torch_build(path: Iterable[str] | None = None) -> TorchBuild | None:
    """The torch an import would find on `path` (default sys.path), or None where none is installed."""
    for entry in sys.path if path is None else path:
        candidate = Path(entry or ".") / "torch" / "version.py"
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        return parse_version_file(text)
    return None


def nvml_library_loads() -> bool:
    """False when, on Linux, libnvidia-ml.so.1 cannot be loaded (no driver): pynvml's nvmlInit would fail with
    LIBRARY_NOT_FOUND for the same reason, and this answer costs no pynvml import (~15 ms of every `tuitrain plan` on
    a machine without a driver: hardware.nvml asks it first). Elsewhere (pynvml searches more places) True."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")  # the very name pynvml loads on Linux
    except OSError:
        return False
    return True


def driver_present() -> bool:
    """An NVIDIA driver is installed here, as `tuitrain gpus` finds one (its NVML library loads), or nvidia-smi is on
    the PATH."""
    return (sys.platform.startswith("linux") and nvml_library_loads()) or shutil.which("nvidia-smi") is not None


def driver_version() -> str | None:
    """The NVIDIA driver's version ('580.95.05'), from NVML, else nvidia-smi; None where neither answers."""
    if sys.platform.startswith("linux") and nvml_library_loads():
        import ctypes

        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
            if nvml.nvmlInit_v2() == 0:
                buffer = ctypes.create_string_buffer(96)
                ok = nvml.nvmlSystemGetDriverVersion(buffer, ctypes.c_uint(96)) == 0
                nvml.nvmlShutdown()
                if ok and buffer.value:
                    return buffer.value.decode(errors="replace")
        except (OSError, AttributeError):
            pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    import subprocess

    try:
        done = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    return lines[0] if done.returncode == 0 and lines else None


def cuda_build_for(driver: str | None) -> str | None:
    """The CUDA build of torch this driver runs ('cu130'); the oldest one where the driver's version is unknown;
    None for a driver older than every build."""
    try:
        major = int(str(driver).split(".")[0])
    except ValueError:
        return CUDA_BUILDS[-1][0]
    return next((build for build, oldest in CUDA_BUILDS if major >= oldest), None)


def labelled() -> bool:
    """torch's index labels its builds (+cpu, +cu130) for Linux on x86_64; elsewhere (macOS, aarch64) pip's plain
    wheel is the one to take."""
    import platform

    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def pip_args(gpu: bool, driver: str | None, version: str = PINNED) -> tuple[list[str], str]:
    """What `pip install` takes to install torch `version` here, and why: its CUDA build where an NVIDIA driver is
    (`gpu`), the CPU build where none is (no CUDA libraries: a tenth of the download)."""
    if not labelled():
        return [f"torch=={version}"], "the platform's own build (torch's index labels builds on Linux x86_64 only)"
    if gpu:
        build = cuda_build_for(driver)
        if build is not None:
            return ([f"torch=={version}+{build}", "--extra-index-url", INDEX.format(build)],
                    f"its CUDA build ({build}): an NVIDIA driver is installed (version {driver or 'unknown'})")
        why = (f"the NVIDIA driver {driver} is older than any CUDA build of torch {version} runs on "
               f"({OLDEST_DRIVER} or newer): the CPU build until the driver is updated")
        return [f"torch=={version}+cpu", "--extra-index-url", INDEX.format("cpu")], why
    return ([f"torch=={version}+cpu", "--extra-index-url", INDEX.format("cpu")],
            "its CPU build: no NVIDIA driver here (libnvidia-ml does not load, no nvidia-smi)")


def cuda_install_command(python: str, build: TorchBuild | None, driver: str | None) -> str:
    """The command that puts torch's CUDA build in place of `build` (same version), for `python`; or, for a driver
    too old for any, what to update."""
    version = build.public if build is not None else PINNED
    cuda = cuda_build_for(driver)
    if cuda is None:
        return (f"update the NVIDIA driver ({driver} here; torch's CUDA builds need {OLDEST_DRIVER} or newer), then "
                f"{python} -m pip install 'torch=={version}+{CUDA_BUILDS[-1][0]}' --extra-index-url "
                f"{INDEX.format(CUDA_BUILDS[-1][0])}")
    other = "" if version == PINNED else " (pytorch.org/get-started/previous-versions lists the builds of each version)"
    return f"{python} -m pip install 'torch=={version}+{cuda}' --extra-index-url {INDEX.format(cuda)}{other}"


def cpu_torch_refusal(build: TorchBuild, python: str, driver: str | None) -> tuple[str, str]:
    """(message, fix) of a CUDA run on a torch that has no CUDA: said by validate, plan and the rank alike."""
    fix = f"install its CUDA build: {cuda_install_command(python, build, driver)}; or set hardware.accelerator = \"cpu\""
    return f"asks for CUDA, but {python} has {build.words()}: its ranks would train on the CPU", fix


def main(argv: Sequence[str]) -> int:
    """`pip-args`: one pip argument a line, for bootstrap.sh (why on stderr); `check`: a line on stderr and exit 1
    where an NVIDIA driver is installed but the torch installed has no CUDA."""
    what = argv[0] if argv else ""
    if what == "pip-args":
        args, why = pip_args(driver_present(), driver_version() if driver_present() else None)
        print("\n".join(args))
        print(f"torch {PINNED}: {why}", file=sys.stderr)
        return 0
    if what == "check":
        build = read_torch_build()
        if build is None or build.uses_gpu or not driver_present():
            return 0
        print(f"tuitrain: an NVIDIA driver is installed, but {sys.executable} has {build.words()}: CUDA runs are "
              f"refused until its CUDA build is in place: {cuda_install_command(sys.executable, build, driver_version())}",
              file=sys.stderr)
        return 1
    print("usage: python -m tuitrain.torch_build pip-args|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
