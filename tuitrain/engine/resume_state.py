"""A resumed rank's optimizer as its profile says, over what the checkpoint restored (`runs.start.resume_rule` decides
which keys a resume may change; this applies them).

torch's `Optimizer.load_state_dict` replaces each parameter group's hyperparameters with the saved ones (lr,
initial_lr, weight_decay, betas, eps), and `LambdaLR.load_state_dict` the base rates (`base_lrs`), keeping the
schedule function built from the profile. So after the Trainer's restore the profile's values are put back: the base
rate of each group (its current rate scaled alike, so the schedule goes on from the checkpoint's step with the new
base) and its weight decay, betas and eps. The moments, step counts and the schedule's position stay the
checkpoint's. Pure over lists of dicts: no torch import here."""

from __future__ import annotations

from typing import Any

# a group's hyperparameter -> the TrainingArguments keys that set it, for the rank log's line
GROUP_KEYS = {"weight_decay": "weight_decay", "betas": "adam_beta1/adam_beta2", "eps": "adam_epsilon"}


def settings_of(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The groups' hyperparameters (everything but their parameters), taken before the restore."""
    return [{key: value for key, value in group.items() if key not in ("params", "param_names")} for group in groups]


def _number(found: Any) -> float | None:
    try:
        return float(found)
    except (TypeError, ValueError):
        return None


def keep_profile_settings(groups: list[dict[str, Any]], fresh: list[dict[str, Any]], scheduler: Any) -> list[str]:
    """Put back into the restored `groups` (an optimizer's param_groups) the profile's settings taken before the
    restore (`fresh`, from `settings_of`), and the base rates into `scheduler` (anything with `base_lrs`). Returns
    what changed, one "learning_rate 0.003 -> 0.001" each."""
    if len(groups) != len(fresh):
        return []
    changes: dict[str, str] = {}
    base_lrs = getattr(scheduler, "base_lrs", None)
    for index, (group, profile) in enumerate(zip(groups, fresh, strict=True)):
        new, old = _number(profile.get("initial_lr", profile.get("lr"))), _number(group.get("initial_lr"))
        if new is not None and old is not None and new != old and base_lrs is not None and index < len(base_lrs):
            group["lr"] = group["lr"] * (new / old) if old else new
            group["initial_lr"] = new
            base_lrs[index] = new
            changes.setdefault("learning_rate", f"learning_rate {old:g} -> {new:g}")
        for key, name in GROUP_KEYS.items():
            if key in profile and key in group and group[key] != profile[key]:
                changes.setdefault(f"{name} {group[key]}", f"{name} {group[key]} -> {profile[key]}")
                group[key] = profile[key]
    if "learning_rate" in changes and hasattr(scheduler, "_last_lr"):
        scheduler._last_lr = [group["lr"] for group in groups]  # what the Trainer logs until the next step
    return list(changes.values())
