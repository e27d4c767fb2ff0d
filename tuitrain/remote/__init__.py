"""Other machines: the SSH transport (ssh.py); later the node agent's remote side, relay and doctor checks.

Standard library only; never imports torch or the TUI."""

from tuitrain.remote.ssh import (
    Problem,
    RemoteResult,
    SshOptions,
    classify,
    close_shared,
    remote_command,
    run,
    ssh_argv,
    start,
    with_env,
)

__all__ = ["Problem", "RemoteResult", "SshOptions", "classify", "close_shared", "remote_command", "run", "ssh_argv",
           "start", "with_env"]
