"""Apple MPS, without importing torch here.

By default a platform check (macOS on Apple silicon), which costs nothing and keeps
``tuitrain plan`` fast. On request (`mps_available(probe=True)`), a child interpreter asks torch
(``torch.backends.mps.is_available()``); the answer is cached in-process and on disk per torch
version and interpreter under ``$XDG_CACHE_HOME/tuitrain/`` (default ``~/.cache/tuitrain/``).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

PROBE_CODE = "import torch; print(bool(torch.backends.mps.is_available()))"


def mps_by_platform(system: str, machine: str) -> bool:
    """Whether this kind of machine can have MPS at all: macOS on arm64 (Apple silicon)."""
    return system == "Darwin" and machine == "arm64"


def _cache_file(python: str) -> Path | None:
    import hashlib

    from tuitrain.installed import distribution_version

    torch_version = distribution_version("torch")
    if torch_version is None:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    tag = hashlib.sha1(python.encode()).hexdigest()[:10]
    return Path(base) / "tuitrain" / f"mps-{torch_version}-{tag}.json"


def run_probe(python: str, timeout: float = 60.0) -> bool:
    """Ask torch in a child interpreter; False when torch is missing or the probe fails."""
    try:
        done = subprocess.run([python, "-c", PROBE_CODE], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == ["True"]


@functools.cache
def probe_mps(python: str | None = None) -> bool:
    """torch.backends.mps.is_available(), asked in a child interpreter, cached (see module doc)."""
    python = python or sys.executable
    cache = _cache_file(python)
    if cache is not None:
        try:
            return bool(json.loads(cache.read_text())["mps"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    answer = run_probe(python)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"mps": answer, "python": python}))
        except OSError:
            pass  # a read-only cache only costs the next process one probe
    return answer


def mps_available(probe: bool = False) -> bool:
    """MPS on this machine: the platform check, confirmed by torch in a child when `probe`."""
    system = "Darwin" if sys.platform == "darwin" else sys.platform
    machine = os.uname().machine if hasattr(os, "uname") else ""
    if not mps_by_platform(system, machine):
        return False
    return probe_mps() if probe else True
