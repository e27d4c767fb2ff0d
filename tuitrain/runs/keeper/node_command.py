"""How home starts a machine's node agent over ssh: the one command line, for the run, its last words and its
stacks alike (`ps` on that machine shows the node folder)."""

from __future__ import annotations

from typing import Any, Mapping

AGENT_MODULE = "tuitrain.runs.keeper.node_agent"


def agent_argv(machine: Mapping[str, Any]) -> list[str]:
    return [str(machine["python"]), "-m", AGENT_MODULE, str(machine["node_dir"])]
