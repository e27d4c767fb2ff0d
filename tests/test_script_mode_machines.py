"""Script mode on two machines (the namespace hosts of tests/hosts.py): the MRPC Trainer script, unchanged,
trains as one world across node1 and node2; every rank's log and the events come home, and the output
folder rank 0's Trainer names reaches the home run.json through its mirrored rank record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import cli, events, only_run, record
from machine_profiles import free_port
from test_script_mode_runs import SCRIPTS, data_args, toml_list


def test_a_trainer_script_across_two_machines(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    (tmp_path / "mrpc_trainer.py").write_text((SCRIPTS / "mrpc_trainer.py").read_text())
    args = [*data_args(), "--output_dir", str(tmp_path / "out"), "--max_steps", "6", "--save_steps", "3"]
    profile = tmp_path / "two.toml"
    profile.write_text(
        f'[script]\npath = "mrpc_trainer.py"\nargs = {toml_list(args)}\n\n[hardware]\naccelerator = "cpu"\n\n'
        f'[distributed]\nstrategy = "ddp"\nnum_processes = 1\nmain_process_ip = "{hosts["node1"].address}"\n'
        f'main_process_port = {free_port()}\nnetwork_interface = "{hosts["node1"].ifname}"\n'
        '[[distributed.machines]]\nhost = "node1"\n[[distributed.machines]]\nhost = "node2"\n')
    result = cli("run", str(profile), "--no-doctor", "--ssh-config", str(hosts.ssh_config), runs_dir=runs_dir, timeout=300)
    run = only_run(runs_dir)
    rec = record(run)
    assert result.returncode == 0 and rec["status"] == "finished", result.stdout + result.stderr
    assert rec["output_dir"] == str(tmp_path / "out")  # named by rank 0's Trainer on node1, mirrored home
    assert sorted(e["step"] for e in events(run) if e["event"] == "log" and "loss" in e) == [1, 2, 3, 4, 5, 6]
    for rank in (0, 1):
        assert (run / "logs" / f"rank-{rank}.log").read_text().startswith(f"[tuitrain] rank {rank}/2 pid ")
    listing = json.loads(cli("checkpoints", run.name, "--json", runs_dir=runs_dir).stdout)
    assert [(c["step"], c["complete"], c["world_size"]) for c in listing] == [(3, True, 2), (6, True, 2)]
