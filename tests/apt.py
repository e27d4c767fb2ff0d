"""Debian packages a test needs, installed with apt-get where missing (root only; the callers check and say why not)."""

from __future__ import annotations

import os
import subprocess


def apt_install(packages: list[str], timeout: int) -> str:
    """apt-get update, then install `packages` without recommends, each waiting up to 120 s for dpkg's lock.
    Returns apt-get's last line (what to say if the packages are still missing after it)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=120"]
    last = None
    for argv in (["apt-get", "update", "-q", *lock],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", *lock, *packages]):
        last = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, timeout=timeout)
    tail = (last.stderr or last.stdout).strip().splitlines()[-1:] if last else []
    return tail[0] if tail else "apt-get failed"
