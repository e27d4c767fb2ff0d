"""One `tuitrain run` across two machines (issue 11, items 2 and 3), on real hosts: network namespaces with their
own sshd (tests/hosts.py), gloo ranks on the CPU meeting across them. What a hostile ordinary day does to such a
run: a rank killed on the other machine, its agent killed, its network cable pulled, its sshd gone, a machine
without the right Python. The run must end everywhere, say which host, and leave no process on any host."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import psutil
import pytest

from conftest import FAST, FINAL, cli, only_run, wait_for
from machine_profiles import free_port, write_profile
from tuitrain.hardware.host import physical_cores
from tuitrain.runs.keeper.manifest import scan_manifests

LONG = ["--set", "training.max_steps=400", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_steps=1000"]


def run_cli(hosts: Any, runs_dir: Path, *args: str, timeout: float = 300) -> Any:
    return cli(*args, "--ssh-config", str(hosts.ssh_config), runs_dir=runs_dir, timeout=timeout)


def record(run: Path) -> dict[str, Any]:
    return json.loads((run / "run.json").read_text())


def events(run: Path) -> list[dict[str, Any]]:
    path = run / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def losses(run: Path) -> list[float]:
    return [e["loss"] for e in events(run) if e.get("event") == "log" and "loss" in e]


def leftovers(folder: Path) -> list[str]:
    """Processes of this test on any host (the hosts share this machine's process table; every process of a run
    names its folder on its command line: agents, launchers, ranks, the ssh clients)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            line = " ".join(proc.info["cmdline"] or ())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(folder) in line and proc.pid != os.getpid():
            found.append(f"{proc.pid}: {line[:160]}")
    return found


def wait_final(run: Path, timeout: float = 120) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        rec = record(run)
        return rec if rec["status"] in FINAL else None
    return wait_for(ended, timeout, "the run's end")


def rank_pid(run: Path, rank: int) -> int:
    """The pid of a global rank, from its record as mirrored home (the rank runs on its machine)."""
    def read() -> int | None:
        try:
            return int(json.loads((run / "ranks" / f"rank-{rank}.json").read_text())["pid"])
        except (OSError, ValueError, KeyError):
            return None
    return wait_for(read, 90, f"rank {rank}'s record at home")


def failed_everywhere(run: Path, folder: Path, error_start: str, settle: float = 30) -> dict[str, Any]:
    """The run ended `failed`, its error starting with `error_start` (the host first), and no process of it is left
    on any host within `settle` seconds."""
    rec = wait_final(run, 60)
    assert rec["status"] == "failed", rec
    assert rec["error"].startswith(error_start), rec["error"]
    wait_for(lambda: not leftovers(folder), settle, "no process left on either host")
    return rec


def started_long_run(hosts: Any, tmp_path: Path, runs_dir: Path) -> Path:
    """A long 2-machine run, detached, once it has logged a step."""
    path = write_profile(tmp_path, hosts, free_port())
    result = run_cli(hosts, runs_dir, "run", str(path), "--detach", "--no-doctor", *LONG)
    assert result.returncode == 0, result.stdout + result.stderr
    run = only_run(runs_dir)
    wait_for(lambda: losses(run), 120, "a first logged step")
    return run


def nvml_wrapper(folder: Path, table: str) -> str:
    """A `python` for a machine that answers NVML from a recorded device table (the hosts have no driver)."""
    wrapper = folder / f"python-{table}"
    path = Path(__file__).parent / "fixtures" / "nvml" / f"{table}.json"
    wrapper.write_text(f'#!/bin/sh\nTUITRAIN_NVML_TABLE={path} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_two_machines_train_as_one_and_every_log_comes_home(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    """The main machine, `multi`, also has net1, an address that reaches no one: with network_interface = "net0" the
    ranks meet on the one named."""
    if "multi" not in hosts:
        hosts.add("multi")
        hosts.add_interface("multi", "net1")
    path = write_profile(tmp_path, hosts, free_port(), main_process_ip=hosts["multi"].address,
                         machines=[{"host": "multi", "python": nvml_wrapper(tmp_path, "four_gpu_mixed")},
                                   {"host": "node2"}])
    doctor = cli("doctor", str(path), "--ssh-config", str(hosts.ssh_config), runs_dir=runs_dir, timeout=60)
    assert f"net0 carries {hosts['multi'].address}" in doctor.stdout, doctor.stdout
    result = run_cli(hosts, runs_dir, "run", str(path), *FAST)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checking the machines first" in result.stderr  # the doctor ran before anything started
    run = only_run(runs_dir)
    rec = record(run)
    assert rec["status"] == "finished", rec
    assert rec["num_machines"] == 2 and rec["num_processes"] == 2
    assert all(m["env"]["GLOO_SOCKET_IFNAME"] == "net0" for m in rec["machines"]), rec["machines"]
    ranks = {r: json.loads((run / "ranks" / f"rank-{r}.json").read_text()) for r in (0, 1)}
    assert {r: info["host"] for r, info in ranks.items()} == {0: "multi", 1: "node2"}
    assert all(info["exit_code"] == 0 for info in ranks.values())
    for rank in (0, 1):  # each agent shares its machine's cores among its ranks (here: all of them for one rank)
        assert f"threads {physical_cores()}\n" in (run / "logs" / f"rank-{rank}.log").read_text()
    for machine, host in enumerate(("multi", "node2")):
        text = (run / "logs" / f"machine-{machine}.log").read_text()
        assert "run finished" in text, (host, text[-500:])
    assert [e for e in events(run) if e.get("event") == "train_end"]
    assert sorted(p.name for p in (run / "output").glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-8"]
    assert (run / "output" / "checkpoint-8" / "tuitrain.json").exists()  # sealed after every rank wrote its part
    # each machine sampled its GPUs and host there and sent them home: multi four (recorded), node2 no driver
    samples = {m: json.loads((run / "machines" / f"machine-{m}-gpus.json").read_text()) for m in (0, 1)}
    assert len(samples[0]["gpus"]) == 4 and samples[0]["nvml"]["available"] is True
    assert samples[1]["gpus"] == [] and samples[1]["nvml"]["available"] is False
    assert all(sample["host"]["cpu_count"] == os.cpu_count() for sample in samples.values())
    # what each machine ran on came home (issue 24): a manifest per machine, written there by its agent
    manifests = scan_manifests(run)[0]
    assert {m: facts["host"]["name"] for m, facts in manifests.items()} == {0: "multi", 1: "node2"}, manifests
    assert {facts["packages"].get("torch") for facts in manifests.values()} == {package_version("torch")}
    status = cli("status", run.name, runs_dir=runs_dir)
    assert status.returncode == 0 and "finished" in status.stdout, status.stdout + status.stderr
    assert "machine 1  node2   1 process(es)" in status.stdout and "launcher node2 0" in status.stdout
    merged = cli("logs", run.name, runs_dir=runs_dir)  # both machines' ranks, read at home like a local run's
    assert merged.returncode == 0
    assert {line.split("]")[0] for line in merged.stdout.splitlines() if line.startswith("[rank")} >= {"[rank 0",
                                                                                                     "[rank 1"}

    # the same global batch on one machine: the same losses (gloo across hosts or not, the same sums)
    single = tmp_path / "single.toml"
    text = path.read_text()
    single.write_text(text[: text.index("[distributed]")] + '[distributed]\nstrategy = "ddp"\nnum_processes = 2\n')
    local_runs = tmp_path / "local-runs"
    local_runs.mkdir()
    alone = cli("run", str(single), *FAST, runs_dir=local_runs)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    one, two = losses(only_run(local_runs)), losses(run)
    assert len(one) == len(two) == 8
    assert two == pytest.approx(one, rel=1e-4, abs=1e-5)
    # the local run's end is recorded with its ranks; its launcher may still be exiting (reaped just after)
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on any host")


def test_a_rank_killed_on_the_other_machine_ends_the_run_on_both(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    os.kill(rank_pid(run, 1), signal.SIGKILL)
    rec = wait_final(run, 60)
    assert rec["status"] == "failed", rec
    assert rec["error"].startswith("node2: ") and "SIGKILL" in rec["error"], rec["error"]
    assert rec["failed_rank"] == 1
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on either host")


def test_an_agent_killed_ends_the_run_everywhere(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    agents = [p for p in psutil.process_iter(["cmdline"])
              if "tuitrain.runs.keeper.node_agent" in " ".join(p.info["cmdline"] or ()) and "machine-0" in
              " ".join(p.info["cmdline"] or ()) and str(tmp_path) in " ".join(p.info["cmdline"] or ())]
    agent = next(p for p in agents if "ssh" not in os.path.basename(p.info["cmdline"][0]))
    agent.kill()
    rec = wait_final(run, 60)
    assert rec["status"] == "failed", rec
    assert rec["error"].startswith("node1: its tuitrain agent"), rec["error"]
    assert "killed" in rec["error"] and "logs/machine-0.log" in rec["error"]
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on either host")


def test_a_machine_cut_off_the_network_ends_the_run_on_both(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    hosts.link_down("node2")
    try:
        # node2 heard nothing from home either: it ended its own ranks (no one could tell it to)
        failed_everywhere(run, tmp_path, "node2: no word from its agent", settle=40)
    finally:
        hosts.link_up("node2")


def test_a_machine_whose_sshd_dies_ends_the_run_on_both(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    for pid in hosts.pids("node2"):  # every sshd there: the listener and the session carrying the agent's channel
        try:
            if psutil.Process(pid).name() == "sshd":
                os.kill(pid, signal.SIGKILL)
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass
    try:
        failed_everywhere(run, tmp_path, "node2: the SSH connection dropped")
    finally:
        hosts.start_sshd("node2")


def test_stop_saves_on_both_and_resume_continues_across_machines(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    saved = cli("save", run.name, runs_dir=runs_dir)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    wait_for(lambda: [e for e in events(run) if e.get("event") == "save"], 60, "the save-now checkpoint")
    assert not (run / "control" / "save-now").exists()  # rank 0 acted on it; home's request is cleared
    stopped = cli("stop", run.name, runs_dir=runs_dir)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    rec = wait_final(run, 90)
    assert rec["status"] == "stopped", rec
    checkpoints = sorted((run / "output").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    assert len(checkpoints) >= 2 and all((c / "tuitrain.json").exists() for c in checkpoints)
    last = int(checkpoints[-1].name.split("-")[1])
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on either host")

    resumed = run_cli(hosts, runs_dir, "resume", run.name, "--detach", "--set", f"training.max_steps={last + 3}")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    child = runs_dir / resumed.stdout.strip()
    rec = wait_final(child, 120)
    assert rec["status"] == "finished", rec
    assert rec["parent"] == run.name and rec["num_machines"] == 2
    steps = [e["step"] for e in events(child) if e.get("event") == "log" and "loss" in e]
    assert steps and steps[0] == last + 1 and steps[-1] == last + 3
    assert {json.loads((child / "ranks" / f"rank-{r}.json").read_text())["host"] for r in (0, 1)} == {"node1", "node2"}
    # the parent's checkpoints are all still there
    assert all((c / "tuitrain.json").exists() for c in checkpoints)
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on either host")


def test_a_machine_without_that_python_fails_in_one_line_and_the_other_ends(hosts: Any, tmp_path: Path,
                                                                            runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port(),
                         machines=[{"host": "node1"}, {"host": "node2", "python": "/opt/nowhere/bin/python3"}])
    checked = run_cli(hosts, runs_dir, "run", str(path), *FAST)
    assert checked.returncode != 0
    assert "nothing was started" in checked.stderr and "Traceback" not in checked.stderr
    assert not [p for p in runs_dir.iterdir()]  # the doctor stopped it before a run directory was made

    started = time.monotonic()
    result = run_cli(hosts, runs_dir, "run", str(path), "--no-doctor", *FAST)
    assert result.returncode != 0
    rec = record(only_run(runs_dir))
    assert rec["status"] == "failed"
    assert rec["error"].startswith("node2: `/opt/nowhere/bin/python3` not found there"), rec["error"]
    assert time.monotonic() - started < 90  # ended, not waiting for node2 (a bound against a hang, not a timing)
    assert "Traceback" not in result.stdout + result.stderr
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on node1")


def test_two_ranks_on_each_machine_and_stop_now_ends_all_four(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    path = write_profile(tmp_path, hosts, free_port(), num_processes=2)
    result = run_cli(hosts, runs_dir, "run", str(path), "--detach", "--no-doctor", *LONG)
    assert result.returncode == 0, result.stdout + result.stderr
    run = only_run(runs_dir)
    wait_for(lambda: losses(run), 180, "a first logged step")
    hosts_of = {r: json.loads((run / "ranks" / f"rank-{r}.json").read_text())["host"] for r in range(4)}
    assert hosts_of == {0: "node1", 1: "node1", 2: "node2", 3: "node2"}
    threads = f"threads {max(1, physical_cores() // 2)}\n"  # each agent shares its machine's cores by its 2 ranks
    for rank in range(4):
        wait_for(lambda rank=rank: threads in (run / "logs" / f"rank-{rank}.log").read_text(), 30, f"rank {rank}'s log")
    now = cli("stop", "--now", run.name, runs_dir=runs_dir)
    assert now.returncode == 0, now.stdout + now.stderr
    rec = wait_final(run, 60)
    assert rec["status"] == "killed", rec
    assert "every machine" in rec["error"]
    wait_for(lambda: not leftovers(tmp_path), 30, "no process left on either host")


def test_gpus_of_every_machine_are_sampled_there(hosts: Any, tmp_path: Path, runs_dir: Path) -> None:
    """No NVIDIA driver on these hosts: each says so itself (its own tuitrain, over ssh); a machine that cannot be
    reached says why in one line, and the others still answer."""
    path = write_profile(tmp_path, hosts, free_port(),
                         machines=[{"host": "node1"}, {"host": "node2"}, {"host": "node9.invalid"}])
    result = run_cli(hosts, runs_dir, "gpus", "--profile", str(path), timeout=90)
    assert result.returncode == 1, result.stdout + result.stderr
    sections = result.stdout.split("== machine ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["0: node1", "1: node2", "2: node9.invalid"]
    for section in sections[:2]:
        assert "no NVIDIA GPU" in section and f"host: {os.cpu_count()} CPU core(s)" in section, section
    assert sections[2].splitlines()[1].startswith("node9.invalid: host name not resolved")
    as_json = json.loads(run_cli(hosts, runs_dir, "gpus", "--profile", str(path), "--json", timeout=90).stdout)
    assert as_json["node1"]["nvml"]["available"] is False and "error" in as_json["node9.invalid"]
    assert "Traceback" not in result.stderr


def test_the_home_supervisor_killed_takes_every_machine_down_and_the_run_reads_lost(hosts: Any, tmp_path: Path,
                                                                                    runs_dir: Path) -> None:
    run = started_long_run(hosts, tmp_path, runs_dir)
    os.kill(record(run)["processes"]["supervisor"]["pid"], signal.SIGKILL)
    # its ssh links close with it: each agent, hearing home no more, ends its machine's ranks
    wait_for(lambda: not leftovers(tmp_path), 40, "no process left on any host")
    status = cli("status", run.name, runs_dir=runs_dir)
    assert "lost" in status.stdout, status.stdout
    assert record(run)["status"] == "lost"  # the first viewer recorded it
