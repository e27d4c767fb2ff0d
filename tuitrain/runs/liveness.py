"""Whether a run is still alive, and what to record when it is not: the one place that decides
that a run is `lost` (its supervisor gone without recording an end)."""

from __future__ import annotations

import os
import time

import psutil

from tuitrain.rundir.kind import supervised_elsewhere
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.process_tree import find_recorded
from tuitrain.rundir.record import RunRecord, Status, has_ended, record_end
from tuitrain.rundir.run import Fields, recorded_processes


def supervisor_gone(record: RunRecord) -> bool:
    """The record says the run goes on, but the supervisor that would end it is not there."""
    if has_ended(record) or supervised_elsewhere(record):
        return False
    entry = recorded_processes(record).get("supervisor")
    return entry is not None and find_recorded(entry) is None


def effective_status(record: RunRecord) -> Status:
    """The record's status, or `lost` when its supervisor is gone without an end."""
    return "lost" if supervisor_gone(record) else Fields(record).status


def live_processes(record: RunRecord) -> dict[str, psutil.Process]:
    """The run's recorded processes that are still running (each checked by pid and start time)."""
    found = {role: find_recorded(entry) for role, entry in recorded_processes(record).items()}
    return {role: proc for role, proc in found.items() if proc is not None}


def last_activity(paths: RunPaths) -> float:
    """When the run last wrote anything (its logs or events): a lost run's end."""
    times = []
    for path in [paths.events, *(paths.logs.glob("*.log") if paths.logs.is_dir() else [])]:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            pass
    return max(times) if times else time.time()


def settle_lost(paths: RunPaths, record: RunRecord) -> RunRecord:
    """Record `lost` for a run whose supervisor and processes are all gone, so it shows as ended
    (with a fixed duration) and can be resumed. Any viewer may call this; it changes nothing for
    a live run, and nothing while one of its processes still runs."""
    if not supervisor_gone(record) or live_processes(record):
        return record
    supervisor = recorded_processes(record)["supervisor"]
    pid = supervisor.get("pid") if isinstance(supervisor, dict) else supervisor
    end: RunRecord = {"status": "lost", "ended": last_activity(paths),
           "error": f"its supervisor (pid {pid}) ended without recording an end (killed, or the machine restarted)"}
    try:
        ended = record_end(paths, **end)
    except OSError:  # another user's run, a read-only disk: show what would be recorded
        return {**record, **end}
    if ended.get("status") == "lost":  # its supervisor cannot send word of its end: a detached sender does, once
        from tuitrain.runs.lost_word import send_lost_word

        send_lost_word(paths.root)
    return ended
