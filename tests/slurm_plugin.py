"""pytest fixture `slurm_cluster`: a real one-node Slurm cluster on this machine, made once per test session (see
slurm_cluster.py); each test that uses it gets the node idle and leaves it so.

Tests that use it skip, with one line of reason, where Slurm cannot be installed or started (not root, no apt-get)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from slurm_cluster import Cluster, ensure_slurm, make_cluster


@pytest.fixture(scope="session")
def slurm_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = ensure_slurm()
    if reason:
        pytest.skip(reason)
    try:
        cluster = make_cluster(tmp_path_factory.mktemp("slurm", numbered=True))
    except RuntimeError as exc:
        pytest.skip(f"a test Slurm cluster could not be started: {str(exc).splitlines()[0]}")
    saved = os.environ.get("SLURM_CONF")
    os.environ.update(cluster.env())  # the CLI's subprocesses find the cluster through it
    try:
        yield cluster
    finally:
        cluster.close()
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved


@pytest.fixture
def slurm_cluster(slurm_session: Cluster) -> Iterator[Cluster]:
    slurm_session.wait_idle()
    yield slurm_session
    slurm_session.cancel_all()
    slurm_session.wait_idle()
