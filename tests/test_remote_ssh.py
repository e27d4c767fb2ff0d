"""The SSH transport (tuitrain/remote/ssh.py), against real hosts: network namespaces with their own sshd
(tests/hosts.py). Every failure must come back as one line naming the machine, within a bounded time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import patient
from tuitrain.remote import SshOptions, classify, close_shared, remote_command, run, ssh_argv, start, with_env

PYTHON = sys.executable  # the namespaces share the file system: the remote Python is this venv's


def one_line_naming(problem: object, host: str) -> str:
    text = str(problem)
    assert "\n" not in text and "Traceback" not in text, text
    assert host in text, text
    return text


# -- argv and classification (no hosts needed) ----------------------------------------------------------------


def test_ssh_argv_is_batch_mode_with_one_quoted_remote_command():
    argv = ssh_argv("node1", ["echo", "a b", "$(id)"], SshOptions(config="/x/ssh_config", connect_timeout=4))
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and "ConnectTimeout=4" in argv
    assert argv[argv.index("-F") + 1] == "/x/ssh_config"
    assert argv[-3:] == ["node1", "--", "echo 'a b' '$(id)'"]
    with pytest.raises(TypeError):
        remote_command("echo hi")  # a shell string is refused: argv lists only
    for bad in ("-oProxyCommand=touch /tmp/x", "", "node 1"):
        with pytest.raises(ValueError):
            ssh_argv(bad, ["true"])
    with pytest.raises(ValueError):
        with_env({"A B": "1"}, ["true"])


def test_connection_reuse_uses_a_private_control_folder(tmp_path: Path):
    short = Path(tempfile.mkdtemp(prefix="ttc", dir="/tmp"))  # socket paths must stay short
    try:
        argv = ssh_argv("node1", ["true"], SshOptions(reuse=True, control_dir=short / "ctl"))
        assert "ControlMaster=auto" in argv and f"ControlPath={short / 'ctl'}/%C" in argv
        assert (short / "ctl").stat().st_mode & 0o077 == 0
    finally:
        shutil.rmtree(short)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    assert not any("ControlMaster" in a for a in ssh_argv("node1", ["true"], SshOptions(reuse=True, control_dir=shared)))


CHANGED = """@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Host key for 10.0.0.2 has changed and you have requested strict checking.
Host key verification failed.
"""


@pytest.mark.parametrize("returncode, stderr, kind", [
    (0, "", None),
    (255, "ssh: Could not resolve hostname gpu7: Name or service not known\n", "unresolved"),
    (255, "ssh: Could not resolve hostname gpu7: Temporary failure in name resolution\n", "unresolved"),
    (255, "ssh: connect to host 10.0.0.2 port 22: Connection refused\n", "refused"),
    (255, "ssh: connect to host 10.0.0.2 port 22: No route to host\n", "unreachable"),
    (255, "ssh: connect to host 10.0.0.2 port 22: Connection timed out\n", "unreachable"),
    (255, "ssh: connect to host 10.0.0.2 port 22: Network is unreachable\n", "unreachable"),
    (255, "Connection timed out during banner exchange\nConnection to UNKNOWN port 65535 timed out\n", "unreachable"),
    (255, ("No ED25519 host key is known for 10.0.0.2 and you have requested strict checking.\n"
           "Host key verification failed.\n"), "host-key-unknown"),
    (255, CHANGED, "host-key-changed"),
    (255, "root@10.0.0.2: Permission denied (publickey).\n", "permission-denied"),
    (255, "me@gpu7: Permission denied (publickey,password).\n", "permission-denied"),
    (255, "kex_exchange_identification: read: Connection reset by peer\n", "closed"),
    (255, "Connection closed by 10.0.0.2 port 22\n", "closed"),
    (255, "Timeout, server 10.0.0.2 not responding.\n", "link-lost"),
    (255, "Connection to 10.0.0.2 closed by remote host.\n", "link-lost"),
    (255, "", "ssh"),
    (127, "bash: line 1: nosuch: command not found\n", "command-not-found"),
    (127, "env: 'nosuch': No such file or directory\n", "command-not-found"),
    (126, "sh: 1: ./x: Permission denied\n", "not-executable"),
    (3, "boom\n", "exit"),
    (255, "my own tool failed\n", "exit"),
])
def test_classify_names_the_host_and_the_fix_in_one_line(returncode, stderr, kind):
    problem = classify("gpu7", returncode, stderr, ["env", "A=1", "nosuch", "--flag"])
    if kind is None:
        assert problem is None
        return
    assert problem is not None and problem.kind == kind, problem
    text = one_line_naming(problem, "gpu7")
    if kind == "command-not-found":
        assert "`nosuch`" in text
    if kind == "host-key-changed":
        assert "ssh-keygen -R 10.0.0.2" in text


# -- real hosts -------------------------------------------------------------------------------------------------


@pytest.fixture
def opts(hosts) -> SshOptions:
    return SshOptions(config=hosts.ssh_config, connect_timeout=3)


def test_a_command_runs_on_each_host_and_sees_itself(hosts, opts):
    code = "import os, socket; print(socket.gethostname()); print(os.popen('ip -4 -o addr show dev net0').read())"
    for name in ("node1", "node2"):
        result = run(name, [PYTHON, "-c", code], timeout=30, options=opts)
        assert result.ok, result
        assert result.stdout.splitlines()[0] == name
        assert f"inet {hosts[name].address}/24" in result.stdout
        assert result.elapsed < 30


def test_argv_arrives_exactly_with_no_shell_interpretation(hosts, opts, tmp_path: Path):
    marker = tmp_path / "pwned"
    tricky = ["a b", "  leading and trailing  ", "it's", 'say "hi"', f"x; touch {marker}", f"$(touch {marker})",
              f"`touch {marker}`", "line1\nline2\n", "", "*", "~", "$HOME", "back\\slash", "--", "-c", "tab\there",
              "ünïcödé", "&& || | > <", "#not a comment"]
    result = run("node1", [PYTHON, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *tricky],
                 timeout=30, options=opts)
    assert result.ok, result
    assert json.loads(result.stdout) == tricky
    assert not marker.exists()


def test_env_reaches_the_remote_command(hosts, opts):
    result = run("node2", with_env({"TT_VALUE": "a b;$(x)"}, [PYTHON, "-c", "import os; print(os.environ['TT_VALUE'])"]),
                 timeout=30, options=opts)
    assert result.ok and result.stdout == "a b;$(x)\n", result


def bounded(result, host: str, kind: str, seconds: float) -> None:
    assert result.problem is not None and result.problem.kind == kind, result
    one_line_naming(result.problem, host)
    assert result.elapsed < seconds, result


def test_an_unreachable_address_and_an_unknown_name(hosts, opts):
    bounded(run(f"{hosts.subnet}.250", ["true"], timeout=20, options=opts), f"{hosts.subnet}.250", "unreachable", 10)
    bounded(run("no-such-machine.invalid", ["true"], timeout=20, options=opts), "no-such-machine.invalid",
            "unresolved", 10)


def fails_until_mended(host: str, kind: str, opts: SshOptions, breaks: Callable[[str], None],
                       mends: Callable[[str], None]) -> None:
    """With `breaks(host)` done, a command on host fails as `kind` within 10 s; once `mends(host)`
    has put it right (always, even when the failure was not the one expected), the host answers again."""
    breaks(host)
    try:
        bounded(run(host, ["true"], timeout=20, options=opts), host, kind, 10)
    finally:
        mends(host)
    assert run(host, ["true"], timeout=20, options=opts).ok


def test_a_host_whose_link_is_down_is_unreachable(hosts, opts):
    fails_until_mended("node2", "unreachable", opts, breaks=hosts.link_down, mends=hosts.link_up)


def test_a_host_without_sshd_refuses(hosts, opts):
    fails_until_mended("node2", "refused", opts, breaks=hosts.kill_sshd, mends=hosts.start_sshd)


def test_host_key_unknown_or_changed(hosts, tmp_path: Path):
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    unknown = SshOptions(config=hosts.ssh_config, connect_timeout=3, extra=(f"UserKnownHostsFile={empty}",))
    bounded(run("node1", ["true"], timeout=20, options=unknown), "node1", "host-key-unknown", 10)
    wrong = tmp_path / "known_hosts_wrong"  # node1's address with node2's key: what a reinstalled machine looks like
    wrong.write_text(f"{hosts['node1'].address} ssh-ed25519 {hosts['node2'].host_key_pub}\n")
    changed = SshOptions(config=hosts.ssh_config, connect_timeout=3, extra=(f"UserKnownHostsFile={wrong}",))
    bounded(run("node1", ["true"], timeout=20, options=changed), "node1", "host-key-changed", 10)


def test_a_user_without_a_key_is_denied_never_prompted(hosts, opts, tmp_path: Path):
    bounded(run("nobody@node1", ["true"], timeout=20, options=opts), "nobody@node1", "permission-denied", 10)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")], check=True,
                   timeout=30)
    config = tmp_path / "ssh_config"  # IdentityFile adds up across -o and config files: a config of its own
    config.write_text(f"Host node1\n  HostName {hosts['node1'].address}\n  User root\n  IdentitiesOnly yes\n"
                      f"  IdentityFile {tmp_path / 'stranger'}\n  UserKnownHostsFile {hosts.known_hosts}\n")
    stranger = SshOptions(config=config, connect_timeout=3)
    bounded(run("node1", ["true"], timeout=20, options=stranger), "node1", "permission-denied", 10)


def test_a_missing_remote_command(hosts, opts):
    result = run("node1", ["tuitrain-no-such-command", "--version"], timeout=20, options=opts)
    bounded(result, "node1", "command-not-found", 10)
    assert "`tuitrain-no-such-command`" in str(result.problem)


def test_a_command_past_its_timeout_is_stopped(hosts, opts):
    started = time.monotonic()
    result = run("node1", ["sleep", "41.5"], timeout=2, options=opts)
    assert result.timed_out and result.returncode is None
    bounded(result, "node1", "timeout", 6)
    assert time.monotonic() - started < 6
    # Killing the client does not end the remote command (no terminal, no SIGHUP): the node agent must see to it.
    for pid in hosts.pids("node1"):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"41.5"]:
                os.kill(pid, 9)
        except (FileNotFoundError, ProcessLookupError):
            pass


def test_connection_reuse_shares_one_connection(hosts, tmp_path: Path):
    assert not any("ControlMaster" in a for a in ssh_argv("node1", ["true"], SshOptions(
        reuse=True, control_dir=tmp_path / ("long" * 20))))  # too long for a socket path: no sharing, no error
    ctl = Path(tempfile.mkdtemp(prefix="ttc", dir="/tmp"))
    shared = SshOptions(config=hosts.ssh_config, connect_timeout=3, reuse=True, control_dir=ctl, control_persist=20)
    try:
        first = run("node1", ["hostname"], timeout=20, options=shared)
        assert first.ok and first.stdout.strip() == "node1", first
        assert len(list(ctl.iterdir())) == 1  # the master's socket
        again = [run("node1", ["hostname"], timeout=20, options=shared) for _ in range(3)]
        assert all(r.ok and r.stdout.strip() == "node1" for r in again), again
        elapsed = [r.elapsed for r in again]
    finally:
        close_shared("node1", shared)
    deadline = time.monotonic() + patient(10)  # the master acknowledges `-O exit`, then removes its socket
    while list(ctl.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(ctl.iterdir()) == []
    ctl.rmdir()
    print(f"first connection {first.elapsed:.2f} s, shared {elapsed}")


GLOO = """
import socket, sys
from datetime import timedelta
import torch
import torch.distributed as dist
rank, address, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method=f"tcp://{address}:{port}", rank=rank, world_size=2,
                        timeout=timedelta(seconds=60))
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
print(socket.gethostname(), rank, value.item(), flush=True)
dist.destroy_process_group()
"""


def test_two_gloo_ranks_meet_across_two_hosts(hosts, opts):
    main = hosts["node1"].address
    procs = {}
    try:
        for rank, name in enumerate(("node1", "node2")):
            argv = with_env({"GLOO_SOCKET_IFNAME": hosts[name].ifname},
                            [PYTHON, "-c", GLOO, str(rank), main, "29517"])
            procs[name] = start(name, argv, opts)
        outputs = {name: proc.communicate(timeout=150) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    for rank, name in enumerate(("node1", "node2")):
        out, err = outputs[name]
        assert procs[name].returncode == 0, (name, classify(name, procs[name].returncode, err), err[-2000:])
        assert out.split() == [name, str(rank), "3.0"], (out, err[-2000:])


def test_a_second_interface_that_reaches_no_one(hosts, opts):
    """The multi-NIC host of later tests: net1 has an address, but only net0 reaches the other hosts."""
    if "multi" not in hosts:
        hosts.add("multi")
        hosts.add_interface("multi", "net1")
    dead = hosts.exec("multi", ["ip", "-4", "-o", "addr", "show", "dev", "net1"]).stdout.split()[3].split("/")[0]
    probe = "import socket, sys\ntry:\n socket.create_connection((sys.argv[1], 22), timeout=2).close(); print('open')\n" \
            "except OSError as e:\n print('closed')"
    assert run("node1", [PYTHON, "-c", probe, hosts["multi"].address], timeout=20, options=opts).stdout == "open\n"
    assert run("node1", [PYTHON, "-c", probe, dead], timeout=20, options=opts).stdout == "closed\n"
    assert run("multi", ["hostname"], timeout=20, options=opts).stdout == "multi\n"


def test_a_link_that_drops_mid_command_ends_ssh_within_the_keepalive(hosts):
    """ServerAlive turns a silent network cut into an exit within interval x count seconds, named as such."""
    quick = SshOptions(config=hosts.ssh_config, connect_timeout=3, alive_interval=1, alive_count=2)
    proc = start("node2", ["sleep", "42.5"], quick)
    try:
        time.sleep(1.5)  # connected and running
        assert proc.poll() is None, proc.communicate(timeout=5)
        hosts.link_down("node2")
        cut = time.monotonic()
        _, err = proc.communicate(timeout=20)
        assert time.monotonic() - cut < 8
    finally:
        hosts.link_up("node2")
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    problem = classify("node2", proc.returncode, err, ["sleep", "42.5"])
    assert problem is not None and problem.kind == "link-lost", (proc.returncode, err)
    one_line_naming(problem, "node2")
    for pid in hosts.pids("node2"):  # the remote sleep outlives its link (see the timeout test)
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"42.5"]:
                os.kill(pid, 9)
        except (FileNotFoundError, ProcessLookupError):
            pass


def test_without_root_the_hosts_skip_with_one_line(monkeypatch):
    import hosts as hosts_module

    monkeypatch.setattr(hosts_module.os, "geteuid", lambda: 1000)
    reason = hosts_module.ensure_tools() or hosts_module.cannot_make_hosts()
    assert reason == "namespace hosts need root (ip netns, veth, sshd)"


def test_a_command_is_named_on_one_line_whatever_its_argv_holds():
    from tuitrain.remote.ssh import _short

    assert "\n" not in _short(["python", "-c", "import os\nprint(1)"])
