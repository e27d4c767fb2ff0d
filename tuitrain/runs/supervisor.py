"""The detached supervisor: `python -m tuitrain.runs.supervisor RUN_DIR`.

Started in a session of its own by `tuitrain run`, so a closed terminal or a dropped SSH
connection does not reach it. It starts `accelerate launch`, keeps run.json true, tears the
ranks down when one dies, and turns SIGTERM/SIGINT/SIGHUP into a graceful stop request.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tuitrain.runs.layout import CONTROL_STOP, CONTROL_TERMINATE, RunPaths
from tuitrain.runs.process_tree import alive, descendants, end_processes
from tuitrain.runs.ranks import read_rank_records
from tuitrain.runs.record import read_record, update_record

POLL_SECONDS = 0.2
TEARDOWN_AFTER_RANK_DEATH = 3.0  # the elastic agent usually does it first; we make sure
KILL_GRACE_SECONDS = 5.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+)", re.S)


def root_cause_rank(launcher_log: Path) -> int | None:
    """torch's elastic agent names the rank whose failure it saw first; when several ranks are
    found dead at one poll, its word beats ours (a peer killed in the teardown is not the cause)."""
    try:
        with open(launcher_log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 65536))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    found = _ROOT_CAUSE.findall(text)
    return int(found[-1]) if found else None


def log(message: str) -> None:
    print(f"[tuitrain supervisor {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Supervisor:
    def __init__(self, paths: RunPaths) -> None:
        self.paths = paths
        self.record = read_record(paths)
        self.launcher: subprocess.Popen[bytes] | None = None
        self.known_pids: set[int] = set()
        self.rank_pids: dict[int, int] = {}
        self.first_dead_rank: int | None = None
        self.rank_death_time: float | None = None
        self.stop_requested = False
        self.terminating = False

    # -- signals -----------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        log(f"received {signal.Signals(signum).name}: asking the ranks to save a checkpoint and stop")
        self.paths.control.mkdir(exist_ok=True)
        self.paths.control_request(CONTROL_STOP).touch()

    # -- launch ------------------------------------------------------------------------------
    def launch_argv(self) -> tuple[list[str], int | None]:
        argv = list(self.record["argv"])
        port = self.record.get("main_process_port")
        if port is None and "--main_process_port" not in argv and int(self.record["num_processes"]) > 1:
            port = free_port()
            at = argv.index("--config_file") + 2
            argv[at:at] = ["--main_process_port", str(port)]
        return argv, port

    def start(self) -> None:
        argv, port = self.launch_argv()
        env = {**os.environ, **self.record["env"], "TUITRAIN_RUN_DIR": str(self.paths.root)}
        log(f"starting: {' '.join(argv)}")
        self.launcher = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, cwd=self.record.get("cwd") or None)
        self.known_pids.add(self.launcher.pid)
        self.record = update_record(
            self.paths,
            status="running",
            started=time.time(),
            argv=argv,
            main_process_port=port,
            pids={"supervisor": os.getpid(), "launcher": self.launcher.pid, "ranks": {}},
        )

    # -- watch -------------------------------------------------------------------------------
    def poll_ranks(self) -> None:
        assert self.launcher is not None
        self.known_pids |= descendants(self.launcher.pid)
        records = read_rank_records(self.paths)
        changed = False
        for rank, rec in records.items():
            if self.rank_pids.get(rank) != rec["pid"]:
                self.rank_pids[rank] = rec["pid"]
                self.known_pids.add(rec["pid"])
                changed = True
            died_badly = rec["exit_code"] not in (None, 0) or (rec["exit_code"] is None and not alive(rec["pid"]))
            if died_badly and self.first_dead_rank is None and not self.terminating:
                self.first_dead_rank = rank
                self.rank_death_time = time.monotonic()
                log(f"rank {rank} (pid {rec['pid']}) died (exit code {rec['exit_code']}); tearing down the others")
        if changed:
            pids = dict(self.record.get("pids") or {})
            pids["ranks"] = {str(r): p for r, p in sorted(self.rank_pids.items())}
            self.record = update_record(self.paths, pids=pids)

    def poll_control(self) -> None:
        if not self.stop_requested and self.paths.control_request(CONTROL_STOP).exists():
            self.stop_requested = True
            log("stop requested: the ranks save a checkpoint and stop at the next step end")
            self.record = update_record(self.paths, status="stopping")
        if not self.terminating and self.paths.control_request(CONTROL_TERMINATE).exists():
            self.terminating = True
            log("terminate requested: ending every process of the run now")
            self.record = update_record(self.paths, status="stopping")
            self.end_all()

    def end_all(self) -> None:
        assert self.launcher is not None
        pids = self.known_pids | descendants(self.launcher.pid) | {self.launcher.pid}
        killed = end_processes(pids, grace=KILL_GRACE_SECONDS)
        if killed:
            log(f"killed after {KILL_GRACE_SECONDS:.0f}s grace: {sorted(killed)}")

    def watch(self) -> int:
        assert self.launcher is not None
        while True:
            self.poll_control()
            self.poll_ranks()
            code = self.launcher.poll()
            if code is not None:
                return code
            if self.rank_death_time and time.monotonic() - self.rank_death_time > TEARDOWN_AFTER_RANK_DEATH:
                self.end_all()
                self.rank_death_time = None
            time.sleep(POLL_SECONDS)

    # -- finish ------------------------------------------------------------------------------
    def finish(self, launcher_code: int) -> str:
        self.poll_ranks()
        leftovers = [p for p in self.known_pids if alive(p)]
        if leftovers:
            log(f"processes left after the launcher exited: {sorted(leftovers)}; ending them")
            end_processes(leftovers, grace=KILL_GRACE_SECONDS)
        records = read_rank_records(self.paths)
        exit_codes: dict[str, Any] = {"launcher": launcher_code}
        for rank, rec in sorted(records.items()):
            exit_codes[str(rank)] = rec["exit_code"] if rec["exit_code"] is not None else "killed"
        failed_rank = self.first_dead_rank
        if self.terminating or (self.stop_requested and launcher_code == 0):
            status = "stopped"
            failed_rank = None
        elif launcher_code == 0 and failed_rank is None:
            status = "finished"
        else:
            status = "failed"
            failed_rank = root_cause_rank(self.paths.launcher_log) if launcher_code != 0 else None
            failed_rank = failed_rank if failed_rank is not None else self.first_dead_rank
            if failed_rank is None:
                bad = [r for r, rec in records.items() if rec["exit_code"] not in (0,)]
                failed_rank = min(bad) if bad else None
        self.record = update_record(
            self.paths, status=status, ended=time.time(), exit_codes=exit_codes, failed_rank=failed_rank
        )
        log(f"run {status} (launcher exit code {launcher_code})")
        return status


def supervise(run_dir: Path) -> int:
    paths = RunPaths(run_dir)
    supervisor = Supervisor(paths)
    supervisor.install_signal_handlers()
    try:
        supervisor.start()
    except OSError as exc:
        update_record(paths, status="failed", ended=time.time(), error=f"could not start the launcher: {exc}")
        log(f"could not start the launcher: {exc}")
        return 1
    code = supervisor.watch()
    status = supervisor.finish(code)
    return 0 if status in ("finished", "stopped") else 1


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
