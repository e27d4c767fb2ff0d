"""What a resume's overrides may change of the state its checkpoint restores: honoured, or refused in one line.

A checkpoint holds the optimizer's state with its hyperparameters (optimizer.pt), the scheduler's base rates and step
(scheduler.pt), every rank's RNG state, and, by its step, the run's place in its data. The Trainer restores them over
what the profile says, so without this rule an override of a key they hold is recorded (training_args.json, `diff`)
and silently not trained with. Each such key is one of:

- honoured: the optimizer's hyperparameters (`HONOURED`). The engine puts the profile's values back after the restore
  (`engine.resume_state`): the schedule goes on from the checkpoint's step with the new base rate. The schedule's
  shape (lr_scheduler_type, warmup_steps, warmup_ratio, max_steps) needs nothing: the Trainer keeps the schedule
  function it builds from the profile and restores only where it is, so it is honoured already.
- refused (`refusal`), with why and what to do: another optimizer (`OPTIMIZER`: its state would be loaded into
  another kind); a switch to or from reduce_lr_on_plateau (another kind of scheduler state, and no base rate to scale);
  what places the run in its data (`DATA_ORDER`: the Trainer skips the batches already trained, counted and shuffled
  as when saved: another batch size or seed would train some samples twice and others never; world size is
  `from_profile.world_refusal`'s); and, under DeepSpeed, which restores its own optimizer, the hyperparameters too.

A run of the user's own script ([script]) resumes as its script does: nothing here applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HONOURED = ("training.learning_rate", "training.weight_decay", "training.adam_beta1", "training.adam_beta2",
            "training.adam_epsilon")
OPTIMIZER = ("training.optim", "training.optim_args", "training.optim_target_modules")
DATA_ORDER = ("training.per_device_train_batch_size", "training.gradient_accumulation_steps", "run.seed",
              "training.data_seed")
PLATEAU = "reduce_lr_on_plateau"


def _default(key: str) -> Any:
    section, leaf = key.split(".", 1)
    if section == "run":
        from tuitrain.profile.schema import SCHEMA, KeySpec

        spec = SCHEMA["run"].get(leaf)
        return spec.default if isinstance(spec, KeySpec) else None
    from tuitrain.profile.training_args import training_args_fields

    fields = training_args_fields() or {}
    return fields[leaf].default if leaf in fields else None


def value(data: Mapping[str, Any], key: str) -> Any:
    """`key`'s value as a run gets it: the profile's (overrides applied), else its default."""
    section, leaf = key.split(".", 1)
    table = data.get(section)
    if isinstance(table, Mapping) and leaf in table:
        return table[leaf]
    return _default(key)


def _changed(before: Mapping[str, Any], after: Mapping[str, Any], keys: tuple[str, ...]) -> list[tuple[str, Any, Any]]:
    return [(key, value(before, key), value(after, key)) for key in keys if value(before, key) != value(after, key)]


def _shown(found: Any) -> str:
    return "unset" if found is None else repr(found) if isinstance(found, str) else str(found)


def _set(key: str, found: Any) -> str:
    return f"--set {key}=" if found is None else f"--set {key}={found}"


def refusal(before: Mapping[str, Any], after: Mapping[str, Any], checkpoint: str) -> str | None:
    """Why the profile `after` (overrides applied) cannot continue `checkpoint`, written under `before` (the parent's
    frozen profile): a key the restored state holds, changed, that the resumed run could not honour. None when it
    can."""
    if after.get("script") or before.get("script"):
        return None
    for key, was, now in _changed(before, after, OPTIMIZER):
        return (f"{key} = {_shown(now)}: {checkpoint}'s optimizer state is {_shown(was)}'s, and a resume loads it into "
                f"the optimizer it builds; resume with {_set(key, was)}, or start a new run from its weights")
    for key, was, now in _changed(before, after, DATA_ORDER):
        return (f"{key} = {_shown(now)}: {checkpoint} was trained with {_shown(was)}, and a resume finds its place in "
                "the data by skipping the batches already trained, counted and shuffled as when saved (another value "
                f"trains some samples twice and others never); resume with {_set(key, was)}, or start a new run")
    schedule = _changed(before, after, ("training.lr_scheduler_type",))
    if schedule and PLATEAU in (schedule[0][1], schedule[0][2]):
        _key, was, now = schedule[0]
        return (f"training.lr_scheduler_type = {_shown(now)}: {checkpoint} holds a {_shown(was)} scheduler's state, "
                f"which another kind cannot continue; resume with {_set('training.lr_scheduler_type', was)}")
    rates = _changed(before, after, HONOURED)
    if rates and value(after, "training.lr_scheduler_type") == PLATEAU:
        key, was, now = rates[0]
        return (f"{key} = {_shown(now)}: {checkpoint}'s reduce_lr_on_plateau scheduler goes on from the rate it reached "
                f"and keeps no base rate to change; resume with {_set(key, was)}")
    strategy = (after.get("distributed") or {}).get("strategy")
    if rates and strategy == "deepspeed":
        key, was, now = rates[0]
        return (f"{key} = {_shown(now)}: DeepSpeed restores {checkpoint}'s optimizer with its own settings "
                f"({_shown(was)}); resume with {_set(key, was)}")
    return None


def honoured(before: Mapping[str, Any], after: Mapping[str, Any], checkpoint: str, step: int) -> str | None:
    """The one line a resume says of the restored settings it changes (`refusal` found none it cannot), or None."""
    if after.get("script") or before.get("script"):
        return None
    rates = _changed(before, after, HONOURED)
    if not rates:
        return None
    changes = ", ".join(f"{key.split('.', 1)[1]} {_shown(was)} -> {_shown(now)}" for key, was, now in rates)
    base = " (the schedule goes on from there with the new base rate)" if rates[0][0] == "training.learning_rate" else ""
    return f"from step {step}, the profile's optimizer settings, not {checkpoint}'s: {changes}{base}"
