"""Offline `evaluate` module: entity precision, recall and F1 of BIO tag sequences, and token accuracy
(the seqeval package, CoNLL-style: an entity counts when its span and type both match)."""

from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score

from tuitrain.engine import metric_base


class Seqeval(metric_base.TagMetric):
    description = "entity precision, recall and F1 (seqeval), and token accuracy"

    def _compute(self, predictions, references):
        return {
            "precision": float(precision_score(references, predictions, zero_division=0)),
            "recall": float(recall_score(references, predictions, zero_division=0)),
            "f1": float(f1_score(references, predictions, zero_division=0)),
            "accuracy": float(accuracy_score(references, predictions)),
        }
