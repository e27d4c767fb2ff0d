"""Whose GPU process is it: a rank record names a process of this machine only when its host is this one and, where
it kept its start time, that very process lives here (machines cloned from one image share hostnames)."""

from __future__ import annotations

import os
import socket

import psutil

from tuitrain.runs.view.owners import rank_is_here


def test_a_rank_of_another_machine_with_this_hostname_is_not_taken_for_a_process_here() -> None:
    here = socket.gethostname()
    me = psutil.Process()
    mine = {"host": here, "pid": os.getpid(), "started": me.create_time()}
    assert rank_is_here(mine, here)
    # the same hostname and a pid that lives here, but another start time: machine 1's rank, not this process
    assert not rank_is_here({**mine, "started": me.create_time() - 3600}, here)
    assert not rank_is_here({**mine, "host": "elsewhere"}, here)
    assert rank_is_here({"pid": os.getpid()}, here)  # an older record, without host or start time: a local run's
