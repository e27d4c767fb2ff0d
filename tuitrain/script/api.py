"""`tuitrain.report(step, **metrics)` and `tuitrain.saved(path, step)`: a script that trains without
`transformers.Trainer` (a hand-written accelerate loop) tells the run what it measured and where it
saved, and hears save-now, evaluate-now and stop. Outside a tuitrain run both do nothing, so a
script that uses them still runs with plain `python` or `accelerate launch`.

Importable without the ML stack: torch is used only when the script has already imported
torch.distributed and started a process group (to give every rank rank 0's decision).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from tuitrain.script.rank import RankState, current


class Requests(NamedTuple):
    """What the run asks of the script at this step: save a checkpoint, evaluate, stop (after saving)."""

    save: bool = False
    evaluate: bool = False
    stop: bool = False


NOTHING = Requests()


def _distributed() -> Any:
    """torch.distributed when the script has a process group up, else None (nothing is imported)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return None
    return dist


def _agreed(flags: tuple[bool, bool, bool]) -> tuple[bool, bool, bool]:
    """Rank 0's decision on every rank (a rank that saves or stops alone hangs the others)."""
    if _distributed() is None:
        return flags
    from tuitrain.engine.collective import broadcast_flags  # torch is loaded already: the script's group is up

    save, evaluate, stop = broadcast_flags(flags)
    return save, evaluate, stop


def _take_requests(state: RankState, step: int) -> tuple[bool, bool, bool]:
    """Rank 0 reads control/: save-now and evaluate-now are taken (removed), stop stays (the supervisor reads it)."""
    from tuitrain.rundir.layout import CONTROL_EVALUATE, CONTROL_SAVE, CONTROL_STOP

    try:
        names = {p.name for p in state.paths.control.iterdir()}
    except FileNotFoundError:
        return False, False, False
    events = state.event_log()
    for name in (CONTROL_SAVE, CONTROL_EVALUATE):
        if name in names:
            state.paths.control_request(name).unlink(missing_ok=True)
            events.write("control", step, request=name)
    stop = CONTROL_STOP in names
    if stop and not state.stop_seen:
        state.stop_seen = True
        events.write("control", step, request=CONTROL_STOP)
    return CONTROL_SAVE in names, CONTROL_EVALUATE in names, stop


def _beat(state: RankState, step: int) -> None:
    """A report is a step's end: the rank's heartbeat moves (tuitrain.runs.view.hang reads it)."""
    from tuitrain.engine.rank_io import start_heartbeat
    from tuitrain.rundir.layout import PHASE_BETWEEN

    start_heartbeat(state.paths.root, state.rank).beat(PHASE_BETWEEN, step)


def report(step: int, **metrics: Any) -> Requests:
    """Record this step's metrics (rank 0's: `eval_*` ones as an evaluation, the others as a log
    line; `max_steps=N` sets the run's total) and return what the run asks for now. Call it on every
    rank, at the same steps."""
    state = current()
    if state is None:
        return NOTHING
    state.reported = True
    _beat(state, step)
    max_steps = metrics.pop("max_steps", None)
    flags = (False, False, False)
    if state.rank == 0:
        events = state.event_log()
        if not state.began:
            state.began = True
            events.write("train_begin", step, max_steps=max_steps, world_size=state.world_size)
        logged = {k: v for k, v in metrics.items() if not k.startswith("eval_")}
        evaluated = {k: v for k, v in metrics.items() if k.startswith("eval_")}
        if logged:
            events.write("log", step, **logged)
        if evaluated:
            events.write("evaluate", step, **evaluated)
        flags = _take_requests(state, step)
    return Requests(*_agreed(flags))


def saved(path: str | Path, step: int) -> None:
    """Tell the run that a checkpoint of `step` is complete in `path` (name it OUTPUT/checkpoint-STEP:
    its parent becomes the run's output folder). Call it on every rank once each has written its
    part; rank 0 seals it with tuitrain's marker, so `tuitrain resume` can pick it."""
    state = current()
    if state is None:
        return
    state.reported = True
    dist = _distributed()
    if dist is not None:
        dist.barrier()  # every rank's files are written before rank 0 lists them
    if state.rank != 0:
        return
    from tuitrain.atomic import write_json_atomic
    from tuitrain.rundir.checkpoints import MARKER, files_with_sizes

    folder = Path(path).absolute()
    if not folder.is_dir():
        print(f"[tuitrain] saved({str(path)!r}, {step}): no such folder; nothing recorded", file=sys.stderr, flush=True)
        return
    if folder.name != f"checkpoint-{step}":
        print(f"[tuitrain] saved({str(path)!r}, {step}): tuitrain lists checkpoints named checkpoint-{step}",
              file=sys.stderr, flush=True)
    write_json_atomic(folder / MARKER, {"run": state.run_id, "step": step, "world_size": state.world_size,
                                        "time": time.time(), "files": files_with_sizes(folder), "kind": "saved"})
    state.event_log().write("save", step, checkpoint=str(folder))
    state.note_output_dir(folder.parent)
