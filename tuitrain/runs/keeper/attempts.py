"""A restarted run's attempts, in its own run directory: what of one attempt is kept apart when the next begins, the
checkpoint the next starts from, and what it trains with (the keeper's restart, tuitrain.runs.keeper.supervisor; the
rule that decides is tuitrain.runs.keeper.restart_rule).

Attempt N's own files move to attempts/N/ as a whole (`keep_attempt`): logs/ (rank logs, line times, the launcher
log, other machines' logs, NCCL dumps), ranks/, heartbeats/ and stacks/, so the next attempt starts with none of its
rank records, beats or stacks, and viewers read a restarted run as any other. events.jsonl and the samples stay: one
curve over every attempt, cut back to the restart's step by its `restart` event (tuitrain.rundir.events).
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from pathlib import Path
from typing import Any

from tuitrain.atomic import write_text_atomic
from tuitrain.rundir.checkpoints import latest_complete, run_checkpoints
from tuitrain.rundir.layout import CONTROL_ENDING, RunPaths
from tuitrain.rundir.record import MachineEntry, RestartRecord, RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.restart_rule import ACCUMULATION_KEY, BATCH_KEY, RestartSettings

KEPT = ("logs", "ranks", "heartbeats", "stacks")  # an attempt's own folders


def restart_settings(paths: RunPaths) -> RestartSettings:
    """`[run]`'s restart keys of the run's frozen profile (the schema's defaults for what it leaves out, or when it
    cannot be read: validation checked it before the run started)."""
    from tuitrain.profile.schema import SCHEMA, KeySpec

    try:
        with open(paths.profile, "rb") as handle:
            run = tomllib.load(handle).get("run") or {}
    except (OSError, tomllib.TOMLDecodeError):
        run = {}

    def value(key: str) -> Any:
        spec = SCHEMA["run"][key]
        assert isinstance(spec, KeySpec)
        found = run.get(key)
        ok = found is not None and not isinstance(found, bool) and (spec.choices is None or found in spec.choices)
        return found if ok else spec.default

    return RestartSettings(restarts=int(value("restarts")), backoff=float(value("restart_backoff")),
                           backoff_max=float(value("restart_backoff_max")), on_hang=str(value("on_hang")),
                           on_oom=str(value("on_oom")))


def counted_restarts(record: RunRecord) -> int:
    """The restarts so far that took one of `[run] restarts` (a split batch takes none)."""
    return sum(1 for entry in Fields(record).restarts if entry.get("counted", True))


def first_start(record: RunRecord) -> str | None:
    """The checkpoint the run's first attempt began from (a resumed run's parent's), or None: the beginning."""
    run = Fields(record)
    return run.restarts[0].get("began_from") if run.restarts else run.resume_from


def restart_checkpoint(record: RunRecord) -> tuple[str | None, list[str]]:
    """The checkpoint a restart begins from: the run's latest complete one, else where its first attempt began; and
    the newer ones passed over as damaged, each with why (`rundir.checkpoints`: a save cut short, a file truncated)."""
    checkpoints = run_checkpoints(record)
    chosen = latest_complete(checkpoints)
    skipped = [f"{c.path.name} ({c.why})" for c in checkpoints
               if not c.complete and (chosen is None or c.step > chosen.step)]
    return (str(chosen.path) if chosen is not None else first_start(record)), skipped


def progressed(record: RunRecord, checkpoint: str | None) -> bool | None:
    """Whether the attempt now ended wrote a complete checkpoint newer than the one it began from; None for an
    attempt no counted restart began (the first, or one a split batch began: a smaller batch is a new try)."""
    run = Fields(record)
    if not run.restarts or not run.restarts[-1].get("counted", True):
        return None
    return checkpoint is not None and checkpoint != run.resume_from


def checkpoint_step(checkpoint: str | None) -> int:
    """checkpoint-20 → 20 (0 for the beginning, or a folder of another name)."""
    tail = Path(checkpoint).name.rsplit("-", 1)[-1] if checkpoint else ""
    return int(tail) if tail.isdecimal() else 0


def keep_attempt(paths: RunPaths, number: int) -> RunPaths:
    """Attempt `number`'s own folders moved into attempts/N/ and made again empty (see the module's docstring); the
    control mark of its teardown removed. A process still writing a moved log writes on into the moved file."""
    kept = paths.attempt(number)
    kept.root.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        here = paths.root / name
        if here.is_dir():
            os.replace(here, kept.root / name)
        here.mkdir(exist_ok=True)
    paths.control_request(CONTROL_ENDING).unlink(missing_ok=True)
    return kept


def training_batch(paths: RunPaths) -> tuple[int, int] | None:
    """(per_device_train_batch_size, gradient_accumulation_steps) of the frozen profile, TrainingArguments' defaults
    for what it leaves out; None when it cannot be read."""
    from tuitrain.runs.start.resume_rule import value

    try:
        with open(paths.profile, "rb") as handle:
            data = tomllib.load(handle)
        return int(value(data, f"training.{BATCH_KEY}") or 8), int(value(data, f"training.{ACCUMULATION_KEY}") or 1)
    except (OSError, tomllib.TOMLDecodeError, TypeError, ValueError):
        return None


def split_profile(paths: RunPaths, kept: RunPaths, batch: int, accumulation: int) -> None:
    """The frozen profile with [training]'s batch and accumulation set to the split (and DeepSpeed's accumulation
    where the profile sets it), the one it replaces kept in attempts/N/profile.toml."""
    import tomli_w

    text = paths.profile.read_text(encoding="utf-8")
    write_text_atomic(kept.profile, text)
    data = tomllib.loads(text)
    training = data.setdefault("training", {})
    before = training.get(ACCUMULATION_KEY) or 1
    training[BATCH_KEY], training[ACCUMULATION_KEY] = batch, accumulation
    deepspeed = (data.get("distributed") or {}).get("deepspeed")
    if isinstance(deepspeed, dict) and isinstance(deepspeed.get(ACCUMULATION_KEY), int):
        deepspeed[ACCUMULATION_KEY] = deepspeed[ACCUMULATION_KEY] * accumulation // before
    write_text_atomic(paths.profile, tomli_w.dumps(data))


def restart_event(paths: RunPaths, entry: RestartRecord) -> None:
    """A `restart` line in events.jsonl (one write, O_APPEND, as the ranks write theirs): the curves drop what the
    attempt before trained past the checkpoint the new one begins from."""
    line = json.dumps({"event": "restart", "time": time.time(), "step": checkpoint_step(entry.get("resume_from")),
                       "attempt": entry.get("attempt"), "resume_from": entry.get("resume_from")}) + "\n"
    fd = os.open(paths.events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _frozen(paths: RunPaths) -> dict[str, Any]:
    try:
        with open(paths.profile, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def attempt_argv(paths: RunPaths, argv: list[str], before: str | None, after: str | None,
                 machines: int = 1) -> tuple[list[str], bool]:
    """The launch command of the next attempt: a [script] told `after` in place of `before` (as a resume tells it,
    tuitrain.launch.script); and whether the port was left out of it, to be picked afresh: on one machine, a port the
    launcher picked (the profile names none). Several machines keep theirs: they all meet there (a Slurm job's port
    is its job's)."""
    from tuitrain.launch.script import argv_resuming

    data = _frozen(paths)
    script = data.get("script")
    out = argv_resuming(argv, script, before, after) if isinstance(script, dict) and argv else list(argv)
    named = (data.get("distributed") or {}).get("main_process_port") is not None
    if machines > 1 or named or "--main_process_port" not in out:
        return out, False
    at = out.index("--main_process_port")
    del out[at:at + 2]
    return out, True


def attempt_node_dir(node_dir: str, number: int) -> str:
    """A machine's node folder for attempt N (a node agent makes its folder afresh: machine-1, machine-1-attempt-2)."""
    base = node_dir.rsplit("-attempt-", 1)[0] if "-attempt-" in node_dir else node_dir
    return base if number <= 1 else f"{base}-attempt-{number}"


def in_folder(argv: list[str], old: str, new: str) -> list[str]:
    """`argv` with each path in folder `old` (its accelerate.yaml, the engine's run directory) moved to `new`."""
    return [new + arg[len(old):] if arg == old or arg.startswith(old.rstrip("/") + "/") else arg for arg in argv]


def attempt_machines(paths: RunPaths, machines: list[MachineEntry], before: str | None, after: str | None,
                     number: int) -> list[MachineEntry]:
    """Each machine of a run over SSH, for attempt N: its own node folder, and its command pointed there (else its
    ranks write into the attempt before's folder, whose files no longer travel home) and told the checkpoint (a
    [script])."""
    from tuitrain.launch.script import argv_resuming

    script = _frozen(paths).get("script")
    out: list[MachineEntry] = []
    for machine in machines:
        folder = attempt_node_dir(machine["node_dir"], number)
        argv = in_folder(list(machine.get("argv") or []), machine["node_dir"], folder)
        if isinstance(script, dict):
            argv = argv_resuming(argv, script, before, after)
        out.append({**machine, "argv": argv, "node_dir": folder})
    return out
