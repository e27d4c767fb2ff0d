"""Trainer callbacks: write events.jsonl (rank 0), seal each checkpoint with tuitrain's marker,
and obey control requests from viewers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from tuitrain.atomic import follow_umask, write_json_atomic
from tuitrain.engine.events import EventLog
from tuitrain.rundir.checkpoints import MARKER, files_with_sizes
from tuitrain.rundir.layout import (
    CONTROL_EVALUATE,
    CONTROL_SAVE,
    CONTROL_STOP,
    PHASE_BETWEEN,
    PHASE_EVALUATING,
    PHASE_FINISHING,
    PHASE_SAVING,
    PHASE_STEP,
    RunPaths,
)

if TYPE_CHECKING:
    from tuitrain.engine.rank_io import Heartbeat


class CheckpointMarkerCallback(TrainerCallback):
    """Writes tuitrain.json into each checkpoint once every rank has written its part: the run
    that wrote it and every file with its size. Written last, it is what makes a checkpoint
    complete (tuitrain.rundir.checkpoints checks it), so a save cut short is never resumed from."""

    def __init__(self, run_id: str, world_size: int) -> None:
        self.run_id = run_id
        self.world_size = world_size

    def on_save(self, args, state, control, **kwargs):
        if self.world_size > 1:
            import torch.distributed as dist

            dist.barrier()  # rank 1's rng_state_1.pth is part of the checkpoint too
        if not state.is_world_process_zero:
            return
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if checkpoint.is_dir():
            follow_umask(checkpoint)
            write_json_atomic(checkpoint / MARKER, {
                "run": self.run_id, "step": state.global_step, "world_size": self.world_size, "time": time.time(),
                "files": files_with_sizes(checkpoint),
            })


class StepsFromProfileCallback(TrainerCallback):
    """A resume keeps the profile's logging, eval and save steps: the Trainer takes them from the
    checkpoint's trainer_state.json (with a warning deep in the log), so `resume --set
    training.save_steps=1000` was silently ignored while plan and the frozen profile said 1000."""

    def on_train_begin(self, args, state, control, **kwargs):
        if state.global_step == 0:
            return
        before = (state.logging_steps, state.eval_steps, state.save_steps)
        state.compute_steps(args, state.max_steps)
        after = (state.logging_steps, state.eval_steps, state.save_steps)
        if after != before and state.is_world_process_zero:
            changed = ", ".join(f"{name} {old} -> {new}" for name, old, new
                                in zip(("logging_steps", "eval_steps", "save_steps"), before, after, strict=True)
                                if old != new)
            print(f"[tuitrain] resume: the profile's steps, not the checkpoint's: {changed}", flush=True)


class EventsCallback(TrainerCallback):
    """Rank 0 turns the Trainer's lifecycle into events.jsonl lines."""

    def __init__(self, events: EventLog, run_id: str, world_size: int) -> None:
        self.events = events
        self.run_id = run_id
        self.world_size = world_size

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.events.write(
                "train_begin",
                state.global_step,
                max_steps=state.max_steps,
                num_train_epochs=state.num_train_epochs,
                world_size=self.world_size,
                mixed_precision=args.mixed_precision,  # what the Trainer gave accelerate: the plan's, checked by tests
            )

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs and not any(k.startswith("eval_") for k in logs):
            self.events.write("log", state.global_step, **logs)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if state.is_world_process_zero:
            self.events.write("evaluate", state.global_step, **(metrics or {}))

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        # absolute: a script's output_dir is often relative to the folder it runs in
        checkpoint = Path(args.output_dir).absolute() / f"checkpoint-{state.global_step}"
        self.events.write("save", state.global_step, checkpoint=str(checkpoint))

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.events.write("train_end", state.global_step, max_steps=state.max_steps)


class ControlCallback(TrainerCallback):
    """Save-now, evaluate-now and stop requests, honoured at the next step end.

    Rank 0 reads the request files; with several ranks its decision is broadcast so that
    every rank saves, evaluates and stops at the same step (a rank that stops alone hangs the rest).
    """

    def __init__(self, paths: RunPaths, events: EventLog | None, world_size: int, can_evaluate: bool = True) -> None:
        self.paths = paths
        self.events = events
        self.world_size = world_size
        self.can_evaluate = can_evaluate  # False without validation data: the Trainer would raise, and the run die
        self._stop_seen = False

    def _requests(self) -> tuple[bool, bool, bool]:
        try:
            names = set(p.name for p in self.paths.control.iterdir())
        except FileNotFoundError:
            return False, False, False
        stop = CONTROL_STOP in names and not self._stop_seen
        return CONTROL_SAVE in names, CONTROL_EVALUATE in names, stop

    def _agreed(self, flags: tuple[bool, bool, bool], device: Any) -> tuple[bool, bool, bool]:
        if self.world_size == 1:
            return flags
        from tuitrain.engine.collective import broadcast_flags

        return broadcast_flags(flags, device)  # type: ignore[return-value]

    def on_step_end(self, args, state, control, **kwargs):
        flags = self._requests() if state.is_world_process_zero else (False, False, False)
        save, evaluate, stop = self._agreed(flags, args.device)
        if save:
            control.should_save = True
            self._consume(CONTROL_SAVE, state)
        if evaluate and not self.can_evaluate:
            if state.is_world_process_zero:
                print("[tuitrain] evaluate-now asked, but this run has no validation data: nothing evaluated, training "
                      "goes on (resume with --set data.validation_file=FILE to evaluate)", flush=True)
            self._consume(CONTROL_EVALUATE, state)
        elif evaluate:
            control.should_evaluate = True
            self._consume(CONTROL_EVALUATE, state)
        if stop:
            self._stop_seen = True
            control.should_save = True
            control.should_training_stop = True
            if self.events is not None:
                self.events.write("control", state.global_step, request=CONTROL_STOP)
        return control

    def _consume(self, name: str, state: Any) -> None:
        if not state.is_world_process_zero:
            return
        try:
            self.paths.control_request(name).unlink()
        except FileNotFoundError:
            pass
        if self.events is not None:
            self.events.write("control", state.global_step, request=name)


class HeartbeatCallback(TrainerCallback):
    """Every rank's progress into its heartbeat (tuitrain.engine.rank_io.Heartbeat). Added last, so at a step's end
    it sees what the Trainer and the control requests decided: an evaluation or a save starts then (the Trainer has
    no callback before either), and a long one is judged as one (tuitrain.runs.view.hang), never as a stuck step.

    The Trainer calls every callback four times a step, each time passing its six objects by name; the per-step
    methods name them as parameters, so a call builds no keyword dict (most of the heartbeat's cost a step)."""

    def __init__(self, heartbeat: Heartbeat) -> None:
        self.heartbeat = heartbeat

    def on_step_begin(self, args, state, control, model=None, processing_class=None, optimizer=None,
                      lr_scheduler=None, train_dataloader=None, eval_dataloader=None, **kwargs):
        self.heartbeat.beat(PHASE_STEP, state.global_step + 1)  # the step it is in

    def on_pre_optimizer_step(self, args, state, control, model=None, processing_class=None, optimizer=None,
                              lr_scheduler=None, train_dataloader=None, eval_dataloader=None, **kwargs):
        pass

    def on_optimizer_step(self, args, state, control, model=None, processing_class=None, optimizer=None,
                          lr_scheduler=None, train_dataloader=None, eval_dataloader=None, **kwargs):
        pass

    def on_substep_end(self, args, state, control, model=None, processing_class=None, optimizer=None,
                       lr_scheduler=None, train_dataloader=None, eval_dataloader=None, **kwargs):
        pass

    def on_step_end(self, args, state, control, model=None, processing_class=None, optimizer=None,
                    lr_scheduler=None, train_dataloader=None, eval_dataloader=None, **kwargs):
        self.heartbeat.beat(PHASE_BETWEEN, state.global_step)
        if control.should_evaluate:
            self.heartbeat.beat(PHASE_EVALUATING, state.global_step)
        elif control.should_save:
            self.heartbeat.beat(PHASE_SAVING, state.global_step)

    def on_prediction_step(self, args, state, control, **kwargs):
        self.heartbeat.beat(PHASE_EVALUATING, state.global_step)  # an evaluation moves batch by batch

    def on_evaluate(self, args, state, control, **kwargs):
        self.heartbeat.beat(PHASE_SAVING if control.should_save else PHASE_BETWEEN, state.global_step)

    def on_save(self, args, state, control, **kwargs):
        self.heartbeat.beat(PHASE_BETWEEN, state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        self.heartbeat.beat(PHASE_FINISHING, state.global_step)
        self.heartbeat.flush()  # the rank may end before the writer's next turn
