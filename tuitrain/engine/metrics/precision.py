"""Offline `evaluate` module: precision (scikit-learn's precision_score)."""

from sklearn.metrics import precision_score

from tuitrain.engine import metric_base


class Precision(metric_base.LabelMetric):
    metric_name = "precision"
    averaged = True

    def _score(self, references, predictions, **kwargs):
        return precision_score(references, predictions, **kwargs)
