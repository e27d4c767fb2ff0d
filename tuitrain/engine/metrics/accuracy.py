"""Offline `evaluate` module: accuracy (scikit-learn's accuracy_score)."""

from sklearn.metrics import accuracy_score

from tuitrain.engine import metric_base


class Accuracy(metric_base.LabelMetric):
    metric_name = "accuracy"
    averaged = False

    def _score(self, references, predictions, **kwargs):
        return accuracy_score(references, predictions, **kwargs)
