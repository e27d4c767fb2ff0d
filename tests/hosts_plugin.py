"""pytest fixture `hosts`: real namespace hosts with their own sshd, made once per test session (see hosts.py).

Tests that use it skip, with one line of reason, where namespaces cannot be made (not root, no `ip netns`)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hosts import Hosts, cannot_make_hosts, ensure_tools, make_hosts


@pytest.fixture(scope="session")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    reason = ensure_tools() or cannot_make_hosts()
    if reason:
        pytest.skip(reason)
    started = time.monotonic()
    made = make_hosts(tmp_path_factory.mktemp("hosts", numbered=True))
    made.setup_seconds = time.monotonic() - started
    try:
        yield made
    finally:
        made.close()
