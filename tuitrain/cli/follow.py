"""Following a run in the foreground: progress lines from events.jsonl until the run ends."""

from __future__ import annotations

import json
import sys
import time

from tuitrain.humanize import number
from tuitrain.runs.control import ControlError, request
from tuitrain.runs.layout import RunPaths
from tuitrain.runs.record import FINAL_STATUSES, read_record
from tuitrain.runs.summary import last_traceback, supervisor_lost

EXIT_CODES = {"finished": 0, "failed": 1, "stopped": 2}


def describe_event(event: dict, max_steps: int | None) -> str | None:
    kind, step = event.get("event"), event.get("step")
    where = f"step {step}/{max_steps}" if max_steps else f"step {step}"
    if kind == "train_begin":
        return f"training: {event.get('max_steps')} steps on {event.get('world_size', 1)} process(es)"
    if kind == "log" and "loss" in event:
        return f"{where}  loss {number(event['loss'])}  lr {number(event.get('learning_rate'), 3)}  epoch {number(event.get('epoch'), 3)}"
    if kind == "evaluate":
        metrics = "  ".join(f"{k[5:]} {number(v)}" for k, v in event.items() if k.startswith("eval_") and not k.endswith(("runtime", "per_second")))
        return f"{where}  eval  {metrics}"
    if kind == "save":
        return f"{where}  saved {event.get('checkpoint')}"
    if kind == "error":
        return f"rank {event.get('rank')} error: {event.get('message')}"
    if kind == "control":
        return f"{where}  honoured request: {event.get('request')}"
    return None


def follow_run(paths: RunPaths, out=sys.stdout, poll: float = 0.3) -> int:
    """Print progress until the run ends; Ctrl-C asks for a graceful stop, a second one kills."""
    offset = 0
    max_steps = None
    interrupts = 0
    print(f"run {paths.id}  (logs: {paths.logs})", file=out, flush=True)
    while True:
        try:
            with open(paths.events, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except FileNotFoundError:
            chunk = b""
        complete = chunk[: chunk.rfind(b"\n") + 1]
        offset += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "train_begin":
                max_steps = event.get("max_steps")
            text = describe_event(event, max_steps)
            if text:
                print(text, file=out, flush=True)
        record = read_record(paths)
        if record["status"] in FINAL_STATUSES and not complete:
            return report_end(paths, record, out)
        if supervisor_lost(record):
            print(f"the supervisor of run {paths.id} is gone; the run's state is unknown", file=out)
            return 1
        try:
            time.sleep(poll)
        except KeyboardInterrupt:
            interrupts += 1
            what = "stop" if interrupts == 1 else "terminate"
            try:
                request(paths, what)
            except ControlError:
                continue
            if interrupts == 1:
                print("\nstopping: the run saves a checkpoint at the next step end (Ctrl-C again to kill it now)", file=out, flush=True)
            else:
                print("\nkilling the run now", file=out, flush=True)


def report_end(paths: RunPaths, record: dict, out) -> int:
    status = record["status"]
    line = f"run {paths.id} {status}"
    if status == "failed":
        rank = record.get("failed_rank")
        line += f" (rank {rank})" if rank is not None else ""
        print(line, file=out)
        log = paths.rank_log(rank) if rank is not None else paths.launcher_log
        for tb in last_traceback(log):
            print(f"  {tb}", file=out)
        print(f"full log: {log}", file=out, flush=True)
    else:
        print(line + f"; checkpoints in {record.get('output_dir')}", file=out, flush=True)
    return EXIT_CODES.get(status, 1)
