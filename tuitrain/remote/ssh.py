"""The SSH transport: the system `ssh` client, run with argv lists, a timeout on every step, and errors as values.

Why the system client (and not a Python SSH library): the user's `~/.ssh/config` (aliases, users, ports, jump
hosts), their agent and their known_hosts just work, exactly as in their terminal.

The remote command is ONE string, `shlex.join(argv)`, which the remote login shell (POSIX `sh` family) splits back
into exactly that argv: no profile value is ever pasted into a shell string. `BatchMode=yes` turns every prompt
(password, passphrase, unknown host key) into an error, which `classify` names in one line with its fix.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SSH = "ssh"
# A Unix socket path holds 107 bytes; ssh adds "/" + %C (40 hex) + a temporary ".XXXXXXXXXXXXXXXX" while binding.
_CONTROL_DIR_MAX = 107 - 1 - 40 - 17
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class SshOptions:
    """How to reach machines. `config` is an ssh_config for `-F` (None: the user's own ~/.ssh/config).
    `reuse` shares one connection per machine between commands (ControlMaster) through sockets in
    `control_dir` (default: a private folder in the temp dir), kept `control_persist` seconds after the last use.
    `extra` are more `-o KEY=VALUE` options, given before tuitrain's own (ssh takes the first value of each)."""

    config: str | Path | None = None
    connect_timeout: int = 10
    alive_interval: int = 5
    alive_count: int = 3
    reuse: bool = False
    control_dir: str | Path | None = None
    control_persist: int = 60
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class Problem:
    """Why a remote step failed, as one line a person can act on (it names the machine and the fix)."""

    kind: str  # unresolved, refused, unreachable, link-lost, closed, host-key-unknown, host-key-changed,
    #            permission-denied, command-not-found, not-executable, timeout, ssh-missing, bad-host, ssh, exit
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class RemoteResult:
    host: str
    argv: list[str]
    returncode: int | None  # None when it was stopped (timeout) or never started
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool = False
    problem: Problem | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and self.returncode == 0


# -- argv -----------------------------------------------------------------------------------------------------


def check_host(host: str) -> str | None:
    """Why `host` cannot be an ssh destination, or None. (Anything ssh accepts is fine: aliases, user@host.)"""
    if not host or not host.strip():
        return "the machine's host is empty: give an SSH destination such as node1 or user@10.0.0.2"
    if host.startswith("-"):
        return f"host {host!r} starts with '-': ssh would read it as an option; give an SSH destination"
    if any(ch.isspace() or ord(ch) < 32 for ch in host):
        return f"host {host!r} contains whitespace or control characters: give an SSH destination"
    return None


def control_dir(options: SshOptions) -> Path:
    """The private folder for connection-sharing sockets (made 0700; refused if someone else owns it)."""
    path = Path(options.control_dir) if options.control_dir else Path(tempfile.gettempdir()) / f"tuitrain-ssh-{os.getuid()}"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise PermissionError(f"{path} must be owned by you and private (chmod 700) to hold SSH control sockets")
    return path


def ssh_options(options: SshOptions) -> list[str]:
    """The options tuitrain always gives ssh (after the caller's `extra`: ssh keeps the first value it sees)."""
    argv: list[str] = []
    for extra in options.extra:
        argv += ["-o", extra]
    if options.config is not None:
        argv += ["-F", str(options.config)]
    argv += [
        "-T",  # never a terminal: stdout and stderr stay apart, nothing waits for input
        "-o", "BatchMode=yes",
        "-o", f"ConnectTimeout={int(options.connect_timeout)}",
        "-o", f"ServerAliveInterval={int(options.alive_interval)}",
        "-o", f"ServerAliveCountMax={int(options.alive_count)}",
        "-o", "ClearAllForwardings=yes",
    ]
    if options.reuse:
        try:
            folder = control_dir(options)
        except OSError:
            folder = None  # no private folder: go without sharing rather than share insecurely
        if folder is not None and len(str(folder)) > _CONTROL_DIR_MAX:
            folder = None  # the socket path would not fit in a Unix socket address: go without sharing
        if folder is not None:
            argv += ["-o", "ControlMaster=auto", "-o", f"ControlPath={folder}/%C",
                     "-o", f"ControlPersist={int(options.control_persist)}"]
    return argv


def remote_command(argv: Sequence[str]) -> str:
    """The one command line the remote shell runs: it splits back into exactly `argv`."""
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError("the remote command must be a non-empty list of strings (an argv), never a shell string")
    return shlex.join(argv)


def with_env(env: Mapping[str, str], argv: Sequence[str]) -> list[str]:
    """argv run with extra environment variables on the remote side (`env K=V ... argv`)."""
    for name in env:
        if not _ENV_NAME.match(name):
            raise ValueError(f"not an environment variable name: {name!r}")
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv]


def ssh_argv(host: str, argv: Sequence[str], options: SshOptions | None = None) -> list[str]:
    """`ssh [options] HOST -- 'remote command'` as an argv list for subprocess (never a shell)."""
    reason = check_host(host)
    if reason:
        raise ValueError(reason)
    return [SSH, *ssh_options(options or SshOptions()), host, "--", remote_command(argv)]


# -- what went wrong ------------------------------------------------------------------------------------------


def _program(argv: Sequence[str]) -> str:
    """The program an argv runs (past `env` and its VAR=VALUE words)."""
    words = list(argv)
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
        while words and ("=" in words[0] or words[0].startswith("-")):
            words = words[1:]
    return words[0] if words else (argv[0] if argv else "?")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


_CONNECT = re.compile(r"connect to host (\S+) port (\d+): (.+)")


def classify(host: str, returncode: int | None, stderr: str, argv: Sequence[str] = ()) -> Problem | None:
    """Read ssh's exit status and stderr: None when the command ran and succeeded, else the Problem in one line.

    Exit 255 is ssh's own failure (recognised from its messages); 127/126 are the remote shell's "not found" and
    "cannot execute"; any other non-zero status is the remote command's own (kind "exit")."""
    if returncode == 0:
        return None
    text = stderr or ""
    low = text.lower()
    if returncode == 255 or returncode is None:
        if "could not resolve hostname" in low:
            return Problem("unresolved", f"{host}: host name not resolved — check its spelling, or add a `Host {host}` "
                                         "entry with its HostName to ~/.ssh/config")
        if "remote host identification has changed" in low or "host key for" in low and "has changed" in low:
            named = re.search(r"Host key for (\S+) has changed", text)
            return Problem("host-key-changed", f"{host}: its host key has CHANGED since it was recorded (a reinstalled "
                                               f"machine, or someone in between) — if expected, run `ssh-keygen -R "
                                               f"{named.group(1) if named else host}` and connect once with plain "
                                               f"`ssh {host}` to accept the new key")
        if "host key verification failed" in low or "host key is known for" in low:
            named = re.search(r"host key is known for (\S+)", text)
            return Problem("host-key-unknown", f"{host}: its host key is not in known_hosts and tuitrain never answers "
                                               f"the prompt — connect once with plain `ssh {host}` and check the "
                                               f"fingerprint (or `ssh-keyscan {named.group(1) if named else host}`)")
        if "permission denied" in low and ("publickey" in low or "password" in low or "keyboard" in low):
            methods = re.search(r"permission denied \(([^)]*)\)", low)
            how = f" ({methods.group(1)})" if methods else ""
            return Problem("permission-denied", f"{host}: permission denied{how}: it does not accept your key — install "
                                                f"it there (`ssh-copy-id {host}`) or load it into your agent "
                                                "(`ssh-add`); tuitrain never types passwords")
        connect = _CONNECT.search(text)
        if connect and "refused" in connect.group(3).lower():
            return Problem("refused", f"{host}: connection refused on port {connect.group(2)} — no SSH server listens "
                                      "there: start sshd on it, or set the right Port in ~/.ssh/config")
        if connect or "no route to host" in low or "network is unreachable" in low:
            why = connect.group(3).strip() if connect else _last_line(text)
            return Problem("unreachable", f"{host}: unreachable ({why}) — check that the machine is up, its address, "
                                          "and the network or VPN between here and there")
        if "kex_exchange_identification" in low or "connection closed by" in low \
                or "banner exchange" in low:
            why = _last_line(text)
            if "timed out" in low:
                return Problem("unreachable", f"{host}: unreachable ({why}) — check that the machine is up, its "
                                              "address, and the network between here and there")
            return Problem("closed", f"{host}: the SSH server closed the connection before login ({why}) — check "
                                     "sshd there (its logs, MaxStartups, AllowUsers)")
        if "not responding" in low or "closed by remote host" in low or "broken pipe" in low \
                or "connection reset" in low or "client_loop" in low:
            return Problem("link-lost", f"{host}: the SSH connection dropped ({_last_line(text)}) — check that the "
                                        "machine is still up and the network between here and there")
        if returncode is None:
            return Problem("ssh", f"{host}: ssh ended without a status ({_last_line(text) or 'no message'})")
        if not text.strip():
            return Problem("ssh", f"{host}: ssh failed (exit 255) without a message (LogLevel QUIET or ERROR in "
                                  f"ssh_config hides why) — run `ssh -v {host} true` to see why")
        if any(word in low for word in ("ssh:", "ssh_", "kex", "host key", "connection", "channel")):
            return Problem("ssh", f"{host}: ssh failed: {_last_line(text)} — run `ssh {host} true` to see why")
    program = _program(argv)
    if returncode == 127:
        return Problem("command-not-found", f"{host}: `{program}` not found there — install it on {host}, or give its "
                                            "full path")
    if returncode == 126:
        return Problem("not-executable", f"{host}: `{program}` cannot be run there (not executable or permission "
                                         f"denied) — check it on {host}")
    last = _last_line(text)
    return Problem("exit", f"{host}: `{program}` exited with {returncode}" + (f": {last}" if last else ""))


# -- running --------------------------------------------------------------------------------------------------


def kill_group(proc: subprocess.Popen, wait: float = 0.0) -> None:
    """SIGKILL an ssh client started by `start` (in a session of its own) with its whole process group, then
    reap it for up to `wait` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    if wait > 0:
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


def _short(argv: Sequence[str], limit: int = 60) -> str:
    text = " ".join(shlex.join(argv).split())  # one line, whatever newlines the argv holds
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run(host: str, argv: Sequence[str], timeout: float, options: SshOptions | None = None,
        input: str | None = None) -> RemoteResult:
    """Run argv on host and wait at most `timeout` seconds (connecting included). Never raises for remote
    trouble: the result's `problem` says what went wrong. On timeout ssh is killed and `timed_out` is set."""
    started = time.monotonic()
    argv = list(argv)

    def result(returncode: int | None, out: str, err: str, problem: Problem | None, timed_out: bool = False
               ) -> RemoteResult:
        return RemoteResult(host, argv, returncode, out, err, time.monotonic() - started, timed_out, problem)

    try:
        command = ssh_argv(host, argv, options)
    except ValueError as error:
        return result(None, "", "", Problem("bad-host", str(error)))
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True)
    except OSError as error:
        return result(None, "", "", Problem("ssh-missing", f"{host}: cannot run the ssh client ({error.strerror}) — "
                                                           "install OpenSSH's client (`ssh`) on this machine"))
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        try:
            out, err = proc.communicate(timeout=3)
        except subprocess.TimeoutExpired:  # something else holds the pipes: give up on the rest of the output
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe:
                    pipe.close()
            proc.wait(timeout=3)
            out, err = "", ""
        problem = Problem("timeout", f"{host}: `{_short(argv)}` did not finish within {timeout:g} s and was stopped — "
                                     f"check the machine (`ssh {host} true`), or allow it more time")
        return result(None, out or "", err or "", problem, timed_out=True)
    return result(proc.returncode, out, err, classify(host, proc.returncode, err, argv))


def start(host: str, argv: Sequence[str], options: SshOptions | None = None, *,
          stdin: int | None = subprocess.DEVNULL, stdout: int | None = subprocess.PIPE,
          stderr: int | None = subprocess.PIPE, text: bool = True) -> subprocess.Popen:
    """Start a long-running remote command; the caller owns the Popen (wait with a timeout, then `classify` its
    status and stderr). ssh runs in its own process group, so a signal to the caller's group does not reach it.
    Raises ValueError for a host that is no SSH destination, OSError when there is no ssh client."""
    return subprocess.Popen(ssh_argv(host, argv, options), stdin=stdin, stdout=stdout, stderr=stderr, text=text,
                            start_new_session=True)


def close_shared(host: str, options: SshOptions, timeout: float = 10) -> None:
    """End the shared connection to host, if any (`ssh -O exit`)."""
    if not options.reuse or check_host(host):
        return
    try:
        subprocess.run([SSH, *ssh_options(options), "-O", "exit", host], stdin=subprocess.DEVNULL,
                       check=False, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        pass
