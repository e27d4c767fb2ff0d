"""Watching other workstations (issue 23): the CPU that watching 3 idle workstations costs, and Home's first frame
with 3 workstations in the settings against none.

    sudo .venv/bin/python benchmarks/workstations_watch.py [--seconds 60] [--repeat 5]

The workstations are the test suite's namespace hosts (tests/hosts.py: network namespaces, each with its own sshd;
root needed), each with the app tests' three fixed runs in its own runs folder; nothing changes there meanwhile.
Each box's tuitrain answers NVML from a recorded table (--nvml-table, default eight H100s: tests/fixtures/nvml), so
its GPU sampler has GPUs to sample as on a real workstation.

CPU: one `remote.runs_stream.RunsStream` per host, as Home starts them (with `on_gpus`: the box streams its GPUs
too, `workstations --stream --gpus`); once all three answered with runs and GPUs, the CPU time over --seconds of
(here) this process's stream threads and the three ssh clients, and (there) each box's stream and its sshd
session, as a share of one core. Goal: < 2 % here.

First frame: `python -m tuitrain` in an 80x24 pty (benchmarks/tui_pty.py), TUITRAIN_CONFIG naming the three hosts
or an empty file, taking turns; the moments the pty first shows Home ("Profiles"), this machine's runs (the running
run's step, 23/40), and, with workstations, all of their runs ("Runs (12)"). Medians.
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

from _common import QuietGate, machine_line
from supervisor_cpu import cpu_seconds
from tui_pty import PtyProgram

HOSTS = ("node1", "node2", "node3")
NVML_TABLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "nvml"
FIRST_RUN = "23/40"  # the STEP cell of the fixtures' running run (here painted before any box answers)


def nvml_python(folder: Path, table: str) -> str:
    """The workstations' python: this one, answering NVML from tests/fixtures/nvml/TABLE.json ("none": as is)."""
    if table == "none":
        return sys.executable
    wrapper = folder / f"python-{table}"
    wrapper.write_text(f'#!/bin/sh\nTUITRAIN_NVML_TABLE={NVML_TABLES / f"{table}.json"} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def settings(folder: Path, hosts, names: tuple[str, ...], python: str = sys.executable) -> Path:
    lines = []
    for host in names:
        lines += ["[[workstations]]", f'host = "{host}"', f'python = "{python}"',
                  f'runs = "{folder / f"{host}-runs"}"', f'ssh_config = "{hosts.ssh_config}"', ""]
    path = folder / f"config-{len(names)}.toml"
    path.write_text("\n".join(lines))
    return path


def remote_processes(hosts) -> list[psutil.Process]:
    """Each host's stream and the sshd session that carries it (not the listener)."""
    found = []
    for name in HOSTS:
        listener = hosts[name].sshd.pid if hosts[name].sshd else None
        for pid in hosts.pids(name):
            try:
                proc = psutil.Process(pid)
                line = " ".join(proc.cmdline())
            except psutil.NoSuchProcess:
                continue
            if pid != listener and ("--stream" in line or proc.name() == "sshd"):
                found.append(proc)
    return found


def watch_cpu(hosts, seconds: float) -> tuple[float, float, int]:
    """(here, there) as percent of one core over `seconds`, and how many remote processes were counted. The streams
    are Home's: runs and, through `on_gpus`, each box's GPUs."""
    from tuitrain import __version__
    from tuitrain.remote.runs_stream import RunsStream
    from tuitrain.remote.workstations import workstations

    news: queue.Queue = queue.Queue()
    streams = [RunsStream(station, __version__, lambda item: news.put(("runs", item)),
                          on_gpus=lambda item: news.put(("gpus", item))) for station in workstations()]
    for stream in streams:
        stream.start()
    try:
        answered: set[tuple[str, str]] = set()
        deadline = time.monotonic() + 120
        while answered != {(kind, host) for kind in ("runs", "gpus") for host in HOSTS}:
            kind, item = news.get(timeout=max(0.1, deadline - time.monotonic()))
            if item.problem:
                raise RuntimeError(item.problem)
            answered.add((kind, item.host))
        time.sleep(3)  # past the streams' start
        me = psutil.Process()
        on_hosts = {pid for name in HOSTS for pid in hosts.pids(name)}  # the hosts' sshds are children too
        here = [me, *(p for p in me.children(recursive=True) if p.pid not in on_hosts)]
        there = remote_processes(hosts)
        before_here, before_there, began = cpu_seconds(here), cpu_seconds(there), time.monotonic()
        time.sleep(seconds)
        took = time.monotonic() - began
        return (100 * (cpu_seconds(here) - before_here) / took, 100 * (cpu_seconds(there) - before_there) / took,
                len(there))
    finally:
        for stream in streams:
            stream.stop(wait=10)


def first_frame(base: Path, config: Path, full: str | None) -> tuple[float, float, float | None]:
    env = {"HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(base / "runs"), "TUITRAIN_CONFIG": str(config)}
    program = PtyProgram([sys.executable, "-m", "tuitrain"], (80, 24), env=env, cwd=base)
    with program._lock:  # each moment as painted, even one painted before it is asked for
        program._waiting |= {m.encode() for m in ("Profiles", FIRST_RUN, full) if m}
    try:
        home = program.wait_for("Profiles", 60)
        local = program.wait_for(FIRST_RUN, 60)
        everything = program.wait_for(full, 120) if full else None
        return home, local, everything
    finally:
        program.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the CPU is counted (default 60)")
    parser.add_argument("--repeat", type=int, default=5, help="first frames of each kind (default 5)")
    parser.add_argument("--nvml-table", default="eight_h100",
                        help="the GPUs each box's tuitrain sees: tests/fixtures/nvml/NAME.json (default eight_h100; "
                             "none: the box's own NVML)")
    opts = parser.parse_args()

    from hosts import cannot_make_hosts, ensure_tools, make_hosts
    from test_tui_fixtures import make_runs

    reason = ensure_tools() or cannot_make_hosts()
    if reason:
        print(f"workstations_watch: {reason}")
        return 2
    base = Path(tempfile.mkdtemp(prefix="tuitrain-bench-"))
    (base / "hosts").mkdir()
    hosts = make_hosts(base / "hosts", HOSTS)
    try:
        make_runs(base / "runs")
        for host in HOSTS:
            make_runs(base / f"{host}-runs")
        python = nvml_python(base, opts.nvml_table)
        three, none = settings(base, hosts, HOSTS, python), settings(base, hosts, (), python)
        os.environ["TUITRAIN_CONFIG"] = str(three)
        gate = QuietGate()
        gate.wait()
        here, there, counted = watch_cpu(hosts, opts.seconds)
        frames: dict[str, list[tuple[float, float, float | None]]] = {"none": [], "three": []}
        first_frame(base, three, "Runs (12)")  # untimed: bytecode and the hosts' first ssh
        for _ in range(opts.repeat):
            for name, config in (("none", none), ("three", three)):
                gate.wait()
                frames[name].append(first_frame(base, config, "Runs (12)" if name == "three" else None))
    finally:
        hosts.close()

    def med(name: str, part: int) -> str:
        values = [f[part] for f in frames[name] if f[part] is not None]
        return f"{statistics.median(values):.3f} s" if values else "-"

    print(f"workstations_watch: 3 idle namespace hosts over ssh (GPUs: {opts.nvml_table}), CPU over {opts.seconds:g} s, "
          f"first frames median of {opts.repeat} (80x24 pty, taking turns)")
    print(machine_line())
    print(gate.summary())
    print(f"CPU of watching 3 idle workstations: here {here:.2f} % of a core (goal < 2 %: "
          f"{'met' if here < 2 else 'NOT met'}); there {there:.2f} % of a core in all ({counted} processes: "
          "each box's stream and its sshd session)")
    print(f"Home first frame, no workstations:  {med('none', 0)}; this machine's runs {med('none', 1)}")
    print(f"Home first frame, 3 workstations:   {med('three', 0)}; this machine's runs {med('three', 1)}; "
          f"every box's runs {med('three', 2)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
