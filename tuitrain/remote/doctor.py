"""`tuitrain doctor`: check every machine of a multi-machine profile before a launch, in parallel, over SSH.

One SSH round trip per machine runs a fixed Python script there (`PROBE`, a constant of this module, sent on stdin
to `python -`) with the machine's facts to check passed as ONE JSON argument: no profile value is ever part of a shell string (the remote
command is `shlex.join(argv)`, see ssh.py). The script reads versions with importlib.metadata (it imports no torch,
so it takes milliseconds), looks for the paths, the network interface and its IPv4 address, and on the main machine
whether the rendezvous port is free and main_process_ip is one of its addresses. Each step has a timeout.

Standard library only (the layer rule of tuitrain/remote/): the caller turns a profile into `MachineSpec`s.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from tuitrain.remote.ssh import SshOptions, run

PACKAGES = ("torch", "transformers", "accelerate", "tuitrain")
SSH_KINDS = frozenset({"unresolved", "refused", "unreachable", "link-lost", "closed", "host-key-unknown",
                       "host-key-changed", "permission-denied", "timeout", "ssh-missing", "bad-host", "ssh"})

# Runs on each machine under its `python` (read from stdin): argv[1] is the JSON of what to look at; prints one JSON line.
PROBE = r"""
import json, os, socket, sys
a = json.loads(sys.argv[1])
out = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "executable": sys.executable}
try:
    from importlib import metadata
    versions = {}
    for name in a["packages"]:
        try:
            versions[name] = metadata.version(name)
        except Exception:
            versions[name] = None
    out["versions"] = versions
except Exception as exc:
    out["versions_error"] = str(exc)
wd = os.path.expanduser(a["workdir"]) if a.get("workdir") else None
out["workdir"] = None if wd is None else os.path.isdir(wd)
if wd and os.path.isdir(wd):
    os.chdir(wd)
out["paths"] = {p: os.path.exists(os.path.expanduser(p)) for p in a.get("paths", [])}
def v4(name):
    import fcntl, struct
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))
        return socket.inet_ntoa(raw[20:24])
    except OSError:
        return None
    finally:
        s.close()
try:
    out["interfaces"] = sorted(n for _, n in socket.if_nameindex())
except OSError:
    out["interfaces"] = None
if a.get("interface"):
    out["interface_address"] = v4(a["interface"])
if a.get("address"):
    try:
        ip = socket.gethostbyname(a["address"])
        b = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            b.bind((ip, 0))
            out["address_here"] = True
        except OSError:
            out["address_here"] = False
        finally:
            b.close()
        out["address_ip"] = ip
    except OSError as exc:
        out["address_here"] = None
        out["address_error"] = str(exc)
if a.get("port"):
    port = int(a["port"])
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.settimeout(0.5)
    listening = c.connect_ex(("127.0.0.1", port)) == 0
    c.close()
    free = not listening
    if free:
        b = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as torch's store binds: TIME_WAIT is no owner
        try:
            b.bind(("", port))
        except OSError:
            free = False
        finally:
            b.close()
    out["port_free"] = free
if a.get("gpus") is not None:
    try:  # tuitrain's own way in: NVML, or the recorded device table TUITRAIN_NVML_TABLE names
        from tuitrain.hardware.recorded import library_from_env
        nv = library_from_env(os.environ)
        if nv is None:
            import pynvml as nv
        nv.nvmlInit()
        try:
            out["gpu_count"] = nv.nvmlDeviceGetCount()
        finally:
            nv.nvmlShutdown()
    except Exception as exc:
        out["gpu_error"] = ("%s: %s" % (type(exc).__name__, exc)).strip()
print(json.dumps(out))
"""


@dataclass(frozen=True)
class MachineSpec:
    """What to check on one machine. `address`/`port`: the main machine's (main_process_ip, main_process_port)."""

    host: str
    rank: int
    python: str
    workdir: str | None = None
    interface: str | None = None
    paths: tuple[tuple[str, str], ...] = ()  # (profile key, path as the ranks will open it)
    address: str | None = None
    port: int | None = None
    gpus: tuple[int, ...] | None = None  # the NVML indices its ranks use (None: no GPU asked for, or not known)


@dataclass(frozen=True)
class Check:
    """One line of the doctor's table: `ok` True / False, or None when the check could not be made (an earlier
    check failed) or does not apply."""

    host: str
    rank: int
    name: str
    ok: bool | None
    detail: str
    fix: str | None = None

    def line(self, width: int = 0) -> str:
        mark = {True: "ok", False: "FAIL", None: "-"}[self.ok]
        machine = f"{self.host} (rank {self.rank})"
        text = f"{machine:<{width}}  {self.name:<9}  {mark:<4}  {self.detail}"
        return text + (f" — {self.fix}" if self.fix else "")

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "rank": self.rank, "check": self.name, "ok": self.ok, "detail": self.detail,
                "fix": self.fix}


@dataclass(frozen=True)
class Report:
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    def lines(self) -> list[str]:
        width = max((len(f"{c.host} (rank {c.rank})") for c in self.checks), default=0)
        return [c.line(width) for c in self.checks]


def local_versions(packages: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    """This machine's Python (major.minor.micro) and package versions, read without importing them."""
    out: dict[str, str | None] = {"python": ".".join(str(n) for n in sys.version_info[:3])}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def check_machine(spec: MachineSpec, expected: dict[str, str | None], options: SshOptions | None = None,
                  timeout: float = 20.0) -> list[Check]:
    """Every check of one machine (one SSH round trip, at most `timeout` seconds)."""
    def check(name: str, ok: bool | None, detail: str, fix: str | None = None) -> Check:
        return Check(spec.host, spec.rank, name, ok, detail, fix)

    argument = {"packages": list(PACKAGES), "workdir": spec.workdir, "paths": [p for _, p in spec.paths],
                "interface": spec.interface, "address": spec.address, "port": spec.port,
                "gpus": list(spec.gpus) if spec.gpus is not None else None}
    # the script goes in on stdin (`python - ARG`): the remote command line stays one short line
    result = run(spec.host, [spec.python, "-", json.dumps(argument)], timeout, options, input=PROBE)
    problem = result.problem
    if problem is not None and problem.kind in SSH_KINDS:
        return [check("ssh", False, problem.message.removeprefix(f"{spec.host}: "))]
    out = [check("ssh", True, f"reached without a prompt in {result.elapsed:.2f} s")]
    where = f"for {spec.host} in its [[distributed.machines]] table"
    if problem is not None and problem.kind in ("command-not-found", "not-executable"):
        out.append(check("python", False, f"{spec.python} {'not found' if problem.kind == 'command-not-found' else 'cannot be run'}"
                         " there, so tuitrain is not installed there",
                         f"install tuitrain in an environment on {spec.host} and set python = \"<its bin/python>\" "
                         + where))
        return out
    facts: dict[str, Any] | None = None
    if problem is None:
        try:
            facts = json.loads((result.stdout.strip().splitlines() or ["null"])[-1])
        except ValueError:
            facts = None
    if not isinstance(facts, dict):
        why = problem.message.removeprefix(f"{spec.host}: ") if problem else "it printed no answer"
        out.append(check("python", False, f"{spec.python} did not run the check: {why}",
                         f"check that it is a Python 3 interpreter, or set python = \"<its bin/python>\" {where}"))
        return out

    theirs, ours = facts.get("python"), expected.get("python")
    if _minor(theirs) != _minor(ours):
        out.append(check("python", False, f"Python {theirs} there, {ours} here ({facts.get('executable')})",
                         f"use a Python {_minor(ours)} environment there: set python = \"<its bin/python>\" {where}"))
    else:
        out.append(check("python", True, f"Python {theirs} ({facts.get('executable')})"))

    versions = facts.get("versions") or {}
    if versions.get("tuitrain") is None:
        out.append(check("packages", False, f"tuitrain is not installed in {spec.python} there",
                         f"install it there (the same version as here, {expected.get('tuitrain')}), or set "
                         f"python = \"<the bin/python of its environment>\" {where}"))
    else:
        differ = [f"{name} {versions.get(name) or 'missing'} there, {expected.get(name) or 'missing'} here"
                  for name in PACKAGES if versions.get(name) != expected.get(name)]
        if differ:
            out.append(check("packages", False, "; ".join(differ),
                             "install the same versions on every machine (pip install NAME==VERSION in its environment)"))
        else:
            out.append(check("packages", True, ", ".join(f"{n} {versions.get(n)}" for n in PACKAGES)))

    if spec.workdir:
        if facts.get("workdir"):
            out.append(check("folder", True, spec.workdir))
        else:
            out.append(check("folder", False, f"no folder {spec.workdir} there",
                             f"create it there, or set workdir = \"<a folder there>\" {where}"))
    found = facts.get("paths") or {}
    missing = [(key, path) for key, path in spec.paths if not found.get(path)]
    if missing:
        for key, path in missing:
            out.append(check("paths", False, f"{key}: no {path} there",
                             f"copy it to {spec.host} at that path (or put it on a folder every machine shares)"))
    elif spec.paths:
        out.append(check("paths", True, f"{len(spec.paths)} path(s) found: " + ", ".join(k for k, _ in spec.paths)))

    if spec.interface:
        names = facts.get("interfaces")
        address = facts.get("interface_address")
        if names is not None and spec.interface not in names:
            listed = ", ".join(names)
            out.append(check("interface", False, f"no interface {spec.interface} there (it has: {listed})",
                             "set network_interface to the one that reaches the other machines (`ip -br addr` there)"))
        elif not address:
            out.append(check("interface", False, f"{spec.interface} has no IPv4 address there",
                             "bring it up with an address, or set network_interface to the one that reaches the others"))
        else:
            out.append(check("interface", True, f"{spec.interface} carries {address}"))
    if spec.address:
        here = facts.get("address_here")
        if here is None:
            out.append(check("address", False, f"main_process_ip {spec.address} does not resolve there "
                             f"({facts.get('address_error')})", "give the main machine's IP address"))
        elif not here:
            out.append(check("address", False, f"main_process_ip {spec.address} is not an address of this machine",
                             f"set main_process_ip to {spec.host}'s address as the others reach it"))
        else:
            out.append(check("address", True, f"main_process_ip {spec.address} is this machine's"))
    if spec.gpus is not None:
        out.append(_gpu_check(spec, facts, where))
    if spec.port is not None:
        if facts.get("port_free"):
            out.append(check("port", True, f"port {spec.port} is free"))
        else:
            out.append(check("port", False, f"port {spec.port} is already in use there (the rendezvous would fail)",
                             "pick another main_process_port, or end what listens there"))
    return out


def _gpu_check(spec: MachineSpec, facts: dict[str, Any], where: str) -> Check:
    count = facts.get("gpu_count")
    if count is None:
        why = facts.get("gpu_error") or "NVML gave no answer"
        return Check(spec.host, spec.rank, "gpus", False, f"no NVIDIA GPU can be read there ({why})",
                     f"install the NVIDIA driver there, or set gpus = [] {where} for CPU ranks")
    absent = [g for g in spec.gpus or () if g >= count]
    if absent:
        has = ", ".join(str(i) for i in range(count)) or "none"
        return Check(spec.host, spec.rank, "gpus", False, f"GPU {', '.join(map(str, absent))} not there (it has "
                     f"{count}: {has}; numbers as nvidia-smi shows them)", f"list GPUs it has in gpus = [...] {where}")
    listed = ", ".join(map(str, spec.gpus)) if spec.gpus else f"all {count}"
    return Check(spec.host, spec.rank, "gpus", True, f"{count} GPU(s) there; its ranks use {listed}")


def doctor(machines: Sequence[MachineSpec], options: SshOptions | None = None, timeout: float = 20.0,
           expected: dict[str, str | None] | None = None) -> Report:
    """Check every machine in parallel; the report keeps the machines' order."""
    started = time.monotonic()
    wanted = expected if expected is not None else local_versions()
    if not machines:
        return Report([], 0.0)
    with ThreadPoolExecutor(max_workers=min(len(machines), 32)) as pool:
        results = list(pool.map(lambda spec: check_machine(spec, wanted, options, timeout), machines))
    return Report([c for checks in results for c in checks], time.monotonic() - started)
