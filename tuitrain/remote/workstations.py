"""Other workstations a user watches and drives from this terminal: the `[[workstations]]` of the
user's settings (`tuitrain.user_config`), each reached with the system ssh (`remote.ssh`, BatchMode, a timeout on
every step), where tuitrain's own CLI answers. Nothing is installed or left running there: each question is one
`python -m tuitrain …` that ends with its answer.

    [[workstations]]
    host = "gpu2"                      # an ssh destination: an alias of ~/.ssh/config, user@host
    python = "/opt/venv/bin/python"    # tuitrain's Python there (default: this one's path, as for machines)
    runs = "/data/runs"                # its runs folder (default: that machine's own default)
    ssh_config = "~/.ssh/lab_config"   # optional: an ssh_config for ssh -F
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tuitrain.remote import ssh
from tuitrain.user_config import UserConfigError, config_path, read_user_config

KEYS = ("host", "python", "runs", "ssh_config")
ALL_HOSTS_SECONDS = 30.0  # what one box may take to answer `gpus` or `queue` (--all-hosts)
LOCAL = "local"  # the host column's word for this machine (`runs --all-hosts`, the app's Home)
T = TypeVar("T")
CHECK_SECONDS = 20.0


@dataclass(frozen=True)
class Workstation:
    host: str
    python: str
    runs: str | None = None
    ssh_config: str | None = None

    def tuitrain(self, args: Sequence[str]) -> list[str]:
        """The argv of tuitrain's CLI there, with its runs folder."""
        runs = ["--runs-dir", self.runs] if self.runs else []
        return [self.python, "-m", "tuitrain", *runs, *args]

    def options(self) -> ssh.SshOptions:
        return ssh.SshOptions(config=str(Path(self.ssh_config).expanduser()) if self.ssh_config else None)


def workstations(config: Mapping[str, Any] | None = None, path: Path | None = None) -> list[Workstation]:
    """The configured workstations, in the file's order; a wrong entry is a UserConfigError naming file and key."""
    path = path or config_path()
    config = read_user_config(path) if config is None else config
    entries = config.get("workstations", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UserConfigError(f"{path}: workstations: write each as a [[workstations]] table with host = \"NAME\"")
    out: list[Workstation] = []
    for number, entry in enumerate(entries):
        where = f"{path}: workstations[{number}]"
        unknown = sorted(set(entry) - set(KEYS))
        if unknown:
            raise UserConfigError(f"{where}.{unknown[0]}: not a workstation key; the keys are {', '.join(KEYS)}")
        for key in KEYS:
            if key in entry and not isinstance(entry[key], str):
                raise UserConfigError(f"{where}.{key}: must be a string, e.g. {key} = \"…\"")
        host = entry.get("host")
        if not host:
            raise UserConfigError(f"{where}.host: missing; name the machine as ssh does, e.g. host = \"gpu2\"")
        why = ssh.check_host(host)
        if why:
            raise UserConfigError(f"{where}.host: {why}")
        if any(w.host == host for w in out):
            raise UserConfigError(f"{where}.host: {host!r} is listed twice; keep one")
        out.append(Workstation(host, entry.get("python") or sys.executable, entry.get("runs") or None,
                               entry.get("ssh_config") or None))
    return out


def configured() -> tuple[list[Workstation], str | None]:
    """The workstations of the settings, or none and why the settings cannot be read (one line: file, key, fix)."""
    try:
        return workstations(), None
    except UserConfigError as exc:
        return [], str(exc)


def find(host: str, known: Sequence[Workstation], path: Path | None = None) -> Workstation:
    for station in known:
        if station.host == host:
            return station
    listed = ", ".join(w.host for w in known) or "none"
    raise UserConfigError(f"{host!r} is not a workstation of {path or config_path()} (listed: {listed}); add it as "
                          f"[[workstations]] host = \"{host}\"")


def run_on(station: Workstation, args: Sequence[str], timeout: float) -> ssh.RemoteResult:
    return ssh.run(station.host, station.tuitrain(args), timeout, station.options())


def at_once(stations: Sequence[Workstation], ask: Callable[[Workstation], T]) -> list[tuple[Workstation, T]]:
    """`ask` of every workstation at once, answers in the stations' order: a slow or dead one costs its own
    timeout, never the others'."""
    answers: dict[int, T] = {}

    def one(number: int, station: Workstation) -> None:
        answers[number] = ask(station)

    threads = [threading.Thread(target=one, args=(n, s), daemon=True) for n, s in enumerate(stations)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [(station, answers[n]) for n, station in enumerate(stations)]


def run_everywhere(stations: Sequence[Workstation], args: Sequence[str], timeout: float
                   ) -> list[tuple[Workstation, ssh.RemoteResult]]:
    """The same question to every workstation at once."""
    return at_once(stations, lambda station: run_on(station, args, timeout))


def answers_everywhere(stations: Sequence[Workstation], args: Sequence[str], timeout: float = ALL_HOSTS_SECONDS
                       ) -> list[tuple[str, str | None, str]]:
    """Each workstation's answer to `tuitrain ARGS`, all asked at once (`gpus`, `queue` with --all-hosts; the app's
    queue screen): (its host, why it did not answer in one line or None, what it printed)."""
    return [(station.host, problem_line(station, result), result.stdout)
            for station, result in run_everywhere(stations, args, timeout)]


def problem_line(station: Workstation, result: ssh.RemoteResult) -> str | None:
    """What went wrong on that workstation, in one line naming it, or None."""
    if result.problem is not None and result.problem.kind != "exit":
        return str(result.problem)
    if result.returncode == 0:
        return None
    said = [line for line in result.stderr.splitlines() if line.strip()]
    if any("No module named tuitrain" in line for line in said):
        return f"{station.host}: tuitrain is not installed for {station.python} there; install it there, or set python"
    last = said[-1].removeprefix("tuitrain: error: ") if said else f"exited {result.returncode}"
    return f"{station.host}: {last}"


# run there by the workstation's python: the profile on stdin, written into a new temp folder there, its path out
_WRITE_SENT = ("import pathlib, sys, tempfile; folder = pathlib.Path(tempfile.mkdtemp(prefix='tuitrain-sent-')); "
               "path = folder / sys.argv[1]; path.write_bytes(sys.stdin.buffer.read()); print(path)")
_REMOVE_SENT = "import shutil, sys, pathlib; shutil.rmtree(pathlib.Path(sys.argv[1]).parent, ignore_errors=True)"


def send_file(station: Workstation, name: str, text: str, timeout: float) -> tuple[str | None, str | None]:
    """`text` written there as `name` in a new temp folder: (its path there, None), or (None, why not: one line)."""
    result = ssh.run(station.host, [station.python, "-c", _WRITE_SENT, name], timeout, station.options(), input=text)
    problem = problem_line(station, result)
    path = result.stdout.strip().splitlines()[-1] if problem is None and result.stdout.strip() else None
    return path, problem or (None if path else f"{station.host}: the profile could not be written there")


def remove_sent(station: Workstation, path: str, timeout: float) -> None:
    """The temp folder `send_file` made there, removed (a refused profile leaves nothing behind)."""
    ssh.run(station.host, [station.python, "-c", _REMOVE_SENT, path], timeout, station.options())


def version_problem(station: Workstation, theirs: str, version: str) -> str | None:
    """Why that box's tuitrain (version `theirs`) cannot answer this one's (`version`), or None."""
    if theirs == version:
        return None
    return (f"{station.host}: tuitrain {theirs} there, {version} here; install the same version on both "
            f"(pip install tuitrain=={version})")


def check(station: Workstation, version: str, timeout: float = CHECK_SECONDS) -> str | None:
    """Why this workstation cannot be watched from here, in one line; None when it can."""
    found = run_on(station, ["--version"], timeout)
    problem = problem_line(station, found)
    if problem:
        return problem
    problem = version_problem(station, found.stdout.split()[-1] if found.stdout.split() else "?", version)
    if problem:
        return problem
    return problem_line(station, run_on(station, ["runs", "--json"], timeout))
