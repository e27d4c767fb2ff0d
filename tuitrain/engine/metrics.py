"""compute_metrics for the Trainer, through `evaluate`, loaded lazily at the first evaluation.

Every metric a profile may name is a module shipped in engine/metrics/ (so evaluation works
offline: `evaluate.load` of a Hub name needs the network), registered in METRICS below with the
task it applies to and the arguments it takes. A new task adds its metrics here (seqeval for
token classification, ROUGE/BLEU for sequence-to-sequence) the same way; a module that wraps a
package (seqeval, rouge_score, sacrebleu: the `tasks` extra) fails in one line when it is missing. Importing `evaluate`
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

        try:
            return evaluate.load(str(METRICS_DIR / f"{name}.py"))
        except ImportError as exc:  # the package the module wraps (the `tasks` extra)
            from tuitrain.engine.errors import EngineError, first_line

            raise EngineError(f"metrics.names: {name} cannot be computed here ({first_line(exc)}); "
                              "pip install 'tuitrain[tasks]'") from exc


def _averaged(num_labels: int) -> dict[str, Any]:
    return {"average": "binary" if num_labels == 2 else "macro"}


METRICS: dict[str, Metric] = {
    "accuracy": Metric("sequence-classification"),
    "f1": Metric("sequence-classification", _averaged),
    "precision": Metric("sequence-classification", _averaged),
    "recall": Metric("sequence-classification", _averaged),
    "matthews_correlation": Metric("sequence-classification"),
    "seqeval": Metric("token-classification"),
    "rouge": Metric("seq2seq"),
    "bleu": Metric("seq2seq"),
}


def _wanted(names: list[str], task: str) -> list[str]:
    return [n for n in names if n in METRICS and METRICS[n].task == task]


def classification_metrics(names: list[str], num_labels: int) -> Callable[[Any], dict[str, float]] | None:
    wanted = _wanted(names, "sequence-classification")
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


def token_classification_metrics(names: list[str], labels: list[str]) -> Callable[[Any], dict[str, float]] | None:
    """Entity precision/recall/F1 and token accuracy of the predicted tags, on each word's first
    sub-token only (the positions whose label is not -100)."""
    if not _wanted(names, "token-classification"):
        return None
    loaded: dict[str, Any] = {}

    def compute(eval_pred: Any) -> dict[str, float]:
        import numpy as np

        logits, label_ids = eval_pred
        if isinstance(logits, tuple):
            logits = logits[0]
        predicted = np.argmax(logits, axis=-1)
        predictions, references = [], []
        for row_pred, row_ref in zip(predicted, label_ids, strict=True):
            kept = row_ref != -100
            predictions.append([labels[i] for i in row_pred[kept]])
            references.append([labels[i] for i in row_ref[kept]])
        if "seqeval" not in loaded:
            loaded["seqeval"] = METRICS["seqeval"].load("seqeval")
        return loaded["seqeval"].compute(predictions=predictions, references=references)

    return compute


def seq2seq_metrics(names: list[str], tokenizer: Any) -> Callable[[Any], dict[str, float]] | None:
    """ROUGE and BLEU of the generated text (predict_with_generate) against the targets."""
    wanted = _wanted(names, "seq2seq")
    if not wanted:
        return None
    loaded: dict[str, Any] = {}

    def compute(eval_pred: Any) -> dict[str, float]:
        import numpy as np

        generated, label_ids = eval_pred
        if isinstance(generated, tuple):
            generated = generated[0]
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        generated = np.where(generated != -100, generated, pad)
        label_ids = np.where(label_ids != -100, label_ids, pad)
        predictions = [t.strip() for t in tokenizer.batch_decode(generated, skip_special_tokens=True)]
        references = [t.strip() for t in tokenizer.batch_decode(label_ids, skip_special_tokens=True)]
        results: dict[str, float] = {}
        for name in wanted:
            if name not in loaded:
                loaded[name] = METRICS[name].load(name)
            results.update(loaded[name].compute(predictions=predictions, references=references))
        results["generated_length"] = float(np.mean([np.count_nonzero(row != pad) for row in generated]))
        return results

    return compute
