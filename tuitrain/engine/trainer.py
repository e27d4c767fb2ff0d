"""Our Trainer subclass: only the extras a profile can ask for (weighted loss, perplexity)."""

from __future__ import annotations

import math
from typing import Any

from transformers import Trainer


class EngineTrainer(Trainer):
    def __init__(self, *args: Any, class_weights: list[float] | None = None, report_perplexity: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights
        self.report_perplexity = report_perplexity

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not self.class_weights:
            return super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        import torch

        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        weight = torch.tensor(self.class_weights, dtype=logits.dtype, device=logits.device)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), weight=weight)
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if self.report_perplexity and "eval_loss" in logs:
            logs["eval_perplexity"] = math.exp(min(logs["eval_loss"], 700.0))
        super().log(logs, *args, **kwargs)
