"""tuitrain's callbacks in every `transformers.Trainer` a script makes, with no change to the script.

transformers is not imported here: a finder at the front of `sys.meta_path` waits for the script
to import `transformers.trainer` (directly, or through `from transformers import Trainer`, which
transformers' lazy module turns into that import), lets the usual finder load it, then wraps
`Trainer.__init__` once and steps out of the import system. Subclasses (Seq2SeqTrainer, a script's
own) call it through `super().__init__`, so they are covered too.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

from tuitrain.script.rank import current

TARGET = "transformers.trainer"
_MARK = "__tuitrain_hook__"


def attach(trainer: Any) -> None:
    """The engine's callbacks (the same classes), and the run's output folder from the Trainer's args."""
    state = current()
    if state is None:
        return
    from tuitrain.atomic import write_json_atomic
    from tuitrain.engine.callbacks import CheckpointMarkerCallback, ControlCallback, EventsCallback, HeartbeatCallback
    from tuitrain.engine.rank_io import start_heartbeat

    state.trainer_seen = True
    events = state.event_log()
    trainer.add_callback(CheckpointMarkerCallback(state.run_id, state.world_size))
    if events is not None:
        trainer.add_callback(EventsCallback(events, state.run_id, state.world_size))
    trainer.add_callback(ControlCallback(state.paths, events, state.world_size))
    trainer.add_callback(HeartbeatCallback(start_heartbeat(state.paths.root, state.rank)))  # last: it reads decisions
    if state.rank == 0:
        output_dir = getattr(trainer.args, "output_dir", None)
        if output_dir:
            state.note_output_dir(Path(output_dir).absolute())
        try:
            write_json_atomic(state.paths.training_args, trainer.args.to_dict())
        except (OSError, TypeError, ValueError):
            pass


def patch_trainer(cls: type) -> None:
    original = cls.__init__  # type: ignore[misc]
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if not getattr(self, "_tuitrain_attached", False):  # a subclass's __init__ runs this once
            self._tuitrain_attached = True
            try:
                attach(self)
            except Exception as exc:  # noqa: BLE001 — tuitrain must never be why the user's Trainer fails
                print(f"[tuitrain] could not add tuitrain's callbacks to {type(self).__name__}: "
                      f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    setattr(__init__, _MARK, True)
    cls.__init__ = __init__  # type: ignore[misc]


class TrainerFinder:
    """A meta path finder that only notices `transformers.trainer` being imported."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != TARGET:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            self.remove()
            patch_trainer(module.Trainer)

        loader.exec_module = exec_module
        return spec

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def install() -> None:
    loaded = sys.modules.get(TARGET)
    if loaded is not None:
        patch_trainer(loaded.Trainer)
        return
    sys.meta_path.insert(0, TrainerFinder())
