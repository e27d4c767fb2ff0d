"""Offline `evaluate` module: matthews_correlation (scikit-learn's matthews_corrcoef)."""

from sklearn.metrics import matthews_corrcoef

from tuitrain.engine import metric_base


class MatthewsCorrelation(metric_base.LabelMetric):
    metric_name = "matthews_correlation"
    averaged = False

    def _score(self, references, predictions, **kwargs):
        return matthews_corrcoef(references, predictions, **kwargs)
