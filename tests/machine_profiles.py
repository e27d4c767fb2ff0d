"""Multi-machine profiles for tests on the namespace hosts (tests/hosts.py): the demo on CPU ranks."""

from __future__ import annotations

import copy
import socket
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from tuitrain.profile import builtin_profile_path

DEMO: dict[str, Any] = tomllib.loads(builtin_profile_path().read_text(encoding="utf-8"))
ROWS = "text,label\n" + "".join(f"sentence {i} {'good' if i % 2 else 'bad'},{i % 2}\n" for i in range(40))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def write_profile(folder: Path, hosts: Any, port: int, **distributed: Any) -> Path:
    """The demo on CPU ranks over node1 and node2 (net0 between them), reading its data from folder/data/."""
    data_dir = folder / "data"
    data_dir.mkdir(exist_ok=True)
    (data_dir / "train.csv").write_text(ROWS)
    (data_dir / "validation.csv").write_text(ROWS)
    profile = copy.deepcopy(DEMO)
    profile["data"] = {"train_file": "data/train.csv", "validation_file": "data/validation.csv", "max_length": 24}
    profile["distributed"] = {"strategy": "ddp", "num_processes": 1, "main_process_ip": hosts["node1"].address,
                              "main_process_port": port, "network_interface": hosts["node1"].ifname,
                              "machines": [{"host": "node1"}, {"host": "node2"}], **distributed}
    path = folder / "two.toml"
    path.write_text(tomli_w.dumps(profile))
    return path
