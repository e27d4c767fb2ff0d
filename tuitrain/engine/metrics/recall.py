"""Offline `evaluate` module: recall (scikit-learn's recall_score)."""

from sklearn.metrics import recall_score

from tuitrain.engine import metric_base


class Recall(metric_base.LabelMetric):
    metric_name = "recall"
    averaged = True

    def _score(self, references, predictions, **kwargs):
        return recall_score(references, predictions, **kwargs)
