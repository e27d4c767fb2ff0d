"""The app on a run that trains on several machines (no machines needed: the run directory is
written here as the home supervisor writes it). At home such a run looks like a local one, except
that run.json lists its `machines`, each machine has its log (logs/machine-M.log), and each rank
record names the host its pid lives on: a pid of another machine must never be looked up here."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Any

import psutil
import pytest

from test_tui_app import make_app, table_rows, until
from test_tui_fixtures import T0, fixed_time

fixed_time()

RUN = "20260101-010000-two"
NVML_TABLE = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
STRANGER = 999_999  # a pid that lives on node1/node2, not here


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_multinode_run(root: Path, run_id: str = RUN, *, status: str = "running", per_machine: int = 2,
                       hosts: tuple[str, ...] = ("node1", "node2"), rank_hosts: dict[int, str] | None = None,
                       rank_pids: dict[int, int] | None = None, accelerator: str = "cpu", steps: int = 6,
                       rank_started: dict[int, float] | None = None, **extra: Any) -> Path:
    """A run on len(hosts) machines with `per_machine` ranks each, as it lies at home. `hosts`: SSH destinations;
    `rank_hosts`: the hostname a rank's record names (its machine's host by default); `rank_started`: a rank's
    process start time (by default one no process has)."""
    run_dir = root / run_id
    total = per_machine * len(hosts)
    me = psutil.Process()
    live = status not in ("finished", "failed", "killed", "stopped")
    supervisor = {"pid": os.getpid(), "started": me.create_time()} if live else {"pid": 4_000_000, "started": T0}
    machines = []
    for index, host in enumerate(hosts):
        gpus = ",".join(str(index * per_machine + i) for i in range(per_machine))
        node_dir = f"/srv/project/.tuitrain/runs/{run_id}/machine-{index}"
        machines.append({
            "host": host, "machine_rank": index, "python": "/usr/bin/python3", "workdir": "/srv/project",
            "node_dir": node_dir, "argv": ["python", "-m", "accelerate.commands.launch", "--machine_rank", str(index)],
            "command": f"accelerate launch --machine_rank {index} --num_machines {len(hosts)}",
            "env": ({"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": gpus} if accelerator == "cuda"
                    else {"CUDA_VISIBLE_DEVICES": ""}),
            "num_processes": per_machine, "accelerator": accelerator, "notes": [],
        })
    record = {
        "id": run_id, "profile": "two", "status": status, "created": T0, "started": T0 + 1,
        "ended": None if live else T0 + 40, "argv": [], "env": {}, "num_processes": total,
        "num_machines": len(hosts), "pids": {"supervisor": supervisor["pid"], "ranks": {}}, "exit_codes": {},
        "failed_rank": None, "error": None, "parent": None, "resume_from": None,
        "output_dir": str(run_dir / "output"), "main_process_port": 29500, "accelerator": accelerator,
        "machines": machines, "ssh_config": None, "profile_path": "/srv/project/two.toml", "cwd": str(root.parent),
        "max_steps": 10,
        "processes": {"supervisor": supervisor,
                      **{f"ssh {h}": {"pid": 4_000_001 + i, "started": T0} for i, h in enumerate(hosts)}},
    }
    record.update(extra)
    _write(run_dir / "run.json", json.dumps(record, indent=2))
    _write(run_dir / "profile.toml", '[run]\nname = "two"\n\n[training]\nmax_steps = 10\n')
    (run_dir / "control").mkdir(parents=True, exist_ok=True)
    for rank in range(total):
        machine = rank // per_machine
        host = (rank_hosts or {}).get(rank, hosts[machine])
        pid = (rank_pids or {}).get(rank, STRANGER - rank)
        _write(run_dir / "ranks" / f"rank-{rank}.json", json.dumps({
            "rank": rank, "local_rank": rank % per_machine, "node_rank": machine, "machine_rank": machine,
            "world_size": total, "host": host, "pid": pid, "started": (rank_started or {}).get(rank, T0 + 5),
            "exit_code": None, "time": T0 + 5}))
        lines = [f"[tuitrain] rank {rank}/{total} pid {pid} run {run_id}", f"rank {rank} says hello from {host}"]
        lines += [f"{{'loss': '{0.7 - step / 100:.4f}', 'epoch': '{step / 10}'}}" for step in range(1, steps + 1)]
        _write(run_dir / "logs" / f"rank-{rank}.log", "\n".join(lines) + "\n")
    _write(run_dir / "logs" / "launcher.log", "".join(
        f"[tuitrain supervisor 01:00:00] machine {i}: starting its agent on {h}\n" for i, h in enumerate(hosts)))
    for index, host in enumerate(hosts):
        _write(run_dir / "logs" / f"machine-{index}.log",
               f"[tuitrain supervisor 01:00:01] starting: accelerate launch --machine_rank {index}\n"
               f"agent of {host} (machine {index}) is up\n")
    events = [{"event": "train_begin", "time": T0 + 10, "step": 0, "max_steps": 10, "world_size": total}]
    events += [{"event": "log", "time": T0 + 10 + step, "step": step, "loss": round(0.7 - step / 100, 4),
                "learning_rate": 1e-3, "epoch": step / 10} for step in range(1, steps + 1)]
    _write(run_dir / "events.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    return run_dir


def run_app(app, script, size=(120, 36)) -> None:
    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await until(pilot, lambda: app.polls > 0, what="the first poll of the runs root")
            await script(pilot)
            errors = [f"{n.title}: {n.message}" for n in app._notifications if n.severity == "error"]
            assert errors == []

    asyncio.run(main())


async def open_monitor(pilot, run_id: str = RUN):
    from textual.widgets import DataTable

    app = pilot.app
    table = app.screen.query_one("#runs", DataTable)
    await until(pilot, lambda: run_id in [r[0] for r in table_rows(table)], what="the run in the list")
    table.move_cursor(row=[r[0] for r in table_rows(table)].index(run_id))
    await pilot.press("enter")
    await until(pilot, lambda: type(app.screen).__name__ == "MonitorScreen", what="the monitor")
    await until(pilot, lambda: app.screen.run_watch.polls > 0 and app.screen._landed, what="the first read")
    await pilot.pause(0.1)
    return app.screen


async def show_tab(pilot, monitor, pane: str):
    from textual.widgets import TabbedContent

    monitor.query_one("#tabs", TabbedContent).active = pane
    await pilot.pause(0.1)
    view = monitor.active_view()
    await until(pilot, lambda: view.line_count > 0, what=f"the lines of {pane}")
    return view


def test_the_run_list_and_monitor_group_ranks_by_machine_and_show_each_machines_log(tmp_path):
    make_multinode_run(tmp_path / "runs")
    app = make_app(tmp_path)

    async def script(pilot):
        from textual.widgets import DataTable, TabbedContent

        rows = table_rows(app.screen.query_one("#runs", DataTable))
        assert rows[0][:3] == [RUN, "running", "6/10 ███··"]
        monitor = await open_monitor(pilot)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "step 6/10" in header.text, what="the progress")
        assert header.text.splitlines()[-1] == "machines  node1: rank 0, rank 1 · node2: rank 2, rank 3"
        assert header.size.height == 3  # the machines line is in view, not cut off
        tabs = monitor.query_one("#tabs", TabbedContent)
        labels = [str(tab.label) for tab in tabs.query("ContentTab")]
        assert labels[:8] == ["All ranks", "Rank 0", "Rank 1", "Rank 2", "Rank 3", "Launcher", "node1", "node2"]

        merged = monitor.active_view()
        await until(pilot, lambda: merged.line_count > 0, what="the merged log")
        assert {merged.line_text(i).plain.split("│")[0] for i in range(merged.line_count)} >= {"0", "1", "2", "3"}

        rank2 = await show_tab(pilot, monitor, "tab-rank-2")
        assert rank2.line_text(1).plain == "rank 2 says hello from node2"
        status = monitor.query_one("#log-status")
        await until(pilot, lambda: status.text.startswith("rank 2 on node2 · lines "), what="rank 2's machine")

        node2 = await show_tab(pilot, monitor, "tab-machine-1")
        assert node2.visible_text() == ["[tuitrain supervisor 01:00:01] starting: accelerate launch --machine_rank 1",
                                        "agent of node2 (machine 1) is up"]
        await until(pilot, lambda: status.text.startswith("machine 1 (node2): its agent and accelerate launch · "),
                    what="whose log it is")
        await pilot.press("slash", *"is up", "enter")  # a machine's log is searched as any log
        await until(pilot, lambda: node2.current == 1, what="the match in node2's log")

        # a machine's log is followed as it grows, like the launcher's
        with open(monitor.run_dir / "logs" / "machine-1.log", "a") as handle:
            handle.write("node2: rank 3 finished its step\n")
        await until(pilot, lambda: node2.line_count == 3, what="the new line of node2's log")
        await show_tab(pilot, monitor, "tab-launcher")
        assert status.text.startswith("the run's supervisor here (it starts every machine) · ")
        await pilot.press("left_square_bracket")  # the tab before node1 is the launcher's, after it node2
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert tabs.active == "tab-machine-0"

    run_app(app, script)


def test_remote_ranks_pids_are_never_taken_for_local_processes(tmp_path, monkeypatch):
    """Rank 2 runs on node2 as pid P; here P is a live process (the one that started the tests). The app must
    neither sample it nor show it as rank 2, nor show this machine's GPUs as the run's."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML_TABLE))
    root = tmp_path / "runs"
    make_multinode_run(root, rank_pids={2: os.getppid()}, accelerator="cuda")
    from tuitrain.runs.catalog import list_runs
    from tuitrain.runs.view.owners import read_owners
    from tuitrain.tui.machines import run_machines

    owners = read_owners(root)
    assert os.getppid() not in owners and owners[os.getpid()].role == "supervisor"  # the home supervisor is here
    (paths, record), = list_runs(root)
    assert [(m.host, m.ranks, m.here) for m in run_machines(record)] == [("node1", (0, 1), False),
                                                                        ("node2", (2, 3), False)]
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        monitor = await open_monitor(pilot)
        await pilot.press("u")
        panel = monitor.query_one("#gpus")
        await until(pilot, lambda: app.hardware_view is not None and len(app.hardware_view.host_history) >= 3,
                    what="a few samples")
        await until(pilot, lambda: "this machine  " in str(panel.content), what="the panel")
        text = str(panel.content)
        assert "none of this run's ranks runs on this machine" in text
        assert ("machine 0 · node1 · rank 0, rank 1\n    no figures from it yet\n\nmachine 1 · node2 · rank 2, rank 3\n"
                "    no figures from it yet\n") in text  # no agent sample arrived in this fabricated run
        assert "tuitrain gpus --profile /srv/project/two.toml" in text
        assert f"pid {os.getppid()}" not in text and "cuda:" not in text  # no local figures for remote ranks
        assert all(usage.pid != os.getppid() for usage in app.hardware_view.snapshot.ranks)
        assert not any(p.owner is not None and p.owner.run_id == RUN
                       for g in app.hardware_view.snapshot.gpus for p in g.processes)

    run_app(app, script)


def test_when_this_machine_is_one_of_them_its_ranks_and_gpus_are_shown(tmp_path, monkeypatch):
    """The home machine runs machine 0 (its rank records name this hostname): ranks 0 and 1 are
    sampled here, with the GPUs machine 0's CUDA_VISIBLE_DEVICES names; node2's are not."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML_TABLE))
    here = socket.gethostname()
    import psutil

    # rank 0 is this process, as its record says (pid and start time: a rank record names a process by both)
    make_multinode_run(tmp_path / "runs", rank_hosts={0: here, 1: here}, rank_pids={0: os.getpid(), 3: os.getppid()},
                       rank_started={0: psutil.Process().create_time()}, accelerator="cuda")
    names = [d["name"] for d in json.loads(NVML_TABLE.read_text())["devices"]]
    app = make_app(tmp_path, hardware_line=None, hardware=None, hardware_interval=0.1)

    async def script(pilot):
        monitor = await open_monitor(pilot)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "node1 (this machine): rank 0, rank 1 · node2: rank 2, rank 3" in header.text,
                    what="this machine in the header")
        await pilot.press("u")
        panel = monitor.query_one("#gpus")
        await until(pilot, lambda: f"rank 0  pid {os.getpid()}" in str(panel.content), what="rank 0's figures")
        text = str(panel.content)
        assert "machine 0 · node1 (this machine) · rank 0, rank 1\n" in text
        assert f"cuda:0 = GPU 0  {names[0]}" in text and f"cuda:1 = GPU 1  {names[1]}" in text
        assert "GPU 2" not in text and "GPU 3" not in text  # node2's devices are node2's
        assert f"pid {os.getppid()}" not in text  # rank 3's pid lives on node2
        assert "machine 1 · node2 · rank 2, rank 3\n" in text

    run_app(app, script)


def test_a_run_that_failed_on_one_machine_opens_on_what_failed(tmp_path):
    root = tmp_path / "runs"
    make_multinode_run(root, status="failed", error="node2: no word from its agent for 10 s (a pulled cable?)",
                       exit_codes={"launcher node1": -15, "launcher node2": 1, "0": -15, "1": -15})
    make_multinode_run(root, "20260101-020000-two", status="failed", failed_rank=3,
                       error="node2: rank 3 (pid 999996) killed by SIGKILL", created=T0 + 60)

    app = make_app(tmp_path)

    async def script(pilot):
        from textual.widgets import DataTable, TabbedContent

        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count == 2, what="both runs")
        assert {r[0]: r[1] for r in table_rows(table)} == {RUN: "failed", "20260101-020000-two": "failed r3"}
        monitor = await open_monitor(pilot)
        tabs = monitor.query_one("#tabs", TabbedContent)
        await until(pilot, lambda: tabs.active == "tab-machine-1", what="the failing machine's log")
        header = monitor.query_one("#header")
        assert header.text.splitlines()[2:] == ["node2: no word from its agent for 10 s (a pulled cable?)",
                                                "machines  node1: rank 0, rank 1 · node2: rank 2, rank 3"]
        assert header.size.height == 4
        await pilot.press("escape")
        second = await open_monitor(pilot, "20260101-020000-two")
        await until(pilot, lambda: second.query_one("#tabs", TabbedContent).active == "tab-rank-3", what="rank 3")
        assert "failed (rank 3 on node2)" in second.query_one("#header").text

    run_app(app, script)


@pytest.mark.parametrize("damage", ["odd machines", "no machine logs", "no rank records", "a machine log bigger"])
def test_an_incomplete_or_odd_multi_machine_run_still_opens(tmp_path, damage):
    run_dir = make_multinode_run(tmp_path / "runs")
    record = json.loads((run_dir / "run.json").read_text())
    if damage == "odd machines":
        record["machines"] = [{"machine_rank": "zero", "num_processes": "two"}, "node2", {"host": "node3"}]
    elif damage == "no machine logs":
        for log in (run_dir / "logs").glob("machine-*.log"):
            log.unlink()
    elif damage == "no rank records":
        for rec in (run_dir / "ranks").glob("*.json"):
            rec.unlink()
    else:
        (run_dir / "logs" / "machine-0.log").write_bytes(b"\xff\xfe not utf-8\r\n" * 5000)
    (run_dir / "run.json").write_text(json.dumps(record))
    app = make_app(tmp_path)

    async def script(pilot):
        if damage == "odd machines":  # run.json is checked when read: the run is listed unreadable, opening it says why
            table = app.screen.query_one("#runs")
            await until(pilot, lambda: [r for r in table_rows(table) if r[0] == RUN and "unreadable" in r],
                        what="the run listed unreadable")
            table.move_cursor(row=[r[0] for r in table_rows(table)].index(RUN))
            await pilot.press("enter")
            await until(pilot, lambda: any("is damaged (no machines[0]." in n.message for n in app._notifications),
                        what="why it cannot be opened")
            assert type(app.screen).__name__ == "HomeScreen"
            app.clear_notifications()  # the one error this case expects
            return
        monitor = await open_monitor(pilot)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "machines  " in header.text, what="the machines line")
        for _ in range(len(monitor.query("TabPane"))):
            await pilot.press("right_square_bracket")
            await pilot.pause(0.05)
        assert type(app.screen).__name__ == "MonitorScreen"

    run_app(app, script)


def test_the_gpus_tab_shows_each_other_machine_as_its_agent_sampled_it(tmp_path):
    """node2's agent sent its sample home (machines/machine-1-gpus.json, tuitrain gpus --json's shape); a damaged
    sample of another machine is left out, never raised on."""
    import json

    from tuitrain.rundir.layout import RunPaths
    from tuitrain.runs.keeper.mirror import read_machine_samples
    from tuitrain.tui.machines import Machine
    from tuitrain.tui.widgets.gpu_panel import run_panel

    paths = RunPaths(tmp_path / "run")
    (paths.root / "machines").mkdir(parents=True)
    sample = {"time": 1000.0, "nvml": {"available": True, "status": "1 NVIDIA GPU(s)"},
              "gpus": [{"index": 0, "name": "NVIDIA H100", "utilization": 87, "memory_used": 40 * 2**30,
                        "memory_total": 80 * 2**30, "temperature": 61, "lost": False,
                        "processes": [{"pid": 7, "used_memory": 30 * 2**30,
                                       "owner": {"run_id": "r1", "rank": 2, "role": "rank"}}]}],
              "host": {"cpu_count": 16, "cpu_percent": 35.0, "memory_used": 8 * 2**30, "memory_total": 64 * 2**30}}
    (paths.root / "machines" / "machine-1-gpus.json").write_text(json.dumps(sample))
    (paths.root / "machines" / "machine-2-gpus.json").write_text('{"time": 12')  # being replaced, or damaged
    samples = read_machine_samples(paths)
    assert list(samples) == [1]
    machines = [Machine(0, "node1", (0, 1), True, {}, "cpu"), Machine(1, "node2", (2, 3), False, {}, "cuda"),
                Machine(2, "node3", (4, 5), False, {}, "cuda")]
    view = None  # this machine not sampled yet: the panel says so
    text = run_panel(view, {"accelerator": "cuda", "profile": "p"}, "r1", live=True, machines=machines,
                     samples=samples, now=1003.0).plain
    assert text == "sampling the machine…"
    from tuitrain.hardware.sampler import Sampler

    with Sampler(None) as sampler:
        sampler.sample()
        view = sampler.view()
    text = run_panel(view, {"accelerator": "cuda", "profile": "p"}, "r1", live=True, machines=machines,
                     samples=samples, now=1003.0).plain
    assert "machine 1 · node2 · rank 2, rank 3\n    sampled 3 s ago\n" in text
    assert "GPU 0  NVIDIA H100  util  87%  memory 40.0/80.0 GiB  61°C  (rank 2 30.0 GiB)" in text
    assert "CPU  35% of 16 cores · RAM 8.0 GiB/64.0 GiB" in text
    assert "machine 2 · node3 · rank 4, rank 5\n    no figures from it yet" in text
