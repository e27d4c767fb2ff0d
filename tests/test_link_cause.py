"""A dropped ssh link, seen from home (issue 27, misleading item 4), on the real namespace hosts (tests/hosts.py).

Killing the ssh client that carries machine b's agent ends the run, as it must; its cause names the link (the
agent was neither killed nor crashed: it ended its ranks because its link home closed), and the agent's last words,
written on machine b after the link was gone, are brought home into logs/machine-1.log."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import psutil

from conftest import wait_for
from test_multinode import failed_everywhere, started_long_run


def ssh_client_of(folder: Path, machine: int) -> psutil.Process:
    """The home ssh client carrying machine `machine`'s agent (its remote command names the node folder)."""
    for proc in psutil.process_iter(["cmdline"]):
        line = proc.info["cmdline"] or []
        if line and os.path.basename(line[0]) == "ssh" and str(folder) in " ".join(line) \
                and f"machine-{machine}" in " ".join(line) and "tuitrain.runs.keeper.node_agent" in " ".join(line):
            return proc
    raise AssertionError(f"no ssh client of machine {machine} under {folder}")


def test_a_killed_ssh_client_names_the_link_and_brings_the_agents_last_words_home(hosts: Any, tmp_path: Path,
                                                                                  runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    ssh_client_of(tmp_path, 1).send_signal(signal.SIGKILL)
    rec = failed_everywhere(run, tmp_path, "the ssh link to node2 closed (ssh exited -9")
    assert "its tuitrain agent" not in rec["error"], rec["error"]
    log = run / "logs" / "machine-1.log"
    wait_for(lambda: "its ssh link home closed" in log.read_text(errors="replace"), 60,
             "the agent's last words in the home machine-1.log")
    text = log.read_text(errors="replace")
    assert text.count("its ssh link home closed: ending this machine's ranks") == 1, text[-2000:]
    assert "this machine's ranks were ended: its ssh link home closed" in text.splitlines()[-1], text[-2000:]
    home = (run / "logs" / "launcher.log").read_text()
    assert "machine 1 (node2): its agent's last words" in home and "came home over a new ssh" in home
