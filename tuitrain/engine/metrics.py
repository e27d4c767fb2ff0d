"""compute_metrics for the Trainer, through `evaluate`, loaded lazily at the first evaluation.

Importing `evaluate` costs seconds; loading it only when the Trainer first evaluates keeps it
off the path to the first training step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

LOCAL_METRICS = Path(__file__).parent / "metrics"
LABEL_METRICS = ("accuracy", "f1", "precision", "recall", "matthews_correlation")


def _hub_reachable() -> bool:
    return not any(os.environ.get(v, "") in ("1", "true", "TRUE", "yes") for v in ("HF_HUB_OFFLINE", "HF_EVALUATE_OFFLINE"))


def load_metric(name: str) -> Any:
    """The local module first: it computes the same numbers without a network round trip.
    A name we do not ship goes to the Hub (when reachable)."""
    import evaluate

    local = LOCAL_METRICS / f"{name}.py"
    if local.exists():
        return evaluate.load(str(local))
    if not _hub_reachable():
        raise RuntimeError(f"metric {name!r} is not shipped with tuitrain and the Hub is offline (HF_HUB_OFFLINE=1)")
    return evaluate.load(name)


def classification_metrics(names: list[str], num_labels: int) -> Callable[[Any], dict[str, float]] | None:
    wanted = [n for n in names if n in LABEL_METRICS]
    if not wanted:
        return None
    loaded: dict[str, Any] = {}
    average = "binary" if num_labels == 2 else "macro"

    def compute(eval_pred: Any) -> dict[str, float]:
        import numpy as np

        logits, labels = eval_pred
        if isinstance(logits, tuple):
            logits = logits[0]
        predictions = np.argmax(logits, axis=-1)
        results: dict[str, float] = {}
        for name in wanted:
            if name not in loaded:
                loaded[name] = load_metric(name)
            kwargs = {"average": average} if name in ("f1", "precision", "recall") else {}
            results.update(loaded[name].compute(predictions=predictions, references=labels, **kwargs))
        return results

    return compute
