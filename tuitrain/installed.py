"""What is installed, without importing it (nor importlib.metadata, ~20 ms of every `tuitrain plan`)."""

from __future__ import annotations

import os
import re
import sys


def distribution_version(name: str) -> str | None:
    """The installed version of distribution `name` (e.g. "transformers"): the version in the name
    of the first `name-*.dist-info` folder on sys.path (where an import would come from), else
    importlib.metadata's answer, else None."""
    wanted = _normal(name)
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            if folder.endswith(".dist-info"):
                dist, _, version = folder[: -len(".dist-info")].rpartition("-")
                if version and _normal(dist) == wanted:
                    return version
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _normal(name: str) -> str:
    """A distribution name as dist-info folders spell it (PEP 503 normalised, '_' for runs of -_.)."""
    return re.sub(r"[-_.]+", "_", name).lower()
