"""A real one-node Slurm cluster on this machine for the Slurm tests: munged, slurmctld and slurmd.

Everything lives in a temporary folder: its own munge key and socket, a slurm.conf that names them, state and spool
folders, pid and log files. The clients (sbatch, squeue, scancel, scontrol) find it through SLURM_CONF, which
`Cluster.env()` gives and the session fixture sets for the test process and every CLI it starts. A slot taken with a
file lock picks the ports, so two suites on one machine never share a controller.

Debian's `slurm-wlm` and `munge` are installed with apt-get where missing (as root, as CI does). `Cluster.close()`
stops the daemons; the next session with the same slot kills whatever a killed session left running.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apt import apt_install

LOCK_DIR = Path("/run/lock") if Path("/run/lock").is_dir() else Path("/tmp")
SLOTS = range(1, 100)
BASE_PORT = 17800  # slot N: slurmctld BASE_PORT + 2N, slurmd the next
PACKAGES = {"/usr/sbin/munged": "munge", "/usr/sbin/slurmctld": "slurmctld", "/usr/sbin/slurmd": "slurmd",
            "sbatch": "slurm-client", "squeue": "slurm-client"}
NODE = "ttnode"
PARTITION = "debug"
TWO_NODES = "two"  # the partition of the namespace hosts' nodes (add_hosts)
START_TIMEOUT = 60.0


def _missing_packages() -> list[str]:
    return sorted({package for tool, package in PACKAGES.items()
                   if not (Path(tool).exists() if tool.startswith("/") else shutil.which(tool))})


def ensure_slurm() -> str | None:
    """Install Debian's slurm-wlm and munge where missing (apt-get update once, then install). Returns why they
    cannot be had, or None."""
    if not _missing_packages():
        return None
    if os.geteuid() != 0:
        return "a test Slurm cluster needs root (to install slurm-wlm and run slurmd)"
    if shutil.which("apt-get") is None:
        return f"a test Slurm cluster needs {', '.join(_missing_packages())}, and there is no apt-get to install them"
    said = apt_install(["slurm-wlm", "munge"], timeout=600)
    if not _missing_packages():
        return None
    return f"could not install slurm-wlm and munge: {said}"


@dataclass
class Cluster:
    folder: Path
    slot: int
    lock_fd: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    namespace_nodes: dict[str, str] = field(default_factory=dict)  # name -> address: slurmds in network namespaces
    ctld_address: str = "127.0.0.1"

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.folder / "munge" / "munge.socket"

    @property
    def ctld_port(self) -> int:
        return BASE_PORT + 2 * self.slot

    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def client(self, *argv: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), check=False, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env()})

    def log(self, name: str) -> str:
        path = self.folder / (f"slurmd-{NODE}.log" if name == "slurmd" else f"{name}.log")  # slurmd-node1.log
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    # -- building ---------------------------------------------------------------------------------------------

    def write_config(self) -> None:
        (self.folder / "munge").mkdir(mode=0o700)
        key = self.folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        for name in ("state", "spool"):
            (self.folder / name).mkdir(mode=0o755)
        self.conf.write_text(self.config_text())

    def config_text(self) -> str:
        host = socket.gethostname()
        cpus = 2
        nodes = [f"NodeName={name} NodeAddr={address} NodeHostname={name} CPUs={cpus} State=UNKNOWN"
                 for name, address in self.namespace_nodes.items()]
        if self.namespace_nodes:
            nodes.append(f"PartitionName={TWO_NODES} Nodes={','.join(self.namespace_nodes)} MaxTime=INFINITE State=UP")
        return "\n".join([
            "ClusterName=tuitraintest",
            f"SlurmctldHost={host}({self.ctld_address})",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.ctld_port + 1}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket},cred_expire=10",  # a requeued job waits cred_expire + 1 s
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={self.folder / 'state'}",
            f"SlurmdSpoolDir={self.folder / 'spool' / '%n'}",  # %n: the node's name (several slurmds here)
            f"SlurmctldPidFile={self.folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.folder / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={self.folder / 'slurmctld.log'}",
            f"SlurmdLogFile={self.folder / 'slurmd-%n.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            # the main scheduling loop every 2 s, not 60: a requeued job, once its hold (cred_expire + 1 s) is over,
            # waits for that loop's next pass (nothing else wakes the scheduler then)
            "SchedulerParameters=sched_interval=2",
            "MpiDefault=none",
            "ReturnToService=2",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=600",
            "KillWait=10",
            "InactiveLimit=0",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=60",
            "MessageTimeout=10",
            f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
            *nodes,
            "",
        ])

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.folder / f"{name}.out", "ab") as out:
            self.processes[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                                    start_new_session=True, env={**os.environ, **self.env()})
        _slot_file(self.slot).write_text(" ".join(str(p.pid) for p in self.processes.values()))

    def start(self) -> None:
        munge = self.folder / "munge"
        self._spawn("munged", ["/usr/sbin/munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
                               f"--log-file={self.folder / 'munged.log'}", f"--seed-file={munge / 'seed'}"])
        self._wait(lambda: self.munge_socket.exists(), "munged", "its socket")
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self.client("scontrol", "ping", timeout=5).stdout.count("UP") > 0, "slurmctld",
                   "answering scontrol ping")
        self._spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-N", NODE, "-f", str(self.conf)])
        self._wait(self._node_idle, "slurmd", f"node {NODE} idle")

    def _node_idle(self, node: str = NODE) -> bool:
        # scontrol's State, not sinfo's (which says `mixed` of the namespace nodes after their first job)
        out = self.client("scontrol", "--oneliner", "show", "node", node, timeout=5).stdout.split()
        return "State=IDLE" in out

    def _wait(self, ready: object, name: str, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            proc = self.processes[name]
            if proc.poll() is not None:
                out = (self.folder / f"{name}.out").read_text(errors="replace")[-800:]
                raise RuntimeError(f"{name} exited ({proc.returncode}): {out} {self.log(name)[-800:]}")
            try:
                if ready():  # type: ignore[operator]
                    return
            except (subprocess.TimeoutExpired, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{name} not {what} within {START_TIMEOUT:.0f} s: {self.log(name)[-800:]}")

    def add_hosts(self, hosts: Any) -> None:
        """Nodes node1 and node2 on the namespace hosts of tests/hosts.py (their own address and hostname, this
        machine's file system: a shared one), in partition TWO_NODES. The controller then listens where they reach
        it (the bridge's address), so it and this machine's slurmd restart with the new configuration."""
        self.namespace_nodes = {name: hosts[name].address for name in ("node1", "node2")}
        self.ctld_address = hosts.main_address
        self._restart()
        for name in self.namespace_nodes:
            # nsenter, not `ip netns exec`: that mounts a sysfs of its own, without the cgroup tree slurmd needs
            self._spawn(f"slurmd-{name}", ["nsenter", f"--net=/run/netns/{hosts[name].netns}", "unshare", "--uts",
                                           "sh", "-c",
                                           'hostname "$0" && exec /usr/sbin/slurmd -D -N "$0" -f "$1"', name,
                                           str(self.conf)])
        for name in (NODE, *self.namespace_nodes):
            self._wait(lambda n=name: self._node_idle(n), "slurmd" if name == NODE else f"slurmd-{name}",
                       f"node {name} idle")

    def remove_hosts(self) -> None:
        """Back to the one node here (before the namespace hosts go, taking the controller's address with them)."""
        self.cancel_all()
        for name in self.namespace_nodes:
            self._stop(f"slurmd-{name}")
        self.namespace_nodes = {}
        self.ctld_address = "127.0.0.1"
        self._restart()
        self._wait(self._node_idle, "slurmd", f"node {NODE} idle")

    def _restart(self) -> None:
        """slurmctld and this machine's slurmd again, with the configuration as it now is."""
        self.conf.write_text(self.config_text())
        for name in ("slurmd", "slurmctld"):
            self._stop(name)
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self.client("scontrol", "ping", timeout=5).stdout.count("UP") > 0, "slurmctld",
                   "answering scontrol ping")
        self._spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-N", NODE, "-f", str(self.conf)])

    def _stop(self, name: str) -> None:
        proc = self.processes.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    # -- helpers for tests ------------------------------------------------------------------------------------

    def cancel_all(self) -> None:
        self.client("scancel", "--full", "--signal=KILL", "-u", "root", timeout=20)

    def wait_idle(self, timeout: float = 60) -> None:
        """Until no job of this cluster is left running (the next test gets the whole node)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.client("squeue", "-h", "-o", "%i", timeout=5).stdout.strip() and all(
                    self._node_idle(n) for n in (NODE, *self.namespace_nodes)):
                return
            time.sleep(0.3)

    # -- teardown ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        try:
            self.cancel_all()
        except (subprocess.TimeoutExpired, OSError):
            pass
        for name in (*(f"slurmd-{n}" for n in self.namespace_nodes), "slurmd", "slurmctld", "munged"):
            self._stop(name)
        _kill_leftovers(self.slot)
        try:
            os.close(self.lock_fd)
        except OSError:
            pass


def _slot_file(slot: int) -> Path:
    return LOCK_DIR / f"tuitrain-slurm-{slot}.pids"


def _kill_leftovers(slot: int) -> None:
    """Kill daemons a killed session with this slot left running (their pids were written at start)."""
    path = _slot_file(slot)
    try:
        pids = [int(p) for p in path.read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    path.unlink(missing_ok=True)


def _take_slot() -> tuple[int, int]:
    for slot in SLOTS:
        fd = os.open(LOCK_DIR / f"tuitrain-slurm-{slot}.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return slot, fd
    raise RuntimeError(f"all {len(SLOTS)} Slurm slots are taken (lock files in {LOCK_DIR})")


def make_cluster(folder: Path) -> Cluster:
    """A running one-node cluster (call `ensure_slurm()` first). The caller must `close()` it."""
    slot, fd = _take_slot()
    _kill_leftovers(slot)
    cluster = Cluster(folder, slot, fd)
    try:
        cluster.write_config()
        cluster.start()
    except BaseException:
        cluster.close()
        raise
    return cluster
