"""A profile of this machine started on another workstation, for `tuitrain run --host` and the app's
launch dialog alike: sent as text (frozen here by the caller), checked there by that box's `tuitrain validate`
(its data files must be at the same paths there: no data is sent), then started there detached. A refusal is
lines naming the host; nothing is started and nothing is left there."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuitrain.remote.workstations import Workstation, problem_line, remove_sent, run_on, send_file

SEND_SECONDS = 30.0  # sending a profile, or removing it
CHECK_THERE_SECONDS = 120.0  # `tuitrain validate` there (it reads the data files' heads)
START_THERE_SECONDS = 180.0  # `tuitrain run --detach` there


@dataclass(frozen=True)
class Launched:
    """What a launch there came to: the run's id there, or why not (lines; the last one says what it means)."""

    run_id: str | None = None
    problems: tuple[str, ...] = ()
    said: str = ""  # what `tuitrain run` there said on stderr (its doctor's notes)


def problems_there(host: str, sent: str, said: str) -> list[str]:
    """What `tuitrain validate` of the sent profile said there, one line each naming the host, without the sent
    copy's place (its lines are not the user's file's) and without the count."""
    lines = []
    for line in said.splitlines():
        if not line.strip() or re.fullmatch(r"\d+ error\(s\).*", line.strip()):
            continue
        if line.startswith(sent):
            line = re.sub(r"^:(\d+:\d+:)?\s*", "", line[len(sent):])
        folder = str(Path(sent).parent)
        if folder in line:  # a hint naming the sent copy's folder: its paths are absolute already
            line = line[:line.rfind("; ", 0, line.index(folder))] if "; " in line[:line.index(folder)] else line
        lines.append(f"{host}: {line}")
    return lines


def launch_there(station: Workstation, local: Path, text: str, passed: Sequence[str] = ()) -> Launched:
    """`text` (the profile `local` frozen) sent to `station`, checked there, then started there detached with
    `passed` (flags of `tuitrain run`)."""
    sent, problem = send_file(station, local.name, text, SEND_SECONDS)
    if problem or sent is None:
        return Launched(problems=(problem or f"{station.host}: the profile could not be sent",))
    checked = run_on(station, ["validate", sent], CHECK_THERE_SECONDS)
    if checked.returncode != 0:
        remove_sent(station, sent, SEND_SECONDS)
        refused = checked.returncode == 1 and re.search(r"^\d+ error\(s\)", checked.stderr, re.MULTILINE)
        if not refused:  # not the profile: ssh, or tuitrain there
            return Launched(problems=(problem_line(station, checked)
                                      or f"{station.host}: `tuitrain validate` failed there",))
        return Launched(problems=(*problems_there(station.host, sent, checked.stderr),
                                  (f"{local}: not started on {station.host}; its data files must be at the same "
                                  "paths there (tuitrain sends the profile, not its data)")))
    started = run_on(station, ["run", sent, "--detach", *passed], START_THERE_SECONDS)
    problem = problem_line(station, started)
    run_id = started.stdout.strip().splitlines()[-1] if started.stdout.strip() else ""
    if problem or not run_id:
        return Launched(problems=(problem or f"{station.host}: `tuitrain run` there printed no run id",),
                        said=started.stderr)
    return Launched(run_id=run_id, said=started.stderr)
