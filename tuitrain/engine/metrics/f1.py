"""Offline `evaluate` module: f1 (scikit-learn's f1_score)."""

from sklearn.metrics import f1_score

from tuitrain.engine import metric_base


class F1(metric_base.LabelMetric):
    metric_name = "f1"
    averaged = True

    def _score(self, references, predictions, **kwargs):
        return f1_score(references, predictions, **kwargs)
