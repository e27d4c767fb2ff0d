"""Apple MPS detection without importing torch in the CLI: a platform check, or a cached probe."""

from __future__ import annotations

import json
import sys

import pytest

from tuitrain.hardware import mps


def test_platform_check():
    assert mps.mps_by_platform("Darwin", "arm64")
    assert not mps.mps_by_platform("Darwin", "x86_64")
    assert not mps.mps_by_platform("linux", "aarch64")


def test_this_linux_machine_has_no_mps_and_the_check_starts_no_process():
    mps.probe_mps.cache_clear()
    assert mps.mps_available() is False
    assert mps.mps_available(probe=True) is False
    info = mps.probe_mps.cache_info()
    assert (info.hits, info.misses) == (0, 0)  # the probe was never asked: not a Mac


def test_the_probe_asks_torch_in_a_child_process():
    # the real probe: torch here is the CPU build on Linux, so MPS is not available
    assert mps.run_probe(sys.executable) is False
    assert mps.run_probe("/nonexistent/python") is False


def test_probe_answers_are_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = mps._cache_file(sys.executable)
    if cache is None:
        pytest.skip("torch is not installed here")
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"mps": True}))  # as a Mac's earlier probe would have left it
    mps.probe_mps.cache_clear()
    try:
        assert mps.probe_mps(sys.executable) is True  # read, not probed again
    finally:
        mps.probe_mps.cache_clear()
