"""Real hosts for multi-machine tests: network namespaces on one bridge, each with its own sshd.

Picture (slot N is taken with a file lock, so two suites on one machine never share names or addresses):

    root namespace ("main", 10.77.N.1 on bridge ttNbr)
       |-- veth ttNh1 <-> net0 in namespace ttN-node1 (10.77.N.2, own sshd, own hostname "node1")
       |-- veth ttNh2 <-> net0 in namespace ttN-node2 (10.77.N.3, ...)

The namespaces share the file system, so the "remote" Python is this checkout's venv. Keys (a client key, one
host key per host), known_hosts and an ssh_config with `Host node1` ... aliases live in a temporary folder; each
sshd runs with a config of its own from there. Each host also gets its own UTS namespace (its own hostname), held
by its sshd.

Everything is undone by `Hosts.close()` (sshds killed, namespaces and veths deleted), and again at the start of
the next session that takes the same slot, so a killed suite leaves nothing that breaks the next.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SLOTS = range(1, 200)
LOCK_DIR = Path("/run/lock") if Path("/run/lock").is_dir() else Path("/tmp")


def _sh(*argv: str, timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), check=False, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def cannot_make_hosts() -> str | None:
    """Why namespace hosts cannot be made here, in one line, or None when they can."""
    if os.name != "posix" or not Path("/proc/self/ns/net").exists():
        return "namespace hosts need Linux network namespaces"
    if os.geteuid() != 0:
        return "namespace hosts need root (ip netns, veth, sshd)"
    for tool in ("ip", "ssh", "ssh-keygen", "unshare", SSHD):
        if shutil.which(tool) is None:
            return f"namespace hosts need `{tool}`"
    probe = f"ttprobe{os.getpid()}"
    made = _sh("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip() or made.returncode}"
    _sh("ip", "netns", "del", probe, check=False)
    return None


PACKAGES = {"/usr/sbin/sshd": "openssh-server", "ssh": "openssh-client", "ssh-keygen": "openssh-client",
            "ip": "iproute2"}


def _missing_packages() -> list[str]:
    missing = [package for tool, package in PACKAGES.items()
               if not (Path(tool).exists() if tool.startswith("/") else shutil.which(tool))]
    return sorted(set(missing))


def ensure_tools() -> str | None:
    """Install what the hosts need and is missing (Debian's openssh-server, openssh-client, iproute2) when running
    as root with apt-get, as CI does. Returns why it could not be, or None."""
    missing = _missing_packages()
    if not missing:
        return None
    if os.geteuid() != 0:
        return "namespace hosts need root (ip netns, veth, sshd)"
    if shutil.which("apt-get") is None:
        return f"namespace hosts need {', '.join(missing)}, and there is no apt-get to install them"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=120", *missing]
    last = None
    for argv in (install, ["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=120"], install):
        last = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, timeout=600)
        if argv is install and last.returncode == 0 and not _missing_packages():
            return None
    tail = (last.stderr or last.stdout).strip().splitlines()[-1:] if last else []
    return f"could not install {', '.join(missing)}: {tail[0] if tail else 'apt-get failed'}"


@dataclass
class Host:
    name: str  # the ssh alias, e.g. "node1"; also the host's hostname
    netns: str  # network namespace, e.g. "tt7-node1"
    address: str  # e.g. "10.77.7.2"
    ifname: str  # its interface toward the others, inside the namespace ("net0")
    outer: str  # the veth end in the root namespace, on the bridge
    folder: Path  # its sshd config, host key, pid file and log
    sshd: subprocess.Popen[bytes] | None = None
    extra_links: list[str] = field(default_factory=list)

    @property
    def host_key_pub(self) -> str:
        return (self.folder / "host_ed25519_key.pub").read_text().split()[1]


class Hosts:
    """The hosts of one test session. `hosts["node1"]`, `hosts.ssh_config`, `hosts.exec("node1", [...])`."""

    def __init__(self, folder: Path, slot: int, lock_fd: int) -> None:
        self.folder = folder
        self.slot = slot
        self._lock_fd = lock_fd
        self.prefix = f"tt{slot}"
        self.subnet = f"10.77.{slot}"
        self.bridge = f"{self.prefix}br"
        self.main_address = f"{self.subnet}.1"
        self.hosts: dict[str, Host] = {}
        self.client_key = folder / "id_ed25519"
        self.known_hosts = folder / "known_hosts"
        self.ssh_config = folder / "ssh_config"

    # -- building ---------------------------------------------------------------------------------------------

    def _clean_slot(self) -> None:
        """Remove whatever an earlier session with this slot left behind (it may have been killed)."""
        for line in _sh("ip", "netns", "list", check=False).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(f"{self.prefix}-"):
                for pid in _sh("ip", "netns", "pids", name, check=False).stdout.split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass
                _sh("ip", "netns", "del", name, check=False)
        for line in _sh("ip", "-o", "link", "show", check=False).stdout.splitlines():
            parts = line.split(":")
            if len(parts) > 1:
                name = parts[1].strip().split("@")[0]
                if name.startswith(self.prefix) and name[len(self.prefix):][:1] in ("b", "h", "x"):
                    _sh("ip", "link", "del", name, check=False)

    def _setup(self) -> None:
        self._clean_slot()
        _sh("ip", "link", "add", self.bridge, "type", "bridge")
        _sh("ip", "addr", "add", f"{self.main_address}/24", "dev", self.bridge)
        _sh("ip", "link", "set", self.bridge, "up")
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tuitrain-tests", "-f", str(self.client_key))
        (self.folder / "authorized_keys").mkdir(mode=0o755)
        (self.folder / "authorized_keys" / "root").write_text((self.folder / "id_ed25519.pub").read_text())
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory

    def add(self, name: str) -> Host:
        """A new host: namespace, veth on the bridge, address, hostname and a running sshd."""
        index = len(self.hosts) + 1
        host = Host(name=name, netns=f"{self.prefix}-{name}", address=f"{self.subnet}.{index + 1}",
                    ifname="net0", outer=f"{self.prefix}h{index}", folder=self.folder / name)
        host.folder.mkdir()
        _sh("ip", "netns", "add", host.netns)
        inner_tmp = f"{self.prefix}p{index}"
        _sh("ip", "link", "add", host.outer, "type", "veth", "peer", "name", inner_tmp)
        _sh("ip", "link", "set", inner_tmp, "netns", host.netns)
        _sh("ip", "link", "set", host.outer, "master", self.bridge)
        _sh("ip", "link", "set", host.outer, "up")
        ns = ("ip", "netns", "exec", host.netns)
        _sh(*ns, "ip", "link", "set", inner_tmp, "name", host.ifname)
        _sh(*ns, "ip", "addr", "add", f"{host.address}/24", "dev", host.ifname)
        _sh(*ns, "ip", "link", "set", host.ifname, "up")
        _sh(*ns, "ip", "link", "set", "lo", "up")
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(host.folder / "host_ed25519_key"))
        (host.folder / "sshd_config").write_text(
            f"ListenAddress {host.address}\n"
            f"HostKey {host.folder / 'host_ed25519_key'}\n"
            f"PidFile {host.folder / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}/%u\n"
            "PermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\n"
            "UsePAM no\n"
            "StrictModes no\n"
            "UseDNS no\n"
            "PrintMotd no\n"
            "MaxStartups 100\n"
            "MaxSessions 100\n"
            "LogLevel ERROR\n"
            f"SetEnv TUITRAIN_TEST_HOST={name}\n"
        )
        self.hosts[name] = host
        self._write_client_files()
        self.start_sshd(name)
        return host

    def _write_client_files(self) -> None:
        known = [f"{h.address},{h.name} ssh-ed25519 {h.host_key_pub}" for h in self.hosts.values()]
        self.known_hosts.write_text("".join(line + "\n" for line in known))
        blocks = [
            f"Host {h.name}\n  HostName {h.address}\n" for h in self.hosts.values()
        ] + [(
            "Host *\n"
            "  User root\n"
            f"  IdentityFile {self.client_key}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n"
            "  ConnectTimeout 5\n"
        )]
        self.ssh_config.write_text("\n".join(blocks))

    # -- helpers for tests ------------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def __contains__(self, name: str) -> bool:
        return name in self.hosts

    def exec(self, name: str, argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run argv on a host directly (not over ssh): in its network namespace."""
        return subprocess.run(["ip", "netns", "exec", self.hosts[name].netns, *argv],
                              check=False, capture_output=True, text=True, timeout=timeout)

    def start_sshd(self, name: str, timeout: float = 10) -> None:
        host = self.hosts[name]
        pidfile = host.folder / "sshd.pid"
        pidfile.unlink(missing_ok=True)
        # sshd -D stays in front (so the Popen is the daemon); unshare gives the host its own hostname.
        with open(host.folder / "sshd.log", "ab") as log:
            host.sshd = subprocess.Popen(
                ["ip", "netns", "exec", host.netns, "unshare", "--uts", "sh", "-c",
                 f'hostname "$0" && exec {SSHD} -D -e -f "$1"', name, str(host.folder / "sshd_config")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if host.sshd.poll() is not None:
                raise RuntimeError(f"sshd on {name} exited: {(host.folder / 'sshd.log').read_text()[-500:]}")
            if pidfile.exists():  # sshd writes it once it listens
                return
            time.sleep(0.05)
        raise RuntimeError(f"sshd on {name} did not listen on {host.address}:22 within {timeout}s")

    def kill_sshd(self, name: str) -> None:
        """Kill a host's sshd (the listener; sessions it already forked live on, as on a real machine)."""
        host = self.hosts[name]
        if host.sshd is not None and host.sshd.poll() is None:
            host.sshd.kill()
            host.sshd.wait(timeout=10)
        host.sshd = None

    def link_down(self, name: str) -> None:
        """Cut a host off the network (its veth down, both ends): packets to it vanish, no RST is sent."""
        host = self.hosts[name]
        _sh("ip", "link", "set", host.outer, "down")

    def link_up(self, name: str) -> None:
        _sh("ip", "link", "set", self.hosts[name].outer, "up")

    def add_interface(self, name: str, ifname: str = "net1", address: str | None = None) -> str:
        """A second interface on a host that reaches no other host (a veth whose other end goes nowhere).
        Returns its address (10.78.N.k by default)."""
        host = self.hosts[name]
        index = list(self.hosts).index(name) + 1
        outer = f"{self.prefix}x{index}{len(host.extra_links)}"
        inner_tmp = f"{self.prefix}q{index}{len(host.extra_links)}"
        address = address or f"10.78.{self.slot}.{index + 1}"
        _sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner_tmp)
        _sh("ip", "link", "set", inner_tmp, "netns", host.netns)
        _sh("ip", "link", "set", outer, "up")
        ns = ("ip", "netns", "exec", host.netns)
        _sh(*ns, "ip", "link", "set", inner_tmp, "name", ifname)
        _sh(*ns, "ip", "addr", "add", f"{address}/24", "dev", ifname)
        _sh(*ns, "ip", "link", "set", ifname, "up")
        host.extra_links.append(outer)
        return address

    def pids(self, name: str) -> list[int]:
        """Every process in a host's network namespace (sshd, sessions, whatever they started)."""
        out = _sh("ip", "netns", "pids", self.hosts[name].netns, check=False).stdout
        return [int(p) for p in out.split()]

    # -- teardown ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        for host in self.hosts.values():
            self.kill_sshd(host.name)
        for host in self.hosts.values():
            for pid in self.pids(host.name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._clean_slot()
        self.hosts.clear()
        try:
            os.close(self._lock_fd)
        except OSError:
            pass


def _take_slot() -> tuple[int, int]:
    for slot in SLOTS:
        fd = os.open(LOCK_DIR / f"tuitrain-hosts-{slot}.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return slot, fd
    raise RuntimeError(f"all {len(SLOTS)} host slots are taken (lock files in {LOCK_DIR})")


def make_hosts(folder: Path, names: tuple[str, ...] = ("node1", "node2")) -> Hosts:
    """Build the hosts (call `ensure_tools()` and `cannot_make_hosts()` first). The caller must `close()`."""
    slot, fd = _take_slot()
    hosts = Hosts(folder, slot, fd)
    try:
        hosts._setup()
        for name in names:
            hosts.add(name)
    except BaseException:
        hosts.close()
        raise
    return hosts
