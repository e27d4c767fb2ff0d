"""compute_metrics for the Trainer, through `evaluate`, loaded lazily at the first evaluation.

Every metric a profile may name is a module shipped in engine/metrics/ (so evaluation works
offline: `evaluate.load` of a Hub name needs the network), registered in METRICS below with the
task it applies to and the arguments it takes. A new task adds its metrics here (seqeval for
token classification, ROUGE/BLEU for sequence-to-sequence) the same way. Importing `evaluate`
costs seconds; loading it only when the Trainer first evaluates keeps it off the path to the first
training step. `perplexity` is not an `evaluate` module: the Trainer reports it from eval_loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

METRICS_DIR = Path(__file__).parent / "metrics"


@dataclass(frozen=True)
class Metric:
    """A shipped `evaluate` module: for which task, and its compute() arguments for a number of labels."""

    task: str
    arguments: Callable[[int], dict[str, Any]] = lambda num_labels: {}

    def load(self, name: str) -> Any:
        import evaluate

        return evaluate.load(str(METRICS_DIR / f"{name}.py"))


def _averaged(num_labels: int) -> dict[str, Any]:
    return {"average": "binary" if num_labels == 2 else "macro"}


METRICS: dict[str, Metric] = {
    "accuracy": Metric("sequence-classification"),
    "f1": Metric("sequence-classification", _averaged),
    "precision": Metric("sequence-classification", _averaged),
    "recall": Metric("sequence-classification", _averaged),
    "matthews_correlation": Metric("sequence-classification"),
}


def classification_metrics(names: list[str], num_labels: int) -> Callable[[Any], dict[str, float]] | None:
    wanted = [n for n in names if n in METRICS and METRICS[n].task == "sequence-classification"]
    if not wanted:
        return None
    loaded: dict[str, Any] = {}

    def compute(eval_pred: Any) -> dict[str, float]:
        import numpy as np

        logits, labels = eval_pred
        if isinstance(logits, tuple):
            logits = logits[0]
        predictions = np.argmax(logits, axis=-1)
        results: dict[str, float] = {}
        for name in wanted:
            if name not in loaded:
                loaded[name] = METRICS[name].load(name)
            results.update(loaded[name].compute(predictions=predictions, references=labels,
                                                **METRICS[name].arguments(num_labels)))
        return results

    return compute
