"""GaLore / APOLLO optimizers (training.optim = "galore_adamw", ...): the layers they project,
checked against the model before training.

transformers projects the linear layers that training.optim_target_modules names (a name, a part
of one, or a regex; or "all-linear"), and fails only when none matches, deep in the first step;
a name that matches nothing beside one that does is dropped without a word. Each name is checked
here, when the rank has built the model, and a miss is one line listing the model's linear layers.
"""

from __future__ import annotations

from typing import Any

from tuitrain.engine.errors import EngineError

LOW_RANK_PREFIXES = ("galore_", "apollo_")


def linear_layers(model: Any) -> list[str]:
    import torch

    return [name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]


def check_optim_targets(model: Any, optim: str, targets: Any) -> None:
    if not optim.startswith(LOW_RANK_PREFIXES) or targets is None:
        return
    if isinstance(targets, str) and targets.replace("_", "-") == "all-linear":
        return
    from transformers.trainer_utils import check_target_module_exists

    layers = linear_layers(model)
    short = sorted({name.rsplit(".", 1)[-1] for name in layers})
    for target in [targets] if isinstance(targets, str) else list(targets):
        pattern = target if isinstance(targets, str) else [target]
        if not any(check_target_module_exists(pattern, name) for name in layers):
            raise EngineError(f"training.optim_target_modules: {target!r} matches none of this model's linear layers "
                              f"(their names end in: {', '.join(short)}); {optim} projects only linear layers: "
                              "name some (a name, a part of one, or a regex), or \"all-linear\"")
