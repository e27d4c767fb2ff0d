"""`tuitrain doctor PROFILE` (issue 11, item 4) against real hosts: network namespaces with their own sshd
(tests/hosts.py). Each failure is one line naming the machine, the check and the fix; nothing hangs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from conftest import cli
from machine_profiles import free_port, write_profile
from tuitrain.remote.doctor import (
    Check,
    MachineSpec,
    Report,
    check_machine,
    local_versions,
)


def doctor_cli(path: Path, hosts: Any, runs_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli("doctor", str(path), "--ssh-config", str(hosts.ssh_config), "--timeout", "8", *extra,
               runs_dir=runs_dir, timeout=60)


def lines_of(result: subprocess.CompletedProcess[str], host: str, check: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{host} (rank") and f"  {check} " in line]


def test_check_lines_read_as_a_table() -> None:
    report = Report([Check("node1", 0, "ssh", True, "reached"), Check("node10", 1, "port", False, "taken", "pick another")])
    assert report.lines() == ["node1 (rank 0)   ssh        ok    reached",
                              "node10 (rank 1)  port       FAIL  taken — pick another"]
    assert not report.ok


def test_all_green_on_two_machines(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port())
    started = time.monotonic()
    result = doctor_cli(path, hosts, runs_dir)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout
    for host in ("node1", "node2"):
        for check in ("ssh", "python", "packages", "folder", "paths", "interface"):
            assert [line for line in lines_of(result, host, check) if "  ok  " in line], (host, check, result.stdout)
    assert lines_of(result, "node1", "port") and lines_of(result, "node1", "address")
    assert not lines_of(result, "node2", "port")  # only the main machine hosts the rendezvous
    assert f"net0 carries {hosts['node2'].address}" in lines_of(result, "node2", "interface")[0]
    assert "2 machine(s) checked" in result.stdout and "all checks passed" in result.stdout
    assert elapsed < 15  # issue 11's figure (< 3 s) is measured in benchmarks/, on a quiet machine

    as_json = json.loads(doctor_cli(path, hosts, runs_dir, "--json").stdout)
    assert as_json["ok"] is True and {c["host"] for c in as_json["checks"]} == {"node1", "node2"}


def test_a_wrong_interface_name(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port())
    result = doctor_cli(path, hosts, runs_dir, "--set", "distributed.network_interface=eth9")
    assert result.returncode == 1
    for host in ("node1", "node2"):
        (line,) = lines_of(result, host, "interface")
        assert "FAIL  no interface eth9 there (it has: lo, net0)" in line
        assert "set network_interface to the one that reaches the other machines" in line


def test_a_data_file_missing_on_one_machine(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    """node2's environment sees an empty data folder (its Python runs in a mount namespace with a tmpfs there):
    the namespaces share one file system otherwise."""
    path = write_profile(tmp_path, hosts, free_port())
    wrapper = tmp_path / "python-without-data"
    wrapper.write_text("#!/bin/sh\n"
                       f"exec unshare --mount sh -c 'mount -t tmpfs none \"$0\" && exec \"$@\"' "
                       f"{tmp_path / 'data'} {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    probe = subprocess.run([str(wrapper), "-c", "import os,sys; print(os.listdir(sys.argv[1]))", str(tmp_path / "data")],
                           capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot hide a folder in a mount namespace here: {probe.stderr.strip()[-200:]}")
    profile = tomllib.loads(path.read_text())
    profile["distributed"]["machines"][1]["python"] = str(wrapper)
    path.write_text(tomli_w.dumps(profile))
    result = doctor_cli(path, hosts, runs_dir)
    assert result.returncode == 1
    assert [line for line in lines_of(result, "node1", "paths") if "  ok  " in line]
    missing = lines_of(result, "node2", "paths")
    assert len(missing) == 2, result.stdout
    assert f"FAIL  data.train_file: no {tmp_path / 'data' / 'train.csv'} there — copy it to node2" in missing[0]


def test_a_python_that_is_not_there(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port())
    profile = tomllib.loads(path.read_text())
    profile["distributed"]["machines"][1]["python"] = "/nonexistent/env/bin/python"
    path.write_text(tomli_w.dumps(profile))
    result = doctor_cli(path, hosts, runs_dir)
    assert result.returncode == 1
    (line,) = lines_of(result, "node2", "python")
    assert "FAIL  /nonexistent/env/bin/python not found there, so tuitrain is not installed there" in line
    assert 'set python = "<its bin/python>" for node2' in line
    assert "  ok  " in lines_of(result, "node2", "ssh")[0]


def test_other_versions_there(hosts: Any) -> None:
    """A machine whose environment has another torch: compared against what this machine expects."""
    expected = {**local_versions(), "torch": "0.0.1"}
    checks = check_machine(MachineSpec("node2", 1, sys.executable), expected, _options(hosts), timeout=15)
    (packages,) = [c for c in checks if c.name == "packages"]
    assert packages.ok is False and "torch" in packages.detail and "0.0.1 here" in packages.detail
    assert "install the same versions" in (packages.fix or "")


def test_a_taken_port(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    port = free_port()
    listener = subprocess.Popen(["ip", "netns", "exec", hosts["node1"].netns, sys.executable, "-c",
                                 ("import socket,sys,time; s=socket.socket(); s.bind(('',int(sys.argv[1]))); s.listen();"
                                  " print('up', flush=True); time.sleep(60)"), str(port)],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "up"
        result = doctor_cli(write_profile(tmp_path, hosts, port), hosts, runs_dir)
    finally:
        listener.kill()
        listener.wait(timeout=10)
    assert result.returncode == 1
    (line,) = lines_of(result, "node1", "port")
    assert f"FAIL  port {port} is already in use there" in line and "pick another main_process_port" in line


def test_an_unreachable_host(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port(),
                         machines=[{"host": "node1"}, {"host": "node2"}, {"host": "node9"}])
    hosts.link_down("node2")
    try:
        started = time.monotonic()
        result = doctor_cli(path, hosts, runs_dir)
        elapsed = time.monotonic() - started
    finally:
        hosts.link_up("node2")
    assert result.returncode == 1
    (node2,) = lines_of(result, "node2", "ssh")
    assert "FAIL" in node2 and ("unreachable" in node2 or "did not finish" in node2), node2
    (node9,) = lines_of(result, "node9", "ssh")
    assert "FAIL  host name not resolved" in node9
    assert not lines_of(result, "node2", "python")  # nothing more is said of a machine not reached
    assert [line for line in lines_of(result, "node1", "packages") if "  ok  " in line]
    assert elapsed < 30  # each machine has its own timeout, and they run in parallel
    assert "Traceback" not in result.stdout + result.stderr


def _options(hosts: Any):
    from tuitrain.remote.ssh import SshOptions

    return SshOptions(config=hosts.ssh_config, connect_timeout=5)



def test_gpus_named_per_machine_must_exist_there(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    """node1 answers NVML from a recorded four-GPU table (its `python` is a wrapper that points tuitrain at it, as
    a conda or module wrapper would set up an environment); node2 has no NVIDIA driver at all."""
    table = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
    wrapper = tmp_path / "gpu-python"
    wrapper.write_text(f'#!/bin/sh\nTUITRAIN_NVML_TABLE={table} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    path = write_profile(tmp_path, hosts, free_port(), machines=[
        {"host": "node1", "python": str(wrapper), "gpus": [0, 7]},
        {"host": "node2", "gpus": [0, 1]}])
    profile = tomllib.loads(path.read_text())
    profile["hardware"] = {"accelerator": "auto"}
    profile["distributed"]["num_processes"] = 2
    path.write_text(tomli_w.dumps(profile))
    result = doctor_cli(path, hosts, runs_dir)
    assert result.returncode == 1
    (node1,) = lines_of(result, "node1", "gpus")
    assert "FAIL  GPU 7 not there (it has 4: 0, 1, 2, 3; numbers as nvidia-smi shows them)" in node1
    assert "list GPUs it has in gpus = [...] for node1" in node1
    (node2,) = lines_of(result, "node2", "gpus")
    assert "FAIL  no NVIDIA GPU can be read there" in node2 and "set gpus = [] for node2" in node2

    profile["distributed"]["machines"][0]["gpus"] = [2, 3]
    path.write_text(tomli_w.dumps(profile))
    (node1,) = lines_of(doctor_cli(path, hosts, runs_dir), "node1", "gpus")
    assert "  ok    4 GPU(s) there; its ranks use 2, 3" in node1


def test_cpu_ranks_need_no_gpu_check(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    result = doctor_cli(write_profile(tmp_path, hosts, free_port()), hosts, runs_dir)
    assert not lines_of(result, "node1", "gpus") and not lines_of(result, "node2", "gpus")
