"""pytest fixture `slurm_cluster`: a real one-node Slurm cluster on this machine, made once per test session (see
slurm_cluster.py); each test that uses it gets the node idle and leaves it so.

Tests that use it skip, with one line of reason, where Slurm cannot be installed or started (not root, no apt-get)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from hosts import Hosts
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


@pytest.fixture(scope="session")
def slurm_two_nodes_session(slurm_session: Cluster, hosts: Hosts) -> Iterator[Cluster]:
    """The cluster with two more nodes, node1 and node2, on the namespace hosts (tests/hosts.py): their own
    addresses and hostnames, this machine's file system as the shared one (partition slurm_cluster.TWO_NODES)."""
    try:
        slurm_session.add_hosts(hosts)
    except RuntimeError as exc:
        pytest.skip(f"Slurm nodes on the namespace hosts could not be started: {str(exc).splitlines()[0]}")
    try:
        yield slurm_session
    finally:
        slurm_session.remove_hosts()


@pytest.fixture
def slurm_two_nodes(slurm_two_nodes_session: Cluster) -> Iterator[Cluster]:
    slurm_two_nodes_session.wait_idle()
    yield slurm_two_nodes_session
    slurm_two_nodes_session.cancel_all()
    slurm_two_nodes_session.wait_idle()
